package grader_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/labctl"
	"idemlab/solutions/stage3"
)

// oneLookInTheGap serves stage 3's solution as a server whose transfer
// holds the database across the core call does, on a machine slow enough
// that one read falls in between: while a transfer is on its way every
// other request waits for it, except reads of the lab's state up to and
// including the first that shows its key in progress (the reads that come
// between the claim's commit and a business transaction opened after it).
func oneLookInTheGap() func(http.Handler) http.Handler {
	type transfer struct {
		key    string
		peeked bool // a read has shown its key in progress
		done   chan struct{}
	}
	var mu sync.Mutex
	var flight *transfer
	waitFor := func() {
		mu.Lock()
		f := flight
		mu.Unlock()
		if f != nil {
			<-f.done
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/transfers":
				mu.Lock()
				if flight != nil {
					f := flight
					mu.Unlock()
					<-f.done
					next.ServeHTTP(w, r)
					return
				}
				flight = &transfer{key: r.Header.Get("Idempotency-Key"), done: make(chan struct{})}
				f := flight
				mu.Unlock()
				defer func() {
					mu.Lock()
					flight = nil
					mu.Unlock()
					close(f.done)
				}()
				next.ServeHTTP(w, r)
			case r.Method == http.MethodGet && r.URL.Path == "/lab/state":
				mu.Lock()
				f := flight
				peeked := f != nil && f.peeked
				mu.Unlock()
				if peeked {
					waitFor()
					next.ServeHTTP(w, r)
					return
				}
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				var st labctl.State
				if f != nil && json.Unmarshal(rec.Body.Bytes(), &st) == nil && judging.KeyInProgress(st, f.key) {
					mu.Lock()
					f.peeked = true
					mu.Unlock()
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// A server whose transactions stay open across the core call fails
// S3.retry-during-original even where the look that saw the key in
// progress came in the gap before the transaction, and answered at once:
// the finding must not rest on that look. Without Hold's read on its own
// after such a look and the payment watched for its whole wait, the check
// said it could not observe the server (a flake of the ladder on a busy
// machine). On a busy machine a run may end otherwise, rightly: it could
// not observe (no look in any try saw the key in progress in time), or it
// acted on a try whose look did not see the key, and the retries, made to
// wait for the original, were answered "done" (in about two runs of five
// under the race detector beside a full CI run). The test runs the check
// up to five times until it finds that the reads waited; before the fix,
// every run said it could not observe.
func TestRetryDuringOriginal_ALookInTheGapDoesNotHideHeldReads(t *testing.T) {
	c, _ := grader.Lookup("S3.retry-during-original")
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	const runs = 5
	for run := 1; run <= runs; run++ {
		r := grader.RunCheck(context.Background(), subject, c, uint64(4+run), serveWrapped(t, stage3.New, oneLookInTheGap()))
		var u *judging.Unobserved
		var f *judging.Failure
		switch {
		case errors.As(r.Err, &u):
			t.Logf("run %d: %v", run, r.Err)
		case !errors.As(r.Err, &f):
			t.Fatalf("run %d: got %v, want a failure: the lab's reads waited for the held payment", run, r.Err)
		case strings.Contains(f.Got, "it waited for the payment"):
			return
		case strings.Contains(f.Expected, "request-in-progress, with Retry-After, to every retry"):
			t.Logf("run %d: the retries waited for the original: %v", run, r.Err)
		default:
			t.Fatalf("run %d: got %v, want the failure that the lab's reads waited for the payment", run, r.Err)
		}
	}
	t.Fatalf("in %d runs, no failure that the lab's reads waited for the payment", runs)
}
