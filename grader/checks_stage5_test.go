package grader_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/labctl"
	"idemlab/kit/stage"
	"idemlab/solutions/stage5"
)

// noPurger is stage 5's solution with its Purge out of sight, as a
// Purge with another signature leaves it: the lab never calls one.
type noPurger struct{ stage.Handlers }

// TestPurgeBounded_SaysWhenTheLabNeverCalledAPurge: a server whose Purge
// is not the lab's (its signature differs) keeps every key; the failure
// says the lab never called it, so that the student looks at the method's
// signature, not at the DELETE.
func TestPurgeBounded_SaysWhenTheLabNeverCalledAPurge(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage5.New(ctx, env)
		return noPurger{h}, err
	}
	c, ok := grader.Lookup("S5.purge-bounded")
	if !ok {
		t.Fatal("no check S5.purge-bounded")
	}
	r := grader.RunCheck(context.Background(), grader.Subject{Stage: 5, Name: "no purger", New: factory}, c, 1, targets.InProcess)
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("the check did not fail: %v", r.Err)
	}
	if !strings.Contains(f.Got, labctl.NoPurge) {
		t.Errorf("got %q, want it to carry the lab's answer %q", f.Got, labctl.NoPurge)
	}
}
