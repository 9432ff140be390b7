package studentloop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/grader"
)

// TestHints_CoverEveryCheck: every check of the catalogue has its three
// tiers in its stage's hint file, every stage has a stage hint, and no
// hint names a check the catalogue does not have. A new check without
// hints, or a hint file with two tiers, fails.
func TestHints_CoverEveryCheck(t *testing.T) {
	all := map[int]Hints{}
	for n := 0; n < Stages; n++ {
		h, err := LoadHints("..", n)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := h["stage"]; !ok {
			t.Errorf("%s has no stage hint", HintsPath(n))
		}
		all[n] = h
	}
	known := map[string]bool{"stage": true}
	for _, c := range grader.Catalogue() {
		known[c.ID] = true
		if _, ok := all[c.Stage][c.ID]; !ok {
			t.Errorf("%s has no hint for %s", HintsPath(c.Stage), c.ID)
		}
	}
	for n, h := range all {
		for topic := range h {
			if !known[topic] {
				t.Errorf("%s has a hint for %s, which is no check", HintsPath(n), topic)
			}
		}
	}
}

// TestHints_NeverHandOverCode: a hint is words; a Go statement or a SQL
// statement in one is a solution handed over.
func TestHints_NeverHandOverCode(t *testing.T) {
	for n := 0; n < Stages; n++ {
		h, err := LoadHints("..", n)
		if err != nil {
			t.Fatal(err)
		}
		for topic, tiers := range h {
			for i, tier := range tiers {
				for _, code := range []string{":=", "func ", "if err != nil {", "INSERT INTO", "UPDATE idempotency_keys SET", "DELETE FROM"} {
					if strings.Contains(tier, code) {
						t.Errorf("%s %s tier %d holds code (%q)", HintsPath(n), topic, i+1, code)
					}
				}
			}
		}
	}
}

func TestLoadHints_RejectsAMissingTier(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs", "hints"), 0o755)
	os.WriteFile(filepath.Join(root, HintsPath(1)), []byte("## S1.x\n1. idea\n2. where\n"), 0o644)
	if _, err := LoadHints(root, 1); err == nil || !strings.Contains(err.Error(), "2 tiers") {
		t.Fatalf("err %v", err)
	}
}
