package grader_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/targets"
)

// TestCatalogueIsDocumented keeps docs/grader.md's table in step with the
// checks: every check's ID and claim are there, and no ID that is gone.
func TestCatalogueIsDocumented(t *testing.T) {
	root, err := targets.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "grader.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	ids := map[string]bool{}
	for _, c := range grader.Catalogue() {
		ids[c.ID] = true
		if !strings.Contains(doc, "| `"+c.ID+"` | "+c.Claim+" |") {
			t.Errorf("docs/grader.md has no row for %s with its claim %q", c.ID, c.Claim)
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		if id, ok := strings.CutPrefix(line, "| `S"); ok {
			id = "S" + id[:strings.Index(id, "`")]
			if !ids[id] {
				t.Errorf("docs/grader.md lists %s, which is no check", id)
			}
		}
	}
}
