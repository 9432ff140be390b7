// Package auditserve serves the audit examples (audit/examples) over
// HTTP, for lab conform to attack from the outside: each example's
// middleware wrapped around stage 0's naive handlers by the audit's own
// wiring (audit.Subject), in a lab server on a database in memory. The
// lab endpoints are on, behind an admin token, only so that a harness can
// reset the bank once and learn its customers; lab conform never calls
// them.
package auditserve

import (
	"context"
	"fmt"
	"slices"

	"idemlab/audit"
	"idemlab/audit/examples/aftercommit"
	"idemlab/audit/examples/final"
	"idemlab/audit/examples/heldlock"
	"idemlab/audit/examples/naive"
	"idemlab/audit/examples/nomarker"
	"idemlab/audit/examples/sharedscope"
	"idemlab/audit/examples/successonly"
	"idemlab/audit/testdata/every409"
	"idemlab/audit/testdata/nolocation"
	"idemlab/audit/testdata/remoteaddr"
	"idemlab/kit/bank"
	"idemlab/kit/server"
)

// examples are the audit examples, by the name of their folder.
var examples = map[string]audit.Adapter{
	"naive":       naive.New,
	"final":       final.New,
	"aftercommit": aftercommit.New,
	"heldlock":    heldlock.New,
	"nomarker":    nomarker.New,
	"sharedscope": sharedscope.New,
	"successonly": successonly.New,
}

// wrong are middlewares wrong in one way each, kept in audit/testdata for
// the grader's own tests, by the name of their folder there; New serves
// them as it serves the examples, and Names does not list them.
var wrong = map[string]audit.Adapter{
	"every409":   every409.New,
	"nolocation": nolocation.New,
	"remoteaddr": remoteaddr.New,
}

// Names are the examples' names, sorted.
func Names() []string {
	out := make([]string, 0, len(examples))
	for name := range examples {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// New builds a lab server of the example called name (one of Names, or of
// the wrong middlewares in audit/testdata), with
// admin as its admin token. It returns an error for a name it does not
// know, or the server's own.
func New(ctx context.Context, name, admin string) (*server.Server, error) {
	pkg := "idemlab/audit/examples/" + name
	adapter, ok := examples[name]
	if !ok {
		pkg = "idemlab/audit/testdata/" + name
		if adapter, ok = wrong[name]; !ok {
			return nil, fmt.Errorf("no audit example %q; the examples are %v", name, Names())
		}
	}
	subject := audit.Subject(pkg, adapter)
	return server.New(ctx, server.Options{DB: ":memory:", Stage: subject.New, Lab: true, AdminToken: admin})
}

// Profile is the environment lab conform's profile of the lab's API
// (testdata/profiles/lab.json) reads: two customers' tokens, each with
// the account its money leaves and the one it goes to.
func Profile(customers []bank.Customer) (map[string]string, error) {
	if len(customers) < 2 || len(customers[0].Accounts) < 2 || len(customers[1].Accounts) < 2 {
		return nil, fmt.Errorf("the profile needs two customers of two accounts each; the reset made %d", len(customers))
	}
	env := map[string]string{}
	for i, suffix := range []string{"A", "B"} {
		c := customers[i]
		env["LAB_TOKEN_"+suffix] = c.Token
		env["LAB_FROM_"+suffix] = c.Accounts[0]
		env["LAB_TO_"+suffix] = c.Accounts[1]
	}
	return env, nil
}
