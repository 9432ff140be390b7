package grader_test

import (
	"context"
	"strings"
	"testing"

	"idemlab/grader"
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
	f := failureOf(t, "S5.purge-bounded", grader.Subject{Stage: 5, Name: "no purger", New: factory})
	if !strings.Contains(f.Got, labctl.NoPurge) {
		t.Errorf("got %q, want it to carry the lab's answer %q", f.Got, labctl.NoPurge)
	}
}
