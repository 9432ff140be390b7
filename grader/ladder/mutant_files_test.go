package ladder

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"idemlab/grader"
)

// TestMutantFiles_EditsApply checks what Build needs of every mutant
// without building one: a unique name, a check to catch it, and edits
// whose old text occurs exactly once in its solution's file when the
// edits before it have been made. The test runs in grader/ladder, two
// folders below the solutions.
func TestMutantFiles_EditsApply(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Mutants {
		if seen[m.Name] {
			t.Errorf("two mutants are named %s", m.Name)
		}
		seen[m.Name] = true
		if _, ok := grader.Lookup(m.CaughtBy); !ok {
			t.Errorf("mutant %s names no check: %s", m.Name, m.CaughtBy)
		}
		texts := map[string]string{}
		for _, e := range m.Edits {
			text, ok := texts[e.File]
			if !ok {
				b, err := os.ReadFile(filepath.Join("..", "..", "solutions", fmt.Sprintf("stage%d", m.Stage), e.File))
				if err != nil {
					t.Errorf("mutant %s: %v", m.Name, err)
					continue
				}
				text = string(b)
			}
			if n := strings.Count(text, e.Old); n != 1 {
				t.Errorf("mutant %s: its old text occurs %d times in %s (want once):\n%s", m.Name, n, e.File, e.Old)
			}
			texts[e.File] = strings.Replace(text, e.Old, e.New, 1)
		}
	}
}

// lackingMutant are the checks of stages 7 to 9 that no mutant backs,
// each with the reason.
var lackingMutant = map[string]string{
	"S7.settings-hidden-characters": "the characters of a nickname are held by the kit's input rules (kit/request), which no solution's file holds for a mutant to break",
}

// TestMutants_BackTheLaterChecks: each check of stages 7 to 9 is named
// by a mutant it must catch, or is a guard (grader.Check.Guard), or is
// listed in lackingMutant with the reason. A check added without a wrong
// version it catches fails, and so does one listed that has found its
// mutant or become a guard.
func TestMutants_BackTheLaterChecks(t *testing.T) {
	backed := map[string]bool{}
	for _, m := range Mutants {
		backed[m.CaughtBy] = true
	}
	for _, c := range grader.Catalogue() {
		if c.Stage < 7 {
			continue
		}
		_, listed := lackingMutant[c.ID]
		switch {
		case listed && (backed[c.ID] || c.Guard != ""):
			t.Errorf("%s is listed as lacking a mutant, and has one or is a guard: take it off lackingMutant", c.ID)
		case !listed && !backed[c.ID] && c.Guard == "":
			t.Errorf("%s is named by no mutant and is no guard: write the wrong version it catches in mutants/stage%d", c.ID, c.Stage)
		}
	}
}

// TestParseMutant_Malformed shows that a mutant file which does not say
// what Build needs is refused, not read as a mutant with a gap.
func TestParseMutant_Malformed(t *testing.T) {
	const header = "name: x\nstage: 1\ncaught-by: S1.sequential-retry\nbug: b\n"
	for name, data := range map[string]string{
		"no edits":         header,
		"no bug":           "name: x\nstage: 1\ncaught-by: S1.sequential-retry\n-- a.go: old --\nx\n-- a.go: new --\ny\n",
		"unknown field":    header + "colour: red\n-- a.go: old --\nx\n-- a.go: new --\ny\n",
		"stage not number": "name: x\nstage: one\ncaught-by: S1.sequential-retry\nbug: b\n-- a.go: old --\nx\n-- a.go: new --\ny\n",
		"no stage":         "name: x\ncaught-by: S1.sequential-retry\nbug: b\n-- a.go: old --\nx\n-- a.go: new --\ny\n",
		"no such stage":    "name: x\nstage: 10\ncaught-by: S1.sequential-retry\nbug: b\n-- a.go: old --\nx\n-- a.go: new --\ny\n",
		"old without new":  header + "-- a.go: old --\nx\n",
		"new before old":   header + "-- a.go: new --\ny\n-- a.go: old --\nx\n",
		"two files":        header + "-- a.go: old --\nx\n-- b.go: new --\ny\n",
	} {
		if m, err := ParseMutant([]byte(data)); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", name, m)
		}
	}
}

// TestParseMutant_LineBreaks shows the one rule of the format: the line
// break that ends a section is not the edit's, so an edit that ends with
// one shows a blank line.
func TestParseMutant_LineBreaks(t *testing.T) {
	m, err := ParseMutant([]byte("name: x\nstage: 1\ncaught-by: S1.sequential-retry\nbug: b\n" +
		"-- a.go: old --\n\tfoo()\n-- a.go: new --\n\tfoo()\n\tbar()\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Edit{File: "a.go", Old: "\tfoo()", New: "\tfoo()\n\tbar()\n"}); len(m.Edits) != 1 || m.Edits[0] != want {
		t.Errorf("edits %q, want [%q]", m.Edits, want)
	}
}

// TestBuild_BugTextStaysAString catches a Build that pastes a mutant's
// name or bug into the generated test as code: a quote, a backslash, a
// percent sign or a line break in the text would then break the test's
// build (and the mutant would read as not caught) or change what it says.
// The generated file must parse, and its failure message must carry the
// text unchanged.
func TestBuild_BugTextStaysAString(t *testing.T) {
	m := Mutant{Name: "quoted", Stage: 1, CaughtBy: "S1.sequential-retry",
		Bug: "keeps \"the\" key in C:\\keys at 100%v,\nthen `forgets` it"}
	dir := t.TempDir()
	pkg, err := Build(filepath.Join("..", ".."), dir, m, 7)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(pkg), "caught_test.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("the generated test does not parse: %v", err)
	}
	var texts []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("literal %s: %v", lit.Value, err)
			}
			texts = append(texts, s)
		}
		return true
	})
	want := "mutant quoted (" + m.Bug + ") was not caught by S1.sequential-retry"
	if !slices.Contains(texts, want) {
		t.Errorf("no string in the generated test reads %q; its strings: %q", want, texts)
	}
}
