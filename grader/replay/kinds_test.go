package replay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFindingKinds_AreTheKindsTheReconciliationWrites: the kinds the
// package's code gives its findings (add("kind", …) and DayFinding{Kind:
// "kind"}) are FindingKinds, no more and no fewer. It catches a kind added
// to the reconciliation and not to the list that orders it and that the
// timeline's test reads.
func TestFindingKinds_AreTheKindsTheReconciliationWrites(t *testing.T) {
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	literal := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(written, s) {
			written = append(written, s)
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "add" && len(n.Args) > 0 {
					literal(n.Args[0])
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Kind" {
					literal(n.Value)
				}
			}
			return true
		})
	}
	if len(written) < 10 {
		t.Fatalf("found %d kinds in the code: %v", len(written), written)
	}
	for _, k := range written {
		if !slices.Contains(FindingKinds, k) {
			t.Errorf("the reconciliation writes findings of kind %q, which FindingKinds lacks", k)
		}
	}
	for _, k := range FindingKinds {
		if !slices.Contains(written, k) {
			t.Errorf("FindingKinds holds %q, which no finding has", k)
		}
	}
}
