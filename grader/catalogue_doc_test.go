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
	doc := graderDoc(t)
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

// TestGuardsAreDocumented keeps docs/grader.md's table of guards in step
// with the catalogue's declarations: a row for each declared guard with
// its reason, and no row for a check that is no guard.
func TestGuardsAreDocumented(t *testing.T) {
	_, section, ok := strings.Cut(graderDoc(t), "\n### The guards\n")
	if !ok {
		t.Fatal(`docs/grader.md has no section "### The guards"`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	declared := map[string]bool{}
	for _, c := range grader.Catalogue() {
		if c.Guard == "" {
			continue
		}
		declared[c.ID] = true
		if !strings.Contains(section, "| `"+c.ID+"` | "+c.Guard+" |") {
			t.Errorf("docs/grader.md's guards have no row for %s with its reason %q", c.ID, c.Guard)
		}
	}
	for _, line := range strings.Split(section, "\n") {
		if id, ok := strings.CutPrefix(line, "| `"); ok {
			id, _, _ = strings.Cut(id, "`")
			if !declared[id] {
				t.Errorf("docs/grader.md lists %s among the guards, and the catalogue does not declare it one", id)
			}
		}
	}
}

// graderDoc reads docs/grader.md.
func graderDoc(t *testing.T) string {
	t.Helper()
	root, err := targets.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "grader.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
