// Package remoteaddr is a wrong middleware for the grader's own tests:
// the final design (audit/examples/final) with its keys scoped by the
// customer and the client's remote address (host and port), as a library
// that scopes keys "by client" from the connection does. A retry that
// comes over another connection is another scope: it executes again.
package remoteaddr

import (
	"net/http"

	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware scoped by remote address.
func New(env audit.Env) (audit.Middleware, error) {
	customer := env.Customer
	env.Customer = func(r *http.Request) string { return customer(r) + "@" + r.RemoteAddr }
	return final.New(env)
}
