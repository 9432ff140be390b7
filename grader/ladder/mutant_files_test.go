package ladder

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
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
// edits before it have been made.
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
		_, _, problems := applyEdits(m, solutionFile)
		for _, p := range problems {
			t.Errorf("mutant %s: %s", m.Name, p)
		}
	}
}

// solutionFile is file of solution stage n. The tests run in
// grader/ladder, two folders below the solutions.
func solutionFile(n int, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "solutions", fmt.Sprintf("stage%d", n), file))
	return string(b), err
}

// applyEdits makes m's edits as Build does: it returns the text of each
// file m edits, as the solution has it and with the edits made, and what
// did not apply (a file that cannot be read, an old text that does not
// occur exactly once when the edits before it have been made).
func applyEdits(m Mutant, read func(stage int, file string) (string, error)) (before, after map[string]string, problems []string) {
	before, after = map[string]string{}, map[string]string{}
	for _, e := range m.Edits {
		if _, ok := after[e.File]; !ok {
			text, err := read(m.Stage, e.File)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			before[e.File], after[e.File] = text, text
		}
		if n := strings.Count(after[e.File], e.Old); n != 1 {
			problems = append(problems, fmt.Sprintf("its old text occurs %d times in %s (want once):\n%s", n, e.File, e.Old))
		}
		after[e.File] = strings.Replace(after[e.File], e.Old, e.New, 1)
	}
	return before, after, problems
}

// TestMutantFiles_NoPackageState: a mutant keeps what it remembers in its
// server, not in a package variable, unless its header says why (state).
// A stage's checks run side by side in one test process, each with a
// server and a database of its own whose rows are numbered from 1: a
// package variable is shared by every check's server, and a check then
// passes or fails for what another check sent. The mutant
// replayed-headers-unmarked kept the first answers' headers in one, and in
// a full run of stage 4 its own check passed.
func TestMutantFiles_NoPackageState(t *testing.T) {
	for _, m := range Mutants {
		before, after, _ := applyEdits(m, solutionFile)
		added := addedPackageVars(m, before, after)
		switch {
		case m.State == "" && len(added) > 0:
			t.Errorf("mutant %s adds package state, which every check's server in one process shares: %s\n"+
				"keep it in the server, or say why in the header (state: ...)", m.Name, strings.Join(added, "; "))
		case m.State != "" && len(added) == 0:
			t.Errorf("mutant %s says why it keeps package state (state: %s), and adds no package variable: take the field off", m.Name, m.State)
		}
	}
}

// TestAddedPackageVars_ASharedMap holds the guard to the mutants it must
// refuse: replayed-headers-unmarked as it was first written, its headers
// in a sync.Map of the package, and a map added to a var block. A
// variable whose value only changes is new state too; one the edits do
// not touch, an error made once, a field added to the server and a
// variable declared in a function are not.
func TestAddedPackageVars_ASharedMap(t *testing.T) {
	const solution = "package p\n\nimport \"sync\"\n\nvar errGone = errNew(\"gone\")\n\n" +
		"var (\n\tlimit = 3\n)\n\n// Server holds\ntype Server struct {\n\tmu sync.Mutex\n}\n\nfunc f() {\n}\n"
	read := func(int, string) (string, error) { return solution, nil }
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"a sync.Map before the server", "// Server holds", "var sent sync.Map\n\n// Server holds",
			[]string{"p.go: var sent sync.Map"}},
		{"a counter in a block", "\tlimit = 3", "\tlimit = 3\n\tseen  = map[int]int{}",
			[]string{"p.go: seen  = map[int]int{}"}},
		{"an error to compare with", "// Server holds", "var errLate = errors.New(\"late\")\n\n// Server holds", nil},
		{"a value changed", "limit = 3", "limit = 4", []string{"p.go: limit = 4"}},
		{"a field of the server", "\tmu sync.Mutex", "\tmu sync.Mutex\n\tsent sync.Map", nil},
		{"a variable of a function", "func f() {", "func f() {\n\tvar n int\n\t_ = n", nil},
		{"a file that does not parse", "func f() {\n}", "func f() {\n\nvar hits int\n", []string{"p.go: var hits int"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Mutant{Name: "m", Edits: []Edit{{File: "p.go", Old: tc.old, New: tc.new}}}
			before, after, problems := applyEdits(m, read)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if got := addedPackageVars(m, before, after); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// addedPackageVars names the package-level variables m's edits add or
// change, "FILE: SPEC" each. A section is a fragment, which parses only in
// its file: each file is parsed whole, as the solution has it and with the
// edits made, and the top-level var declarations compared by name and
// text. A file that does not parse with the edits made (Build would not
// compile it) is read by its new sections' lines: one that starts "var "
// is named.
func addedPackageVars(m Mutant, before, after map[string]string) []string {
	var added []string
	for _, file := range slices.Sorted(maps.Keys(after)) {
		was, _ := packageVars(before[file])
		now, err := packageVars(after[file])
		if err != nil {
			for _, e := range m.Edits {
				for line := range strings.Lines(e.New) {
					if e.File == file && strings.HasPrefix(line, "var ") && !strings.Contains(before[file], line) {
						added = append(added, file+": "+strings.TrimSpace(line))
					}
				}
			}
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(now)) {
			if was[name] != now[name] {
				added = append(added, file+": "+now[name])
			}
		}
	}
	return added
}

// packageVars returns the top-level variables of a Go file, each by name
// with its declaration's text ("var x T" alone, "x = v" in a block). Left
// out are the blank variable, which holds nothing (var _ I = T{}), and a
// value made once that nothing changes (fixed, below).
func packageVars(src string) (map[string]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			if fixed(spec.(*ast.ValueSpec)) {
				continue
			}
			text := src[fset.Position(spec.Pos()).Offset:fset.Position(spec.End()).Offset]
			if !g.Lparen.IsValid() {
				text = "var " + text
			}
			for _, name := range spec.(*ast.ValueSpec).Names {
				if name.Name != "_" {
					vars[name.Name] = text
				}
			}
		}
	}
	return vars, nil
}

// fixedValues are the calls whose value no caller changes: an error to
// compare with, a compiled pattern, a replacer.
var fixedValues = []string{"errors.New", "fmt.Errorf", "regexp.MustCompile", "strings.NewReplacer"}

// fixed reports whether spec declares only values that are state of no
// one: each is one of fixedValues, with no type said.
func fixed(spec *ast.ValueSpec) bool {
	if spec.Type != nil || len(spec.Values) == 0 {
		return false
	}
	for _, v := range spec.Values {
		call, ok := v.(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || !slices.Contains(fixedValues, pkg.Name+"."+sel.Sel.Name) {
			return false
		}
	}
	return true
}

// lackingMutant are the checks of stages 7 to 9 that no mutant backs,
// each with the reason.
var lackingMutant = map[string]string{}

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
