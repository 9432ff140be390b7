package grader_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rooms are the grader's packages by role, each on a level: a package
// may import the grader's packages of lower levels only, so that the
// traffic, the faults, the targets and the judging never depend on a
// check, and a check is built from them (docs/grader.md, "The map").
var rooms = map[string]int{
	"idemlab/grader/dayplan":    0, // traffic: what clients send
	"idemlab/grader/timeline":   0, // drawing a history
	"idemlab/grader/faultnet":   1, // faults: what goes wrong on the way
	"idemlab/grader/history":    1, // what was sent, answered and observed
	"idemlab/grader/targets":    1, // the server under test and the core
	"idemlab/grader/judging":    1, // harms, evidence, books
	"idemlab/grader/replay":     2, // a day replayed and reconciled
	"idemlab/grader/scoreboard": 3, // one day against every stage
	"idemlab/grader":            4, // the catalogue and the checks
	"idemlab/grader/conform":    4, // the course's attacks on any API
	"idemlab/grader/gradertest": 5, // go test's glue
	"idemlab/grader/ladder":     5, // every stage and mutant against the checks
}

// judges are the packages that grade: the demo must run without them.
var judges = []string{
	"idemlab/grader", "idemlab/grader/judging", "idemlab/grader/replay",
	"idemlab/grader/scoreboard", "idemlab/grader/conform",
	"idemlab/grader/gradertest", "idemlab/grader/ladder",
}

// moduleImports reads the imports of every package of the module at
// root (module path mod) from its Go files, tests and testdata left out:
// package path → the module's packages it imports.
func moduleImports(t *testing.T, root, mod string) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".") || name == "tmp") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := mod
		if rel != "." {
			pkg = mod + "/" + filepath.ToSlash(rel)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if (p == mod || strings.HasPrefix(p, mod+"/")) && !slices.Contains(imports[pkg], p) {
				imports[pkg] = append(imports[pkg], p)
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the module's imports: %v", err)
	}
	return imports
}

// deps is every package of the module pkg depends on, itself left out,
// with the chain of imports that reaches each.
func deps(imports map[string][]string, pkg string) map[string]string {
	via := map[string]string{}
	var walk func(p, chain string)
	walk = func(p, chain string) {
		for _, q := range imports[p] {
			if _, seen := via[q]; !seen {
				via[q] = chain + " → " + q
				walk(q, via[q])
			}
		}
	}
	walk(pkg, pkg)
	return via
}

// TestRooms_NoDependencyRunsUpward: every package under grader/ has a
// room, and imports only the grader's packages of lower rooms. It
// catches a judging package that imports a check, or a new package
// nobody placed.
func TestRooms_NoDependencyRunsUpward(t *testing.T) {
	imports := moduleImports(t, "..", "idemlab")
	for pkg, imp := range imports {
		if pkg != "idemlab/grader" && !strings.HasPrefix(pkg, "idemlab/grader/") {
			continue
		}
		level, ok := rooms[pkg]
		if !ok {
			t.Errorf("%s has no room: add it to rooms, and to the map in docs/grader.md", pkg)
			continue
		}
		for _, q := range imp {
			if l, ok := rooms[q]; ok && l >= level {
				t.Errorf("%s (level %d) imports %s (level %d): a dependency runs sideways or upward", pkg, level, q, l)
			}
		}
	}
}

// TestRooms_DashboardRunsWithoutTheJudges: the dashboard's demo plays
// traffic and faults against servers it starts; no package under
// dashboard/ links a check, the judging or the replay, so that a change
// to a check cannot break the demo.
func TestRooms_DashboardRunsWithoutTheJudges(t *testing.T) {
	imports := moduleImports(t, "..", "idemlab")
	found := false
	for pkg := range imports {
		if pkg != "idemlab/dashboard" && !strings.HasPrefix(pkg, "idemlab/dashboard/") {
			continue
		}
		found = true
		for dep, chain := range deps(imports, pkg) {
			if slices.Contains(judges, dep) {
				t.Errorf("the dashboard links a package that judges: %s", chain)
			}
		}
	}
	if !found {
		t.Fatal("no package under dashboard/: the test reads the wrong folder")
	}
}

// TestDeps_FollowsImports: deps finds a package reached through others,
// and no package that is not.
func TestDeps_FollowsImports(t *testing.T) {
	imports := map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil, "d": {"a"}}
	got := deps(imports, "a")
	if got["c"] != "a → b → c" {
		t.Errorf("deps(a)[c] = %q, want a → b → c", got["c"])
	}
	if _, ok := got["d"]; ok {
		t.Error("deps(a) holds d, which imports a")
	}
}

// TestModuleImports_ReadsThisPackage: the reader finds this package and
// the grader's packages it imports, so the tests above read the module
// and not an empty folder.
func TestModuleImports_ReadsThisPackage(t *testing.T) {
	imports := moduleImports(t, "..", "idemlab")
	if !slices.Contains(imports["idemlab/grader"], "idemlab/grader/judging") {
		t.Errorf("idemlab/grader imports %v; want idemlab/grader/judging among them", imports["idemlab/grader"])
	}
	if _, err := os.Stat("../dashboard/backend"); err == nil && imports["idemlab/dashboard/backend"] == nil {
		t.Error("idemlab/dashboard/backend read with no import of the module")
	}
}
