package grader

import (
	"context"
	"errors"
	"testing"
	"time"

	"idemlab/grader/judging"
)

// TestUnseenLastWhile_GoesOnWhileTimeIsLeft: a round that could not
// observe does not stop a later one that fails the server while more()
// holds, and stops the rounds once it does not, saying what was not
// seen (S6.late-original-fenced's rounds, under load).
func TestUnseenLastWhile_GoesOnWhileTimeIsLeft(t *testing.T) {
	unseen := &judging.Unobserved{What: "the first round"}
	failed := &judging.Failure{Expected: "the later round's"}
	ran := 0
	rounds := []func() error{
		func() error { ran++; return unseen },
		func() error { ran++; return nil },
		func() error { ran++; return failed },
	}
	if err := unseenLastWhile(func() bool { return true }, rounds...); !errors.Is(err, failed) || ran != 3 {
		t.Errorf("with time left: got %v after %d rounds, want the later round's failure after 3", err, ran)
	}
	ran = 0
	if err := unseenLastWhile(func() bool { return false }, rounds...); !errors.Is(err, unseen) || ran != 1 {
		t.Errorf("with no time left: got %v after %d rounds, want the first round's could-not-observe after 1", err, ran)
	}
}

// TestTimeLeft: a check's context with less than d left has no time left
// for a round of d.
func TestTimeLeft(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tt := &T{ctx: ctx}
	if !tt.timeLeft(30 * time.Second)() {
		t.Error("a minute left: no time for 30 s")
	}
	if tt.timeLeft(2 * time.Minute)() {
		t.Error("a minute left: time for 2 min")
	}
}
