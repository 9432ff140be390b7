package grader_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/problem"
	"idemlab/solutions/stage3"
)

// originalsLate holds the first request of each Idempotency-Key for delay
// before it reaches the server, as a loaded machine's scheduler can: a
// retry sent after it reaches the server first and claims the key, and
// the roles of original and retry swap.
func originalsLate(delay time.Duration) func(http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			mu.Lock()
			first := key != "" && !seen[key]
			seen[key] = true
			mu.Unlock()
			if first {
				time.Sleep(delay)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// unavailableAsDuplicate answers 409 duplicate-request wherever the server
// answered a request with an Idempotency-Key 503, as a server that answers
// a key it could not read with a made-up state does.
func unavailableAsDuplicate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if rec.Code == http.StatusServiceUnavailable {
			problem.Write(w, problem.New(problem.DuplicateRequest, "made up"))
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// keyUnread is S3.retry-during-original run with only its round whose
// retry's read of the key table fails.
var keyUnread = grader.Check{ID: "S3.retry-during-original", Stage: 3, Run: grader.RetryWithTheKeyUnread}

// TestRetryWithTheKeyUnread_RolesSwapped: the original reaches the server
// 200ms late, after its retry has claimed the key, and the original's read
// is the one refused. Solution 3 answers it 503 and passes; a server that
// answers it 409 duplicate-request fails with no usable answer, the
// original judged in the retry's place.
func TestRetryWithTheKeyUnread_RolesSwapped(t *testing.T) {
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	const delay = 200 * time.Millisecond
	if r := grader.RunCheck(context.Background(), subject, keyUnread, 1, serveWrapped(t, stage3.New, originalsLate(delay))); !r.Passed() {
		t.Errorf("solution 3, its original late:\n%s", grader.Format(r, ""))
	}
	late := originalsLate(delay)
	wrong := func(h http.Handler) http.Handler { return late(unavailableAsDuplicate(h)) }
	r := grader.RunCheck(context.Background(), subject, keyUnread, 1, serveWrapped(t, stage3.New, wrong))
	var f *judging.Failure
	if !errors.As(r.Err, &f) || f.Harm != judging.NoUsableAnswer {
		t.Errorf("a server that answers the original, whose read was refused, 409 duplicate-request: want %q:\n%s", judging.NoUsableAnswer, grader.Format(r, ""))
	}
}
