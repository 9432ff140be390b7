package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// said is what the grader gives a failure in place of its check's own
// lesson section and why, read from its source: each is a pattern, the
// expression's strings as they are and "anything" for what it computes
// (a customer's name, say).
type said struct{ lessons, whys []*regexp.Regexp }

var graderSays = sync.OnceValue(func() said {
	s, err := readGraderSays(filepath.Join(repoRoot, "grader"))
	if err != nil {
		panic(err)
	}
	return s
})

// readGraderSays reads the grader's package in dir (its tests left out):
// every Lesson or Why set on a failure (f.Why = …, Why: … outside the
// catalogue), every why handed to because, and every lesson section a
// function named …Lesson returns.
func readGraderSays(dir string) (said, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return said{}, err
	}
	var parsed []*ast.File
	consts := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return said{}, err
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				for i, name := range v.Names {
					if i < len(v.Values) {
						if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	var s said
	add := func(field string, e ast.Expr) {
		re := regexp.MustCompile("^" + pattern(e, consts) + "$")
		switch field {
		case "Lesson":
			s.lessons = append(s.lessons, re)
		case "Why":
			s.whys = append(s.whys, re)
		}
	}
	for i, f := range parsed {
		catalogue := filepath.Base(fset.File(parsed[i].Pos()).Name()) == "catalogue.go"
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && i < len(n.Rhs) {
						add(sel.Sel.Name, n.Rhs[i])
					}
				}
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && !catalogue {
					add(key.Name, n.Value)
				}
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "because" && len(n.Args) == 2 {
					add("Why", n.Args[1])
				}
			case *ast.FuncDecl:
				if strings.HasSuffix(n.Name.Name, "Lesson") && n.Body != nil {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							add("Lesson", r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
	}
	return s, nil
}

// pattern is e as a regular expression: its strings and the string
// constants it names as they are, joined by +, and ".*" for the rest.
func pattern(e ast.Expr, consts map[string]string) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if v, err := strconv.Unquote(e.Value); err == nil {
				return regexp.QuoteMeta(v)
			}
		}
	case *ast.Ident:
		if v, ok := consts[e.Name]; ok {
			return regexp.QuoteMeta(v)
		}
	case *ast.ParenExpr:
		return pattern(e.X, consts)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return pattern(e.X, consts) + pattern(e.Y, consts)
		}
	}
	return ".*"
}

// saidInstead reports whether text is one of what the grader says in
// place of a check's own. A text with "…" in it (text left out) is not:
// a block that leaves out part of a line the failure computed must show
// the catalogue's.
func saidInstead(text string, says []*regexp.Regexp) bool {
	if strings.Contains(text, "…") {
		return false
	}
	for _, re := range says {
		if re.String() != "^.*$" && re.MatchString(text) {
			return true
		}
	}
	return false
}

func TestGraderSays(t *testing.T) {
	s := graderSays()
	// A why given in place of the check's own (checks_stage8.go), one
	// computed from a name (because, checks_stage5.go), and a lesson
	// section set on a failure (checks_stage3.go) and returned by
	// postgresLesson.
	whys := []string{
		"the server answered 409 (nothing moved), and the books say the money moved: the transfer it made before it found the reference taken committed with the refusal, so the invoice was paid again and the client told it was not",
		"customer cus_b's retry ran again right after customer cus_a's late retry forgot its own expired key of the same string: a claim that forgets an expired key by less than its scope (customer, method, route and key) takes a live key of that string in another scope with it",
	}
	for _, why := range whys {
		if !saidInstead(why, s.whys) {
			t.Errorf("a why the grader says is not found:\n\t%s", why)
		}
	}
	if saidInstead("a why no check says", s.whys) {
		t.Error("any why is found")
	}
	for _, lesson := range []string{"docs/lessons/03-in-progress.md#releasing-a-failed-claim", "docs/lessons/02-fingerprint.md#on-postgresql"} {
		if !saidInstead(lesson, s.lessons) {
			t.Errorf("a lesson section the grader names is not found: %s", lesson)
		}
	}
	if saidInstead("docs/lessons/03-in-progress.md#no-such-section", s.lessons) {
		t.Error("any lesson section is found")
	}
}
