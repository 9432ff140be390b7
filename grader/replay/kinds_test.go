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

// A day's findings are listed in the order its harm is judged: whatever
// two money harms a day has, its first finding is one of the harm Harm
// names (a day judged a double listed its lost operation first).
func TestFindings_TheFirstIsOfTheHarmTheDayIsJudged(t *testing.T) {
	count := func(c *DayCounts, kind string) {
		for field, n := range map[string]*int{"double_applied": &c.DoubleApplied, "invoices_paid_twice": &c.InvoicesPaidTwice,
			"lost_transfers": &c.LostTransfers, "told_duplicate": &c.ToldDuplicate, "balance_mismatches": &c.BalanceMismatches,
			"negative_balances": &c.NegativeBalances, "wrong_answers": &c.WrongAnswers, "no_usable_answer": &c.NoUsableAnswer,
			"key_unobserved": &c.KeyUnobserved, "stuck_in_progress": &c.StuckInProgress, "lost_updates": &c.LostUpdates, "not_posted": &c.NotPosted,
			"posted_twice": &c.PostedTwice, "posted_unexecuted": &c.PostedUnexecuted} {
			if field == kind {
				*n++
				return
			}
		}
		t.Fatalf("no count for the kind %q", kind)
	}
	for i, worse := range harmKinds {
		for _, better := range harmKinds[i+1:] {
			rc := DayReconciliation{Money: DayMoney{Conserved: true}, Findings: []DayFinding{
				{Kind: better.kinds[0], Op: "op-002"}, {Kind: worse.kinds[len(worse.kinds)-1], Op: "op-001"}}}
			for _, f := range rc.Findings {
				count(&rc.Counts, f.Kind)
			}
			sortFindings(rc.Findings)
			if h, n := rc.Harmed(); h != worse.harm || n != 1 || rc.Findings[0].Kind != worse.kinds[len(worse.kinds)-1] {
				t.Errorf("a day with %s and %s: judged %q (%d named), first finding %s", better.kinds[0], worse.kinds[len(worse.kinds)-1], h, n, rc.Findings[0].Kind)
			}
		}
	}
}
