// Package audit grades an idempotency middleware written for net/http, a
// library's or a team's own, with the lab's check catalogue: the
// middleware is wrapped around the naive handlers of stage 0, which
// execute every request they receive, and the result is graded with the
// checks of stages 0 to 6, whose ideas a middleware can hold (stage 7's
// settings are no middleware's business). Whatever keeps the money from moving twice is then the
// middleware's doing.
//
// The middleware is built by an adapter: a small package that exports
//
//	func New(env audit.Env) (audit.Middleware, error)
//
// and builds the library's middleware from the lab's database, clock and
// settings (docs/audit.md has a template). lab audit --pkg PATH compiles
// the adapter at PATH into a lab server of its own and runs the catalogue
// against it in child processes, as lab grade does with a stage.
package audit

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/auth"
	"idemlab/kit/clock"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
)

// Stage is the stage a middleware is graded as: the last stage of
// idempotency keys, so that every check of theirs runs, crash recovery
// included.
const Stage = 6

// Env is what an adapter may use to build its middleware.
type Env struct {
	// DB is the lab database. A middleware that keeps its keys in SQL
	// keeps them here; in a table named idempotency_keys, with a state
	// column (in_progress, completed) and the key string in a column of
	// its own, the checks that must see the key store can read it, and the
	// store-unavailable fault can break it.
	DB *sql.DB
	// Clock is the lab clock: the checks move it to test retention and
	// leases, so a middleware that reads the time must read it here.
	Clock *clock.Clock
	// Config reports the lab settings in force now (retention, lease);
	// they can change at any time.
	Config func() stage.Config
	// Customer returns the customer a request is authenticated as: the
	// lab authenticates every request before the middleware runs. A
	// library that scopes keys to a user is given this.
	Customer func(r *http.Request) string
	// Share returns r with a Unit in its context: the transaction in
	// which the handler's business write will wait for the middleware's
	// commit. It stands for a library that opens the transaction and
	// hands it to the handler; an adapter of a library that does not
	// leaves it unused, and the handler commits on its own.
	Share func(r *http.Request) (*http.Request, *Unit)
}

// Middleware is the middleware under audit, as its adapter built it.
type Middleware struct {
	// Wrap is the library's middleware: it wraps the handler of
	// POST /transfers and of POST /deposits.
	Wrap func(http.Handler) http.Handler
	// Purge, if the library removes expired keys when asked, does so and
	// reports how many went; nil if it has no such call.
	Purge func(ctx context.Context) (int64, error)
}

// Within returns m with outer around it: for each handler, outer's layer
// runs first and calls m's. An adapter adds a layer of its own to a
// library's middleware with it.
func (m Middleware) Within(outer func(http.Handler) http.Handler) Middleware {
	wrap := m.Wrap
	m.Wrap = func(next http.Handler) http.Handler { return outer(wrap(next)) }
	return m
}

// Adapter builds a middleware from the lab's env; it is an adapter
// package's New. The lab calls it again after every reset, which drops
// the idempotency_keys table: an adapter creates its tables in it, if
// they do not exist.
type Adapter func(env Env) (Middleware, error)

// Subject is the middleware new builds, wrapped around stage 0's naive
// handlers, as a subject the grader runs at Stage. name says where the
// adapter lives (its package path).
func Subject(name string, new Adapter) grader.Subject {
	return grader.Subject{Stage: Stage, Name: name, New: factory(new)}
}

// ServeChild serves the middleware new builds as a lab server, when a
// targets.Child starts the binary (see targets.ServeChild), and returns the
// process's exit status. It is the whole main of the binary lab audit
// builds around an adapter.
func ServeChild(name string, new Adapter) int {
	return targets.ServeChild(Subject(name, new))
}

// factory builds the naive handlers and wraps each in the middleware.
func factory(new Adapter) stage.Factory {
	return func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		handlerEnv := env
		handlerEnv.DB = handlerDB(env.DB)
		naive, err := stage0.New(ctx, handlerEnv)
		if err != nil {
			return nil, err
		}
		mw, err := new(Env{DB: env.DB, Clock: env.Clock, Config: env.Config, Customer: customer, Share: share(env.DB)})
		if err != nil {
			return nil, fmt.Errorf("build the middleware: %w", err)
		}
		if mw.Wrap == nil {
			return nil, fmt.Errorf("build the middleware: the adapter returned no Wrap")
		}
		h := handlers{transfer: mw.Wrap(http.HandlerFunc(naive.Transfer)), deposit: mw.Wrap(http.HandlerFunc(naive.Deposit))}
		if mw.Purge != nil {
			return purging{handlers: h, purge: mw.Purge}, nil
		}
		return h, nil
	}
}

func customer(r *http.Request) string { return auth.Customer(r.Context()) }

// handlers are the naive handlers, each behind the middleware.
type handlers struct {
	transfer, deposit http.Handler
}

func (h handlers) Transfer(w http.ResponseWriter, r *http.Request) { h.transfer.ServeHTTP(w, r) }
func (h handlers) Deposit(w http.ResponseWriter, r *http.Request)  { h.deposit.ServeHTTP(w, r) }

// purging are handlers whose middleware purges expired keys when asked
// (stage.Purger): POST /lab/purge and the lab's periodic purge call it.
type purging struct {
	handlers
	purge func(ctx context.Context) (int64, error)
}

func (p purging) Purge(ctx context.Context) (int64, error) { return p.purge(ctx) }
