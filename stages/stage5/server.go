// Package stage5 scopes each Idempotency-Key to whoever sent it and where:
// a key is unique per customer, method and route pattern, so two customers
// who pick the same key string, or one customer who uses it on /transfers
// and on /deposits, get their own results and never each other's. A
// completed key is kept for the retention period of the lab clock, then
// forgotten: the same key after that is a new request. Purge removes the
// expired keys, and never one in progress.
//
// As handed out, it is the solution of stage 4: a key is one string for
// everybody and everywhere, so one customer can be replayed another's
// transfer, and keys are kept forever, so the table only grows. The
// TODO(stage 5) markers say what to change.
package stage5

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	"idemlab/kit/auth"
	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
	"idemlab/kit/stage"
)

// Server holds the handlers of stage 5.
type Server struct {
	env stage.Env
}

// New creates the key table if it does not exist and returns the handlers.
// It returns an error if the table cannot be created.
func New(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	if err := createKeyTable(ctx, env.DB); err != nil {
		return nil, err
	}
	return &Server{env: env}, nil
}

// operation is one business write: it runs inside tx on behalf of customer
// and returns the response body and the new resource's location.
type operation func(ctx context.Context, tx *sql.Tx, customer string) (body any, location string, err error)

// Transfer executes a transfer once per Idempotency-Key. A retry with the
// same key and body gets 409 request-in-progress while the original runs
// and the original's stored response after; one with the same key and
// another body gets 422 idempotency-key-reused. None of them moves
// anything.
func (s *Server) Transfer(w http.ResponseWriter, r *http.Request) {
	req, raw, err := request.Transfer(r)
	if err == nil {
		err = s.env.Bank.CheckTransfer(r.Context(), auth.Customer(r.Context()), req)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	s.serve(w, r, raw, func(ctx context.Context, tx *sql.Tx, customer string) (any, string, error) {
		t, err := s.env.Bank.Transfer(ctx, tx, customer, req)
		return t, "/transfers/" + t.ID, err
	})
}

// Deposit executes a deposit once per Idempotency-Key, like Transfer.
func (s *Server) Deposit(w http.ResponseWriter, r *http.Request) {
	req, raw, err := request.Deposit(r)
	if err == nil {
		err = s.env.Bank.CheckDeposit(r.Context(), auth.Customer(r.Context()), req)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	s.serve(w, r, raw, func(ctx context.Context, tx *sql.Tx, customer string) (any, string, error) {
		d, err := s.env.Bank.Deposit(ctx, tx, customer, req)
		return d, "/deposits/" + d.ID, err
	})
}

// serve reads the request's key and fingerprints its raw body, then either
// replays the stored response of a completed key, or claims the key as in
// progress and executes op. If op fails, no money moved, and the claim is
// released so that a retry executes.
//
// TODO(stage 5): when you are done, the key claimed here is scoped. A key
// string is the client's choice, and two customers may choose the same
// one; it names an operation only together with who sent it (the
// authenticated caller, auth.Customer, never anything from the body), the
// method and the route pattern the handler serves ("/transfers" or
// "/deposits"). The retention a key is judged by is the one in force for
// this request (s.env.Config()): the lab changes it while a server runs.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, raw []byte, op operation) {
	ctx := r.Context()
	key, err := idemkey.FromRequest(r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	fp, err := fingerprint(raw)
	if err != nil {
		problem.Write(w, err)
		return
	}
	// The claim commits on its own, before the slow call to the core: from
	// here on, a retry finds the key in progress instead of waiting behind
	// our transaction.
	id, stored, err := claim(ctx, s.env.DB, key, fp, s.env.Clock.Now())
	if err != nil {
		problem.Write(w, err)
		return
	}
	if stored != nil {
		stored.write(w, true)
		return
	}
	res, err := s.execute(ctx, id, op)
	if err != nil {
		// The transaction rolled back, so no money moved. The release must
		// happen even if the client has gone away, hence WithoutCancel.
		release(context.WithoutCancel(ctx), s.env.DB, id)
		problem.Write(w, err)
		return
	}
	res.write(w, false)
}

// execute waits on the core, then runs op and completes the key id with
// its response in one transaction: the money moves and the answer is
// stored together, or neither happens. It returns the response to send:
// the one it stored, byte for byte. It returns op's error, or the core's,
// or 503 if its transaction could not begin or the key could not be
// completed.
func (s *Server) execute(ctx context.Context, id int64, op operation) (response, error) {
	if err := s.env.Bank.CallCore(ctx); err != nil {
		return response{}, err
	}
	tx, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		return response{}, unavailable(err)
	}
	defer tx.Rollback()
	body, location, err := op(ctx, tx, auth.Customer(ctx))
	var res response
	switch {
	case errors.Is(err, problem.InsufficientFunds):
		// A business outcome, not a failure: no money moved, and that is
		// the answer to this request for good, even if money arrives later.
		status, b := problem.Marshal(err)
		res = response{status: status, contentType: problem.ContentType, body: b}
	case err != nil:
		return response{}, err
	default:
		// Marshal once: these bytes are both stored and sent.
		b, err := respond.Marshal(body)
		if err != nil {
			return response{}, err
		}
		res = response{status: http.StatusCreated, contentType: respond.ContentType, location: location, body: b}
	}
	if err := complete(ctx, tx, id, res, s.env.Clock.Now()); err != nil {
		return response{}, err
	}
	if err := tx.Commit(); err != nil {
		return response{}, err
	}
	return res, nil
}

// TODO(stage 5): implement stage.Purger: a method Purge(ctx) (int64,
// error) on Server that deletes the completed keys whose retention period
// (s.env.Config().Retention, counted on s.env.Clock) has passed, and
// reports how many went. The kit calls it every 30 seconds, after every
// move of the lab clock and on POST /lab/purge. Never delete a key in
// progress, however old: its request may still be running, and a retry
// that found its key gone would execute a second time.
