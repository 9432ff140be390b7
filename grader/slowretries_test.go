package grader_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/solutions/stage3"
)

// lateRetries holds every request sent while another with the same
// Idempotency-Key is still being served for delay before it reaches the
// server, for the first keys such requests come with: the retries a check
// sends at once while an original waits on the core reach the server
// only once that wait is over, as on a loaded machine.
func lateRetries(keys int, delay time.Duration) func(http.Handler) http.Handler {
	var mu sync.Mutex
	serving := map[string]int{}
	held := map[string]bool{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			if key == "" {
				next.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			hold := false
			if serving[key] > 0 && (held[key] || len(held) < keys) {
				held[key], hold = true, true
			}
			serving[key]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				serving[key]--
				mu.Unlock()
			}()
			if hold {
				time.Sleep(delay)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestRetryDuringOriginal_RetriesTooLateForEveryShortHold: the retries of
// the first three tries (core latencies of 300ms, 900ms and 2.7s) reach
// the server 3.2s late, after the original has answered, as on a loaded
// machine. The check then tries once more with a longer core wait, and
// solution 3 passes it; before, it said it could not observe the server
// while an original was in flight, and a server that mishandles such a
// retry (release-on-every-failure) went uncaught.
func TestRetryDuringOriginal_RetriesTooLateForEveryShortHold(t *testing.T) {
	c, ok := grader.Lookup("S3.retry-during-original")
	if !ok {
		t.Fatal("no check S3.retry-during-original")
	}
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	if r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage3.New, lateRetries(3, 3200*time.Millisecond))); !r.Passed() {
		t.Fatalf("S3.retry-during-original did not pass solution 3 whose retries came 3.2s late in the first three tries:\n%s", grader.Format(r, ""))
	}
}
