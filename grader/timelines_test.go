package grader

import (
	"slices"
	"testing"
)

func TestNamedRefs_ReadsOnlyTheLinesOfTheFinding(t *testing.T) {
	got := "2 postings in the core ledger: tr_aa1, tr_bb2\nnever posted: tr_cc3, tr_dd4"
	if refs := namedRefs(got); !slices.Equal(refs, []string{"tr_cc3", "tr_dd4"}) {
		t.Errorf("namedRefs = %v, want the two never posted", refs)
	}
}

func TestNamedOps_ReadsTheEvidenceAndTheContractBesideIt(t *testing.T) {
	f := &Failure{Sent: `POST /transfers {"metadata":{"op":"op-0000000a"}}`, Got: "op op-0000000a executed twice",
		Contract: &Failure{Sent: `{"metadata":{"op":"op-0000000b"}}`}}
	if ops := namedOps(f); !slices.Equal(ops, []string{"op-0000000a", "op-0000000b"}) {
		t.Errorf("namedOps = %v", ops)
	}
}
