// Package naive is an audit adapter for an idempotency middleware of the
// kind that is written in an afternoon: a map in memory from key to the
// answer. It looks right in a demo and in a unit test that sends one
// request at a time. lab audit --pkg ./audit/examples/naive shows what it
// does to money:
//
//   - check-then-act: it looks the key up under its lock, lets go of the
//     lock, runs the request, and records the answer after; two requests
//     with one key, at once or a retry during the original, both execute;
//   - keys are not scoped: a key is a string, whoever sends it, so one
//     customer is answered with another's transfer;
//   - the answer is recorded without its body: a retry gets the status and
//     headers (a cookie included) and no receipt;
//   - no fingerprint: an edited resubmission with the old key is told it
//     succeeded, and nothing moves;
//   - every answer is recorded, a 500 included, so an operation that
//     failed before its money moved can never run;
//   - the map lives in the process: after a crash, every retry runs again.
//
// It also differs from the contract where money is not at stake: its
// errors are plain text, and it marks a replay with X-Idempotent-Replay
// rather than Idempotent-Replayed.
package naive

import (
	"net/http"
	"sync"

	"idemlab/audit"
)

// New builds the in-memory middleware. It uses nothing from env: it keeps
// no table, reads no clock, and does not know who sent a request.
func New(env audit.Env) (audit.Middleware, error) {
	s := &store{answers: map[string]answer{}}
	return audit.Middleware{Wrap: s.wrap}, nil
}

// answer is what the middleware remembers of a response.
type answer struct {
	status int
	header http.Header
}

type store struct {
	mu      sync.Mutex
	answers map[string]answer
}

func (s *store) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			http.Error(w, "Idempotency-Key header required", http.StatusBadRequest)
			return
		}
		if len(key) > 255 {
			http.Error(w, "Idempotency-Key too long", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		a, seen := s.answers[key]
		s.mu.Unlock()
		if seen {
			for name, values := range a.header {
				w.Header()[name] = values
			}
			w.Header().Set("X-Idempotent-Replay", "true")
			w.WriteHeader(a.status)
			return
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		s.answers[key] = answer{status: rec.status, header: w.Header().Clone()}
		s.mu.Unlock()
	})
}

// recorder passes a response through and notes its status.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
