package grader_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
	"idemlab/solutions/stage4"
)

// retriesAnswered serves stage 4's solution, but answers the retries of
// POST /transfers (a key it has seen) with answer, as many times as
// times says (0: every time).
func retriesAnswered(t *testing.T, times int, answer http.HandlerFunc) targets.Start {
	return retriesAnsweredBy(t, stage4.New, times, answer)
}

// retriesAnsweredBy is retriesAnswered with the solution newStage builds.
func retriesAnsweredBy(t *testing.T, newStage stage.Factory, times int, answer http.HandlerFunc) targets.Start {
	var mu sync.Mutex
	seen, answered := map[string]bool{}, 0
	return serveWrapped(t, newStage, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/transfers" {
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				retry := seen[key] && (times == 0 || answered < times)
				if retry {
					answered++
				}
				seen[key] = true
				mu.Unlock()
				if retry {
					answer(w, r)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
}

func inProgress(w http.ResponseWriter, _ *http.Request) {
	problem.Write(w, problem.New(problem.RequestInProgress, "the original is still being processed"))
}

func duplicate(w http.ResponseWriter, _ *http.Request) {
	problem.Write(w, problem.New(problem.DuplicateRequest, "the key was already used"))
}

func internalError(w http.ResponseWriter, _ *http.Request) {
	problem.Write(w, problem.New(problem.Internal, "the stored answer could not be read"))
}

// TestReplayByteIdentical_SaysWhatARetryThatIsNoReplayMeans: a retry
// of a completed request answered 409 request-in-progress, or with a
// 5xx, was not replayed at all. The failure says what happened and what
// to look at, and does not call it a replay that differs (which sends
// the student to the stored bytes); a 5xx on every retry leaves the
// client without its answer, one a later retry gets past does not. A
// refusal that is an answer of its own (stage 3's duplicate-request) is
// still one that differs from the original, and, on every retry, leaves
// the client without its answer too: no usable answer, not another
// operation's.
func TestReplayByteIdentical_SaysWhatARetryThatIsNoReplayMeans(t *testing.T) {
	c, ok := grader.Lookup("S4.replay-byte-identical")
	if !ok {
		t.Fatal("no check S4.replay-byte-identical")
	}
	subject := grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}
	tests := []struct {
		name   string
		times  int
		answer http.HandlerFunc
		says   string
		harm   judging.Harm
	}{
		{"409 in progress once", 1, inProgress, "the key was still in progress, though its original had already answered", ""},
		{"a 500 once", 1, internalError, "the server failed answering a retry of a completed key", ""},
		{"a 500 on every retry", 0, internalError, "the retry before it failed too", judging.NoUsableAnswer},
		{"409 duplicate-request", 0, duplicate, "not byte-identical: status 409, the original was 201", judging.NoUsableAnswer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnswered(t, tc.times, tc.answer))
			var f *judging.Failure
			if !errors.As(r.Err, &f) {
				t.Fatalf("the check did not fail: %v", r.Err)
			}
			if !strings.Contains(f.Got, tc.says) {
				t.Errorf("got %q, want it to say %q", f.Got, tc.says)
			}
			if !strings.Contains(tc.says, "not byte-identical") && strings.Contains(f.Got, "not byte-identical") {
				t.Errorf("got %q: nothing was replayed, so no bytes differ", f.Got)
			}
			if f.Harm != tc.harm {
				t.Errorf("harm %q, want %q", f.Harm, tc.harm)
			}
		})
	}
}

// The solution itself passes through the same harness: the failures
// above come from the answers it puts in, not from the harness.
func TestReplayByteIdentical_HarnessPassesTheSolution(t *testing.T) {
	c, _ := grader.Lookup("S4.replay-byte-identical")
	subject := grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}
	never := func(w http.ResponseWriter, r *http.Request) { t.Errorf("answered %s %s", r.Method, r.URL.Path) }
	if r := grader.RunCheck(context.Background(), subject, c, 7, retriesAnswered(t, -1, never)); r.Err != nil {
		t.Errorf("stage 4's solution behind the harness: %v", r.Err)
	}
}
