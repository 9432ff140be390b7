// Package aftercommit is an audit adapter for the final design as a
// middleware (../final) that does not share the handler's transaction:
// the handler commits the money on its own, and the middleware completes
// the key after, in a transaction of its own. Everything else is the
// same, and lab audit finds money moved twice or a key stuck in progress
// exactly where the two commits are apart: a crash between them, a store
// failure at the second, an original that outlives its lease
// (docs/audit.md, "The transaction boundary").
package aftercommit

import (
	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware without the lab's shared transaction.
func New(env audit.Env) (audit.Middleware, error) {
	env.Share = nil
	return final.New(env)
}
