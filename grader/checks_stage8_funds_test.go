package grader_test

import (
	"context"
	"net/http"
	"testing"

	"idemlab/grader"
	"idemlab/solutions/stage8"
)

// TestSimilarReferences_TheOpeningBalanceCoversEveryInvoice:
// S8.similar-references pays thirteen invoices from one account before
// it pays some of them again. With every amount drawn up to 100,000,
// seed 20482 drew more than the opening balance, and the reference
// solution refused a paid-again invoice for its funds (422) before it
// looked at its reference: a red on a right server.
func TestSimilarReferences_TheOpeningBalanceCoversEveryInvoice(t *testing.T) {
	c, ok := grader.Lookup("S8.similar-references")
	if !ok {
		t.Fatal("no check S8.similar-references")
	}
	subject := grader.Subject{Stage: 8, Name: "solutions/stage8", New: stage8.New}
	if r := grader.RunCheck(context.Background(), subject, c, 20482, serveWrapped(t, stage8.New, func(h http.Handler) http.Handler { return h })); !r.Passed() {
		t.Fatalf("the reference solution failed at seed 20482: %v", r.Err)
	}
}
