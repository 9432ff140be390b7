package problem_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/kit/problem"
)

// typeLiteral finds a problem type where the code defines one: a
// problem.Type (or, in this package, a Type) literal and its name.
var typeLiteral = regexp.MustCompile(`(?:problem\.)?\bType\{Name:\s*"([^"]+)"`)

// TestEveryProblemTypeIsInTheAPITable: docs/api.md's problem-type tables
// name every type a server of the lab can answer, the kit's catalogue
// and every other problem.Type the code defines (the core ledger's), so
// that a client meeting one can look it up. A type added without its row
// fails here.
func TestEveryProblemTypeIsInTheAPITable(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Problem types\n")
	if !ok {
		t.Fatal("docs/api.md has no section ## Problem types")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 {
			rows[strings.Trim(strings.TrimSpace(cells[2]), "`")] = true
		}
	}

	names := map[string]string{}
	for _, ty := range problem.Catalogue {
		names[ty.Name] = "kit/problem"
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range typeLiteral.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) <= len(problem.Catalogue) {
		t.Errorf("found only the catalogue's %d types in the code: the search for other problem.Type literals is broken", len(problem.Catalogue))
	}
	for name, where := range names {
		if !rows[(&problem.Type{Name: name}).URI()] {
			t.Errorf("docs/api.md's problem types have no row for /problems/%s (defined in %s)", name, where)
		}
	}
}
