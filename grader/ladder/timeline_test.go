package ladder_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
)

// TestTimeline_Stage1ScaffoldDrawsItsDouble runs S1.concurrent-duplicates
// against the untouched scaffold of stage 1, which pays every duplicate,
// and finds its timeline in the failure text and in the HTML page: the
// executions drawn on the lanes of the requests that made them (the
// server's events name the request), highlighted.
func TestTimeline_Stage1ScaffoldDrawsItsDouble(t *testing.T) {
	c, _ := grader.Lookup("S1.concurrent-duplicates")
	r := grader.RunCheck(context.Background(), rungs[1].Scaffold, c, 7, targets.InProcess)
	if r.Harm() != judging.Double {
		t.Fatalf("the scaffold of stage 1 passed or failed otherwise: %v", r.Err)
	}
	reproduce := "make stage-1 SEED=7 RUN=S1.concurrent-duplicates"
	v, ok := r.Timeline(reproduce, timeline.HTMLLanes)
	if !ok {
		t.Fatal("no timeline for the double")
	}
	onLanes := 0
	for _, l := range v.Lanes {
		for _, m := range l.Marks {
			if m.Kind == timeline.Execution && m.Highlight && !l.Lab {
				onLanes++
			}
		}
	}
	if onLanes < 2 {
		t.Errorf("%d highlighted executions on client lanes, want the double's (at least two)", onLanes)
	}

	dir := t.TempDir()
	if err := grader.WriteTimeline(&r, dir, reproduce); err != nil {
		t.Fatal(err)
	}
	text := grader.Format(r, reproduce)
	for _, want := range []string{"timeline  32 clients involved", "✗", "\n  timeline: " + r.TimelinePath + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the failure text lacks %q:\n%s", want, text)
		}
	}
	page, err := os.ReadFile(r.TimelinePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="mark excess"`, `data-lane="client 1"`, reproduce} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML timeline %s lacks %q", r.TimelinePath, want)
		}
	}
}
