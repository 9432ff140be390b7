// Package stage3 records each Idempotency-Key in two phases: in progress
// when it is claimed, before the slow call to the core, and completed in
// the transaction that moves the money. A retry that arrives while the
// original is still running is told so, and waits; one that arrives after
// is told the key was already used. A request that fails before its money
// moved gives its key back, so that its retry executes.
package stage3

import (
	"context"
	"database/sql"
	"net/http"

	"idemlab/kit/auth"
	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
	"idemlab/kit/stage"
)

// Server holds the handlers of stage 3.
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
// and 409 duplicate-request after; one with the same key and another body
// gets 422 idempotency-key-reused. None of them moves anything.
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

// serve reads the request's key and fingerprints its raw body, claims the
// key as in progress, and executes op. If op fails, no money moved, and
// the claim is released so that a retry executes.
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
	id, err := claim(ctx, s.env.DB, key, fp, s.env.Clock.Now())
	if err != nil {
		problem.Write(w, err)
		return
	}
	body, location, err := s.execute(ctx, id, op)
	if err != nil {
		// The transaction rolled back, so no money moved. The release must
		// happen even if the client has gone away, hence WithoutCancel.
		release(context.WithoutCancel(ctx), s.env.DB, id)
		problem.Write(w, err)
		return
	}
	w.Header().Set("Location", location)
	respond.JSON(w, http.StatusCreated, body)
}

// execute waits on the core, then runs op and marks the key id completed
// in one transaction: the money moves and the key is completed together,
// or neither happens. It returns op's error, or the core's, or 503 if its
// transaction could not begin or the key could not be completed.
func (s *Server) execute(ctx context.Context, id int64, op operation) (any, string, error) {
	if err := s.env.Bank.CallCore(ctx); err != nil {
		return nil, "", err
	}
	tx, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", unavailable(err)
	}
	defer tx.Rollback()
	body, location, err := op(ctx, tx, auth.Customer(ctx))
	if err != nil {
		return nil, "", err
	}
	if err := complete(ctx, tx, id, s.env.Clock.Now()); err != nil {
		return nil, "", err
	}
	if err := tx.Commit(); err != nil {
		return nil, "", err
	}
	return body, location, nil
}
