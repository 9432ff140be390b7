package grader

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// A crashed request whose client is still told to wait past its retry
// horizon (S6.crash-recovery, judgeUnconverged) is judged by its key's
// row, as every client told to wait until it stops is (toldToWait), not
// by whether its operation ran: a row in progress is a stuck key, its
// operation run or not; a row completed, or a key table shown whole
// without one, no usable answer; a key table the lab does not show, no
// usable answer that says whether the key is stuck cannot be seen.
// Before, an operation that ran made no usable answer and one that never
// ran a stuck key, whatever the row. The books come first: the op's
// executions are reconciled before the key is judged.
func TestUnconverged_TheKeyTableSaysWhichHarm(t *testing.T) {
	const key, op = "k-crashed", "op-crashed"
	row := func(state string) []map[string]any {
		return []map[string]any{{"key": key, "state": state}}
	}
	for _, tc := range []struct {
		name string
		ran  int64
		keys []map[string]any
		harm judging.Harm
		why  string
	}{
		{"in progress, ran", 1, row(judging.StateInProgress), judging.StuckKey, "the key says something does"},
		{"in progress, never ran", 0, row(judging.StateInProgress), judging.StuckKey, "the key says something does"},
		{"completed, ran", 1, row(judging.StateCompleted), judging.NoUsableAnswer, "its key is not in progress"},
		{"completed, never ran", 0, row(judging.StateCompleted), judging.NoUsableAnswer, "its key is not in progress"},
		{"no row, never ran", 0, []map[string]any{{"key": "someone-else", "state": judging.StateCompleted}}, judging.NoUsableAnswer, "its key is not in progress"},
		{"no key table, never ran", 0, nil, judging.NoUsableAnswer, "cannot be seen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unconvergedOn(t, key, op, tc.ran, tc.keys)
			f, ok := err.(*judging.Failure)
			if !ok {
				t.Fatalf("still told to wait: %v, want a failure", err)
			}
			if f.Harm != tc.harm {
				t.Errorf("harm %q, want %q:\n%s", f.Harm, tc.harm, f.Got)
			}
			if !strings.Contains(f.Expected, "201 Created in the end") || !strings.Contains(f.Expected+f.Got, tc.why) {
				t.Errorf("expected %q, got %q: want them to say %q", f.Expected, f.Got, tc.why)
			}
			if want := "op " + op + " " + history.Executed(tc.ran); !strings.Contains(f.Got, want) {
				t.Errorf("got %q, want it to say %q", f.Got, want)
			}
		})
	}
	t.Run("the books first", func(t *testing.T) {
		err := unconvergedOn(t, key, op, 2, row(judging.StateInProgress))
		if f, ok := err.(*judging.Failure); !ok || f.Harm != judging.Double {
			t.Errorf("op run twice, its key in progress: %v, want %q", err, judging.Double)
		}
	})
}

// unconvergedOn judges a crashed request of key, op, whose client is
// told to wait on every retry, against a lab whose state shows op run
// ran times and keys as its key table: the books expect op once if it
// ran.
func unconvergedOn(t *testing.T, key, op string, ran int64, keys []map[string]any) error {
	c := labStub(t, labctl.State{
		Executions: map[string]int64{op: ran},
		Keys:       keys,
		Config:     labctl.ConfigJSON{Lease: "2s", RetryHorizon: "1m"},
	})
	books := &judging.Books{Balances: map[string]int64{}, Executions: map[string]int64{op: 0}}
	req := Request{Method: "POST", Path: "/transfers", Key: key, Body: `{"metadata":{"op":"` + op + `"}}`}
	u := unconverged{req, c.Do(req), op, func() { books.Executions[op]++ }}
	return c.judgeUnconverged("the crash, and its retries", []unconverged{u}, books, "201 Created in the end")
}

// labStub is a check against a server that tells every POST to wait (409
// request-in-progress), moves its lab clock when asked, and shows st as
// its lab state.
func labStub(t *testing.T, st labctl.State) *T {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/lab/state":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(st)
		case r.URL.Path == "/lab/clock":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"now":"2026-01-01T00:00:00Z"}`))
		default:
			status, body := problem.Marshal(problem.New(problem.RequestInProgress, "the original is still being processed"))
			w.Header().Set("Content-Type", problem.ContentType)
			w.WriteHeader(status)
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	h := history.NewRecorder()
	t.Cleanup(h.Close)
	return &T{ctx: context.Background(), target: &targets.Target{URL: srv.URL, Client: srv.Client(), Replicas: []string{srv.URL}},
		rng: rand.New(rand.NewPCG(7, 0)), cleanups: &cleanupList{}, differences: &[]*judging.Failure{}, history: h, heldReads: &heldReads{}}
}
