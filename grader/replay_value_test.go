package grader_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage6"
	"idemlab/solutions/stage8"
)

// replaysRewritten serves stage 6's solution, but passes the body of
// every replay (an answer marked Idempotent-Replayed: true) through
// rewrite first, as a server that decodes its stored answer and encodes
// it again would.
func replaysRewritten(rewrite func(map[string]any)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Only a request with a key can be replayed. The rest, the
			// lab's event stream among them, go straight through: a
			// recorder would hold the stream's answer until it ends, and
			// the check would wait for it.
			if r.Header.Get("Idempotency-Key") == "" {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			var v map[string]any
			if rec.Header().Get("Idempotent-Replayed") == "true" && json.Unmarshal(body, &v) == nil {
				rewrite(v)
				// Members sorted by name, and indented: other bytes.
				body, _ = json.MarshalIndent(v, "", "  ")
				rec.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
}

// The checks that compare a replay with its original besides
// S4.replay-byte-identical ask whether it is the client's own answer, not
// how it is spelled: a server whose replays carry the stored answer's
// value in other bytes (members sorted, indented) fails
// S4.replay-byte-identical alone, as a contract difference, and passes
// the others. A replay that says something else (another balance_after,
// as a recomputed one does, or a refusal that names another transfer) is
// still caught by them.
func TestReplayValue_ARespelledReplayFailsOnlyTheByteCheck(t *testing.T) {
	sixth := grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}
	eighth := grader.Subject{Stage: 8, Name: "solutions/stage8", New: stage8.New}
	respell := func(map[string]any) {}
	recompute := func(v map[string]any) {
		if b, ok := v["balance_after"].(float64); ok {
			v["balance_after"] = b + 1
		}
	}
	renamed := func(v map[string]any) {
		if d, ok := v["detail"].(string); ok {
			v["detail"] = strings.Replace(d, "tr_", "tr_0", 1)
		}
	}
	tests := []struct {
		subject grader.Subject
		check   string
		rewrite func(map[string]any)
		pass    bool
	}{
		{sixth, "S4.replay-byte-identical", respell, false},
		{sixth, "S4.insufficient-funds-replayed", respell, true},
		{sixth, "S5.customers-scoped", respell, true},
		{sixth, "S5.endpoints-scoped", respell, true},
		{sixth, "S5.retention-boundary", respell, true},
		{sixth, "S5.purge-bounded", respell, true},
		{sixth, "S5.purge-keeps-in-progress", respell, true},
		{sixth, "S6.late-original-fenced", respell, true},
		{eighth, "S8.refusal-replayed", respell, true},
		{sixth, "S5.retention-boundary", recompute, false},
		{sixth, "S6.late-original-fenced", recompute, false},
		{eighth, "S8.refusal-replayed", renamed, false},
	}
	for _, tc := range tests {
		name := tc.check + "/respelled"
		if !tc.pass && tc.check != "S4.replay-byte-identical" {
			name = tc.check + "/says-otherwise"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, ok := grader.Lookup(tc.check)
			if !ok {
				t.Fatalf("no check %s", tc.check)
			}
			r := grader.RunCheck(context.Background(), tc.subject, c, 1, serveWrapped(t, tc.subject.New, replaysRewritten(tc.rewrite)))
			switch {
			case tc.pass && !r.Passed():
				t.Fatalf("%s failed a server that respells its replays: %v", tc.check, r.Err)
			case !tc.pass && !r.Caught():
				t.Fatalf("%s did not catch it: %v", tc.check, r.Err)
			case tc.check == "S4.replay-byte-identical" && r.Harm() != "":
				t.Fatalf("harm %q for a replay that says the same in other bytes, want a contract difference: %v", r.Harm(), r.Err)
			}
		})
	}
}

// S6.late-original-fenced compares the last retry with what the retry
// that took the key over was told one way in every round
// (replayOfAnother2xx): a last retry that tells another balance than the
// retry's 201 is the wrong answer it is, as it is after a 200. Before,
// the round whose original wakes while the retry still runs called it a
// contract difference when the retry was told 201.
func TestLateOriginalFenced_ALastRetryTellingAnotherBalanceIsAWrongAnswer(t *testing.T) {
	c, ok := grader.Lookup("S6.late-original-fenced")
	if !ok {
		t.Fatal("no check S6.late-original-fenced")
	}
	sixth := grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}
	recompute := func(v map[string]any) {
		if b, ok := v["balance_after"].(float64); ok {
			v["balance_after"] = b + 1
		}
	}
	r := grader.RunCheck(context.Background(), sixth, c, 1, serveWrapped(t, sixth.New, replaysRewritten(recompute)))
	if r.Harm() != judging.WrongAnswer {
		t.Fatalf("harm %q, want a wrong answer: the last retry told another balance than the retry\n%s", r.Harm(), grader.Format(r, ""))
	}
}
