// Package every409 is a wrong middleware for the grader's own tests: the
// final design (audit/examples/final) behind a lock in memory on each key
// that is never let go, answering every later request of the key 409
// request-in-progress as problem details, Retry-After and all. The
// original executes once and answers 201; every retry, however late, is
// told the key is in progress, for good, and a client whose first answer
// was lost can never learn its result.
package every409

import (
	"net/http"
	"sync"
	"time"

	"idemlab/audit"
	"idemlab/audit/examples/final"
	"idemlab/kit/problem"
)

// New builds the final middleware behind the lock.
func New(env audit.Env) (audit.Middleware, error) {
	var mu sync.Mutex
	held := map[string]bool{}
	return final.NewWithin(env, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			if key == "" {
				inner.ServeHTTP(w, r)
				return
			}
			name := env.Customer(r) + " " + r.URL.Path + " " + key
			mu.Lock()
			taken := held[name]
			held[name] = true
			mu.Unlock()
			if taken {
				problem.Write(w, &problem.Error{Type: problem.RequestInProgress, RetryAfter: time.Second,
					Detail: "a request with this key is in progress"})
				return
			}
			inner.ServeHTTP(w, r)
		})
	})
}
