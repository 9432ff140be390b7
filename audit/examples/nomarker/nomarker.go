// Package nomarker is an audit adapter for the final design as a
// middleware (../final) that replays every answer faithfully, byte for
// byte, and never says so: it sends no Idempotent-Replayed header. The
// money is as safe as final's, and lab audit says so: the missing marker
// is a contract difference (S4.replay-marker-only-on-replays), never a
// money finding, because the grader judges money from the books and from
// the operations the answers name, not from a header the server chose
// (docs/audit.md, "How money is judged").
package nomarker

import (
	"net/http"

	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware and strips the replay marker from
// every answer it sends. It returns final.New's error.
func New(env audit.Env) (audit.Middleware, error) {
	return final.NewWithin(env, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(unmarked{w}, r)
		})
	})
}

// unmarked drops Idempotent-Replayed from the headers before they go.
type unmarked struct{ http.ResponseWriter }

func (u unmarked) WriteHeader(status int) {
	u.Header().Del("Idempotent-Replayed")
	u.ResponseWriter.WriteHeader(status)
}

func (u unmarked) Write(b []byte) (int, error) {
	u.Header().Del("Idempotent-Replayed")
	return u.ResponseWriter.Write(b)
}
