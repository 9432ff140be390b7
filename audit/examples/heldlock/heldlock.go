// Package heldlock is an audit adapter for the final design as a
// middleware (../final) behind a lock in memory on each key, the kind a
// team adds to turn away a double click early, whose unlock was
// forgotten: the lock outlives its request, and every later request of
// that key is told, in plain text, 409 Conflict for good. A retry that
// arrives while the original runs gets the same 409, which differs from
// the contract only in its form; the money finding is what comes after:
// the operation executed, its request ended, and its client can never
// learn its result (docs/audit.md, "How money is judged").
package heldlock

import (
	"net/http"
	"sync"

	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware behind the lock. It returns final.New's
// error.
func New(env audit.Env) (audit.Middleware, error) {
	l := &locks{held: map[string]bool{}}
	return final.NewWithin(env, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := env.Customer(r) + " " + r.URL.Path + " " + r.Header.Get("Idempotency-Key")
			if !l.take(name) {
				http.Error(w, "this request is already being processed", http.StatusConflict)
				return
			}
			inner.ServeHTTP(w, r)
		})
	})
}

// locks are the keys whose requests are running, or so it believes: a
// key once taken is never let go.
type locks struct {
	mu   sync.Mutex
	held map[string]bool
}

// take locks name and reports whether it was free.
func (l *locks) take(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] {
		return false
	}
	l.held[name] = true
	return true
}
