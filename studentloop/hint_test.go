package studentloop

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
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

// TestHints_CodeOnlyAtTheLastStep: the tiers before the last are words;
// a Go or SQL statement in one is a solution handed over before the
// student asked for it. The last tier gives the code, or its shape, in a
// fenced block.
func TestHints_CodeOnlyAtTheLastStep(t *testing.T) {
	for n := 0; n < Stages; n++ {
		h, err := LoadHints("..", n)
		if err != nil {
			t.Fatal(err)
		}
		for topic, tiers := range h {
			for i, tier := range tiers[:CodeTier-1] {
				for _, code := range []string{"```", ":=", "func ", "if err != nil {", "INSERT INTO", "DELETE FROM", "= ?"} {
					if strings.Contains(tier, code) {
						t.Errorf("%s %s tier %d holds code (%q)", HintsPath(n), topic, i+1, code)
					}
				}
			}
			if !strings.Contains(tiers[CodeTier-1], "\n```") {
				t.Errorf("%s %s: the last tier has no code block", HintsPath(n), topic)
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

// TestLoadHints_KeepsTheCodeBlock: words are joined into one paragraph,
// but the lines of the last tier's code block stay lines, without the
// indent that puts them under their tier; a block left open is an error.
func TestLoadHints_KeepsTheCodeBlock(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs", "hints"), 0o755)
	file := "## S1.x\n1. the\n   idea\n2. where\n3. outline\n4. Like this:\n\n   ```go\n   if ok {\n   \treturn\n   }\n   ```\n"
	os.WriteFile(filepath.Join(root, HintsPath(1)), []byte(file), 0o644)
	h, err := LoadHints(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := h["S1.x"][0]; got != "the idea" {
		t.Errorf("tier 1 %q, want %q", got, "the idea")
	}
	if got, want := h["S1.x"][3], "Like this:\n\n```go\nif ok {\n\treturn\n}\n```"; got != want {
		t.Errorf("tier 4 %q, want %q", got, want)
	}
	os.WriteFile(filepath.Join(root, HintsPath(1)), []byte(strings.TrimSuffix(file, "   ```\n")), 0o644)
	if _, err := LoadHints(root, 1); err == nil || !strings.Contains(err.Error(), "left open") {
		t.Errorf("a code block left open: err %v", err)
	}
}

// TestHints_NameOnlyWhatTheScaffoldHas: the tiers before the code send
// the student to places in the code, and a student who asks "where?" on
// the untouched scaffold looks for what a tier names. Each name in a
// code span (`claim`, or both in `s.claim(ctx)`) that is a Go name of the
// stage's solution must stand in the scaffold (its code, or a TODO that
// asks for it: claim(…)) or in the kit; one only the solution has (holdReference) is a name the student
// cannot find, and hands over part of the design besides.
func TestHints_NameOnlyWhatTheScaffoldHas(t *testing.T) {
	kit, err := goIdents(filepath.Join("..", "kit"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < Stages; n++ {
		h, err := LoadHints("..", n)
		if err != nil {
			t.Fatal(err)
		}
		scaffold, err := goWords(filepath.Join("..", "stages", fmt.Sprintf("stage%d", n)))
		if err != nil {
			t.Fatal(err)
		}
		solution, err := goIdents(filepath.Join("..", "solutions", fmt.Sprintf("stage%d", n)))
		if err != nil {
			t.Fatal(err)
		}
		for topic, tiers := range h {
			for i, tier := range tiers[:CodeTier-1] {
				for _, m := range codeSpan.FindAllStringSubmatch(tier, -1) {
					// Each name of the span: `x.holdReference(ctx)` names
					// holdReference as much as `holdReference` does.
					for _, name := range word.FindAllString(m[1], -1) {
						if solution[name] && !scaffold[name] && !kit[name] {
							t.Errorf("%s %s tier %d names %s (in `%s`), which only solutions/stage%d has", HintsPath(n), topic, i+1, name, m[1], n)
						}
					}
				}
			}
		}
	}
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	word     = regexp.MustCompile(`\w+`)
)

// goWords are the words of the non-test Go files under dir, comments
// included: a TODO that names a function to write makes it the
// scaffold's.
func goWords(dir string) (map[string]bool, error) {
	words := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, w := range word.FindAllString(string(b), -1) {
			words[w] = true
		}
		return err
	})
	return words, err
}

// goIdents are the identifiers of the non-test Go files under dir.
func goIdents(dir string) (map[string]bool, error) {
	idents := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				idents[id.Name] = true
			}
			return true
		})
		return nil
	})
	return idents, err
}
