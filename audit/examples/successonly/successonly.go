// Package successonly is an audit adapter for the final design as a
// middleware (../final) that keeps only its successes, as many libraries
// do: a 2xx is stored and replayed, and every other answer frees the key,
// a refusal for insufficient funds included. A client that lost that
// refusal retries; if money has come into the account meanwhile, the
// retry executes, and moves money its client was told would not move
// (S4.insufficient-funds-replayed). Everything else is final's, and lab
// audit finds nothing else. From the outside (lab conform) it is clean:
// conform never retries a refusal once its reason has gone.
package successonly

import (
	"idemlab/audit"
	"idemlab/audit/examples/final"
)

// New builds the final middleware with no refusal kept as an outcome. It
// returns final.NewKeeping's error.
func New(env audit.Env) (audit.Middleware, error) {
	return final.NewKeeping(env)
}
