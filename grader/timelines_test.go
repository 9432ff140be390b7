package grader

import (
	"slices"
	"testing"
	"time"

	"idemlab/grader/judging"
	"idemlab/grader/timeline"
)

func TestNamedRefs_ReadsOnlyTheLinesOfTheFinding(t *testing.T) {
	got := "2 postings in the core ledger: tr_aa1, tr_bb2\nnever posted: tr_cc3, tr_dd4"
	if refs := namedRefs(got); !slices.Equal(refs, []string{"tr_cc3", "tr_dd4"}) {
		t.Errorf("namedRefs = %v, want the two never posted", refs)
	}
	got = "2 postings in the core ledger: tr_aa1, tr_bb2\nset aside as dead letters, though the core would have taken them: tr_ee5 (503 core down)"
	if refs := namedRefs(got); !slices.Equal(refs, []string{"tr_ee5"}) {
		t.Errorf("namedRefs = %v, want the one set aside", refs)
	}
}

func TestNamedOps_ReadsTheEvidenceAndTheContractBesideIt(t *testing.T) {
	f := &judging.Failure{Sent: `POST /transfers {"metadata":{"op":"op-0000000a"}}`, Got: "op op-0000000a executed twice",
		Contract: &judging.Failure{Sent: `{"metadata":{"op":"op-0000000b"}}`}}
	if ops := namedOps(f); !slices.Equal(ops, []string{"op-0000000a", "op-0000000b"}) {
		t.Errorf("namedOps = %v", ops)
	}
}

// TestResultTimeline_HarmDecidesTheHighlight: money that moved for a
// refused request highlights its execution even when the check judged it
// itself (no Excess); a contract difference of one request draws nothing.
func TestResultTimeline_HarmDecidesTheHighlight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &timeline.History{
		Attempts: []timeline.Attempt{{ID: "a1", Client: "check", Op: "op-0000000a", Start: t0, End: t0.Add(10 * time.Millisecond), Status: 400}},
		Events:   []timeline.Event{{At: t0.Add(5 * time.Millisecond), Kind: timeline.Execution, Attempt: "a1", Op: "op-0000000a"}},
	}
	sent := `POST /transfers {"metadata":{"op":"op-0000000a"}}`
	moved := Result{Check: Check{ID: "S1.x"}, History: h, Err: &judging.Failure{Harm: judging.MovedThoughRefused, Sent: sent}}
	v, ok := moved.Timeline("make stage-1", 10)
	if !ok || len(v.Lanes) != 1 || len(v.Lanes[0].Marks) != 1 || !v.Lanes[0].Marks[0].Highlight {
		t.Errorf("moved though refused: drawn %v, lanes %+v; want its execution highlighted", ok, v.Lanes)
	}
	contract := Result{Check: Check{ID: "S1.x"}, History: h, Err: &judging.Failure{Sent: sent}}
	if _, ok := contract.Timeline("make stage-1", 10); ok {
		t.Error("a contract difference of one request draws a timeline")
	}
}

// TestHighlight_KnowsTheHarmsThatHighlightAnExecution holds the timeline's
// names of the harms to judging's: a harm renamed there would otherwise
// draw its executions as merely named by the evidence.
func TestHighlight_KnowsTheHarmsThatHighlightAnExecution(t *testing.T) {
	named := timeline.Finding{Harm: "contract"}.Highlight()
	for _, h := range []judging.Harm{judging.Double, judging.MovedThoughRefused, judging.NotPosted, judging.PostedTwice, judging.PostedUnexecuted} {
		if (timeline.Finding{Harm: string(h)}).Highlight() == named {
			t.Errorf("the timeline draws the executions of %q as merely named", h)
		}
	}
}
