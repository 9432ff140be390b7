package grader

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"idemlab/grader/judging"
)

// TestUnseenAgainWhile_GoesOnWhileTimeIsLeft: a round that could not
// observe does not stop a later one that fails the server, runs once more
// after the others (and the check passes if it then holds), while more()
// holds, and once it does not, the rounds stop, saying what was not seen
// (S6.late-original-fenced's rounds, on a busy machine).
func TestUnseenAgainWhile_GoesOnWhileTimeIsLeft(t *testing.T) {
	unseen := &judging.Unobserved{What: "the first round"}
	failed := &judging.Failure{Expected: "the later round's"}
	var ran []string
	busyOnce := func() func() error {
		tries := 0
		return func() error {
			ran, tries = append(ran, "busy"), tries+1
			if tries == 1 {
				return unseen
			}
			return nil
		}
	}
	holds := func() error { ran = append(ran, "holds"); return nil }
	fails := func() error { ran = append(ran, "fails"); return failed }
	always := func() bool { return true }
	cases := []struct {
		name   string
		more   func() bool
		rounds []func() error
		want   error
		ran    string
	}{
		{"a later failure", always, []func() error{busyOnce(), holds, fails}, failed, "busy holds fails"},
		{"seen the second time", always, []func() error{busyOnce(), holds}, nil, "busy holds busy"},
		{"never seen", always, []func() error{func() error { ran = append(ran, "busy"); return unseen }, holds}, unseen, "busy holds busy"},
		{"no time left", func() bool { return false }, []func() error{busyOnce(), holds, fails}, unseen, "busy"},
	}
	for _, c := range cases {
		ran = nil
		if err := unseenAgainWhile(c.more, c.rounds...); !errors.Is(err, c.want) || strings.Join(ran, " ") != c.ran {
			t.Errorf("%s: got %v after %q, want %v after %q", c.name, err, strings.Join(ran, " "), c.want, c.ran)
		}
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
