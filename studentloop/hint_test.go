package studentloop

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
// fenced block. And no file of docs/hints holds a fenced block at all: a
// student who opens one to read the words must not see the answer at a
// glance; the code is beside the solution (HintCodePath).
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
				t.Errorf("%s %s: the last tier has no code block", HintCodePath(n), topic)
			}
		}
	}
	docs, err := filepath.Glob(filepath.Join("..", "docs", "hints", "*.md"))
	if err != nil || len(docs) < Stages {
		t.Fatalf("found %d files in docs/hints (%v), want a file per stage", len(docs), err)
	}
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if t0 := strings.TrimSpace(line); strings.HasPrefix(t0, "```") || strings.HasPrefix(t0, "~~~") {
				t.Errorf("%s:%d: a fenced code block; the code of a hint goes in solutions/stageN/hints.md", path, i+1)
				break
			}
		}
	}
}

// TestHints_EachCodeBesideItsWords: stage n's file of code
// (HintCodePath) has the headings of its file of words (HintsPath), in
// the same order, and under each the last tier alone: a section of words
// without its code, or a section of code no words introduce (a check
// renamed in one file only), fails.
func TestHints_EachCodeBesideItsWords(t *testing.T) {
	for n := 0; n < Stages; n++ {
		words, err := sections(filepath.Join("..", HintsPath(n)))
		if err != nil {
			t.Fatal(err)
		}
		code, err := sections(filepath.Join("..", HintCodePath(n)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := headings(code), headings(words); !slices.Equal(got, want) {
			t.Errorf("%s has the sections %q; %s has %q", HintCodePath(n), got, HintsPath(n), want)
		}
		for _, s := range words {
			if !slices.Equal(s.items, []string{"1", "2", "3"}) {
				t.Errorf("%s %s has the tiers %q, want 1 to 3", HintsPath(n), s.topic, s.items)
			}
		}
		for _, s := range code {
			if !slices.Equal(s.items, []string{"4"}) {
				t.Errorf("%s %s has the tiers %q, want 4 alone", HintCodePath(n), s.topic, s.items)
			}
		}
	}
}

// section is a "## topic" of a hint file and the numbers of its tiers.
type section struct {
	topic string
	items []string
}

// sections reads a hint file's sections as they stand, in order, without
// LoadHints's rules.
func sections(path string) ([]section, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []section
	for _, line := range strings.Split(string(raw), "\n") {
		if topic, ok := strings.CutPrefix(line, "## "); ok {
			out = append(out, section{topic: topic})
		} else if m := tierItem.FindStringSubmatch(line); m != nil && len(out) > 0 {
			out[len(out)-1].items = append(out[len(out)-1].items, m[1])
		}
	}
	return out, nil
}

func headings(s []section) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.topic)
	}
	return out
}

func TestLoadHints_RejectsAMissingTier(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs", "hints"), 0o755)
	os.WriteFile(filepath.Join(root, HintsPath(1)), []byte("## S1.x\n1. idea\n2. where\n"), 0o644)
	if _, err := LoadHints(root, 1); err == nil || !strings.Contains(err.Error(), "2 tiers") {
		t.Fatalf("err %v", err)
	}
}

// writeHints writes stage 1's two hint files under root: words in
// docs/hints, code beside the solution.
func writeHints(t *testing.T, root, words, code string) {
	t.Helper()
	for path, text := range map[string]string{HintsPath(1): words, HintCodePath(1): code} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadHints_KeepsTheCodeBlock: words are joined into one paragraph,
// but the lines of the last tier's code block stay lines, without the
// indent that puts them under their tier; a block left open is an error.
func TestLoadHints_KeepsTheCodeBlock(t *testing.T) {
	root := t.TempDir()
	words := "## S1.x\n1. the\n   idea\n2. where\n3. decisions\n"
	code := "# Stage 1 hints: the code\n\n## S1.x\n4. Like this:\n\n   ```go\n   if ok {\n   \treturn\n   }\n   ```\n"
	writeHints(t, root, words, code)
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
	writeHints(t, root, words, strings.TrimSuffix(code, "   ```\n"))
	if _, err := LoadHints(root, 1); err == nil || !strings.Contains(err.Error(), "left open") {
		t.Errorf("a code block left open: err %v", err)
	}
}

// TestLoadHints_EachTierInItsFile: a topic whose code is missing, code
// for a topic the words do not have, the code among the words, or words
// among the code, are errors that name the file at fault; the two files
// together are the four tiers.
func TestLoadHints_EachTierInItsFile(t *testing.T) {
	const words = "## S1.x\n1. idea\n2. where\n3. decisions\n"
	const code = "## S1.x\n4. code\n"
	for _, c := range []struct{ name, words, code, want string }{
		{"the four tiers", words, code, ""},
		{"no code", words, "", HintCodePath(1) + ": S1.x has no tier 4"},
		{"code for no topic", words, code + "## S1.y\n4. code\n", HintCodePath(1) + ": S1.y is no topic of " + HintsPath(1)},
		{"the code among the words", words + "4. code\n", code, HintsPath(1) + ": S1.x: tier 4 belongs in " + HintCodePath(1)},
		{"words among the code", words, "## S1.x\n3. decisions\n4. code\n", HintCodePath(1) + ": S1.x: tier 3 belongs in " + HintsPath(1)},
		{"a section of code without it", words, "## S1.x\n", HintCodePath(1) + ": S1.x has 0 tiers, not 1"},
	} {
		root := t.TempDir()
		writeHints(t, root, c.words, c.code)
		h, err := LoadHints(root, 1)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && h["S1.x"] != [Tiers]string{"idea", "where", "decisions", "code"}:
			t.Errorf("%s: %q", c.name, h["S1.x"])
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
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
