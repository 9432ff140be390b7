// Package sharedscope is an audit adapter for the final design as a
// middleware (../final) told that every request comes from one customer:
// its keys are scoped by method, path and key only. A middleware replays
// before the handler looks at whose account a body names, so when a
// second customer sends the first one's exact request under its key after
// the first has completed, the second is handed the first one's transfer,
// id and all. Sent at once, the second request meets the first one's claim
// and is told to wait: the leak shows only one after the other, and lab
// audit probes both (docs/audit.md, "How money is judged").
package sharedscope

import (
	"net/http"

	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware with a scope that leaves the customer
// out. It returns final.New's error.
func New(env audit.Env) (audit.Middleware, error) {
	env.Customer = func(*http.Request) string { return "" }
	return final.New(env)
}
