package studentloop

import (
	"testing"
	"time"
)

// TestProgress_RoundTrip: an outcome recorded and saved reads back as the
// stage's state; a RUN= run is not recorded; the current stage is the
// first that does not pass; hint tiers stop at the last.
func TestProgress_RoundTrip(t *testing.T) {
	root := t.TempDir()
	p, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stage(0).State != NotStarted || p.Current() != 0 {
		t.Fatalf("empty progress: %+v, current %d", p.Stage(0), p.Current())
	}
	p.Record(Outcome{Stage: 0, Checks: []CheckResult{{ID: "S0.a", Passed: true}}}, time.Unix(0, 0))
	p.Record(Outcome{Stage: 1, Checks: []CheckResult{{ID: "S1.b"}, {ID: "S0.a", Passed: true}}}, time.Unix(0, 0))
	p.Record(Outcome{Stage: 2, Only: "S2.x", Checks: []CheckResult{{ID: "S2.x", Passed: true}}}, time.Unix(0, 0))
	for i, want := range []int{1, 2, 3, 4, 4} {
		if got := p.NextTier("S1.b", Tiers); got != want {
			t.Errorf("ask %d: tier %d, want %d", i+1, got, want)
		}
	}
	if err := p.Save(root); err != nil {
		t.Fatal(err)
	}
	q, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Stage(1); s.State != Failing || s.FirstFailing != "S1.b" || s.Passed != 1 || s.Total != 2 {
		t.Errorf("stage 1: %+v", s)
	}
	if q.Stage(2).State != NotStarted {
		t.Errorf("a RUN= run was recorded: %+v", q.Stage(2))
	}
	if q.Current() != 1 || q.Hints["S1.b"] != Tiers {
		t.Errorf("current %d, hint tier %d", q.Current(), q.Hints["S1.b"])
	}
}
