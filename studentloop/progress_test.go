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

// TestProgress_APassStartsTheHintsAgain: a check that failed and was
// hinted up to its code, then passed, in a full run or a RUN= run, gives
// the idea first when it fails again; a check that failed again keeps
// its tier, and one that could not run says nothing of the server.
func TestProgress_APassStartsTheHintsAgain(t *testing.T) {
	for _, only := range []string{"", "S4.a"} {
		p := &Progress{Stages: map[string]StageProgress{}, Hints: map[string]int{}}
		for range Tiers {
			p.NextTier("S4.a", Tiers)
			p.NextTier("S4.b", Tiers)
			p.NextTier("S4.c", Tiers)
		}
		p.Record(Outcome{Stage: 4, Only: only, Checks: []CheckResult{
			{ID: "S4.a", Passed: true},
			{ID: "S4.b"},
			{ID: "S4.c", Report: "COULD NOT RUN S4.c  …"},
		}}, time.Unix(0, 0))
		if got := p.NextTier("S4.a", Tiers); got != 1 {
			t.Errorf("RUN=%q: after S4.a passed, its next hint is tier %d, want 1", only, got)
		}
		if got := p.NextTier("S4.b", Tiers); got != Tiers {
			t.Errorf("RUN=%q: S4.b failed again, its next hint is tier %d, want %d", only, got, Tiers)
		}
		if got := p.NextTier("S4.c", Tiers); got != Tiers {
			t.Errorf("RUN=%q: S4.c could not run, its next hint is tier %d, want %d", only, got, Tiers)
		}
	}
}

// TestProgress_ARunOfOneCheckMovesTheHintsFocus: after a full run, a run
// of one check (RUN=…) that fails makes it the check a hint is about,
// though the stage's count stays the full run's; a later RUN= pass of it,
// or a full run, gives the hint back to the first failing check.
func TestProgress_ARunOfOneCheckMovesTheHintsFocus(t *testing.T) {
	p := &Progress{Stages: map[string]StageProgress{}, Hints: map[string]int{}}
	full := Outcome{Stage: 5, Checks: []CheckResult{{ID: "S5.a"}, {ID: "S5.b"}, {ID: "S0.x", Passed: true}}}
	p.Record(full, time.Unix(0, 0))
	if got := HintTopic(p.Stage(5)); got != "S5.a" {
		t.Fatalf("after a full run the hint is about %q, want S5.a", got)
	}
	p.Record(Outcome{Stage: 5, Only: "S5.b", Checks: []CheckResult{{ID: "S5.b"}}}, time.Unix(1, 0))
	if got, s := HintTopic(p.Stage(5)), p.Stage(5); got != "S5.b" || s.Passed != 1 || s.Total != 3 {
		t.Errorf("after RUN=S5.b failed: hint about %q (want S5.b), stage %+v (want the full run's count)", got, s)
	}
	p.Record(Outcome{Stage: 5, Only: "S5.a", Checks: []CheckResult{{ID: "S5.a", Passed: true}}}, time.Unix(2, 0))
	if got := HintTopic(p.Stage(5)); got != "S5.b" {
		t.Errorf("a RUN= pass of another check moved the focus to %q, want S5.b still", got)
	}
	p.Record(Outcome{Stage: 5, Only: "S5.b", Checks: []CheckResult{{ID: "S5.b", Passed: true}}}, time.Unix(3, 0))
	if got := HintTopic(p.Stage(5)); got != "S5.a" {
		t.Errorf("after RUN=S5.b passed the hint is about %q, want the full run's S5.a", got)
	}
	p.Record(Outcome{Stage: 5, Only: "S5.b", Checks: []CheckResult{{ID: "S5.b"}}}, time.Unix(4, 0))
	p.Record(full, time.Unix(5, 0))
	if got := HintTopic(p.Stage(5)); got != "S5.a" {
		t.Errorf("after a full run the hint is about %q, want S5.a", got)
	}
}

// TestProgress_ACheckThatCouldNotRunIsNeverTheFocus: a full run with
// nothing but a check that could not run has no first failing check and
// keeps what it could not observe; a RUN= run of a check that could not
// run neither takes the focus nor takes it off the check it was on.
func TestProgress_ACheckThatCouldNotRunIsNeverTheFocus(t *testing.T) {
	p := &Progress{Stages: map[string]StageProgress{}, Hints: map[string]int{}}
	unknown := CheckResult{ID: "S7.a", Report: "COULD NOT RUN S7.a  a claim\n  why not   no PostgreSQL\n  verdict   none"}
	p.Record(Outcome{Stage: 7, Checks: []CheckResult{unknown, {ID: "S7.b", Passed: true}}}, time.Unix(0, 0))
	s := p.Stage(7)
	if s.FirstFailing != "" || !s.OnlyCouldNotRun() || len(s.CouldNotRun) != 1 || s.CouldNotRun[0] != (NotRun{ID: "S7.a", WhyNot: "no PostgreSQL"}) {
		t.Errorf("after a run where S7.a could not run: %+v, want no first failing check and S7.a's why not", s)
	}
	p.Record(Outcome{Stage: 7, Checks: []CheckResult{unknown, {ID: "S7.b"}}}, time.Unix(1, 0))
	p.Record(Outcome{Stage: 7, Only: "S7.a", Checks: []CheckResult{unknown}}, time.Unix(2, 0))
	if got := HintTopic(p.Stage(7)); got != "S7.b" {
		t.Errorf("after RUN=S7.a could not run the hint is about %q, want the failing S7.b", got)
	}
	p.Record(Outcome{Stage: 7, Only: "S7.b", Checks: []CheckResult{{ID: "S7.b"}}}, time.Unix(3, 0))
	p.Record(Outcome{Stage: 7, Only: "S7.b", Checks: []CheckResult{{ID: "S7.b", Report: "COULD NOT RUN S7.b  a claim"}}}, time.Unix(4, 0))
	if s := p.Stage(7); s.Focus != "S7.b" {
		t.Errorf("a RUN= run where S7.b could not run took the focus off it: %+v", s)
	}
}
