// Package nolocation is a wrong middleware for the grader's own tests:
// the final design (audit/examples/final) whose replays drop the
// Location header: the body is the original's, byte for byte, and the
// client is not told where the transfer is.
package nolocation

import (
	"net/http"

	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware with Location dropped from replays.
func New(env audit.Env) (audit.Middleware, error) {
	return final.NewWithin(env, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(dropper{w}, r)
		})
	})
}

// dropper deletes Location from an answer marked as a replay.
type dropper struct{ http.ResponseWriter }

func (d dropper) WriteHeader(status int) {
	if d.Header().Get("Idempotent-Replayed") != "" {
		d.Header().Del("Location")
	}
	d.ResponseWriter.WriteHeader(status)
}
