// Package stage2 claims each request's Idempotency-Key under a UNIQUE
// constraint and stores with it a fingerprint of what the request asked
// for. A retry with the key is told the key was already used; a different
// request under the same key (an edited amount, another account) is told
// the key was reused for something else.
//
// As handed out, it is the solution of stage 1: it cannot tell a retry
// from an edited request under the same key. The TODO(stage 2) markers say
// what to add.
package stage2

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

// Server holds the handlers of stage 2.
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
// same key and body gets 409 duplicate-request, one with the same key and
// another body gets 422 idempotency-key-reused; neither moves anything.
//
// TODO(stage 2): the fingerprint is of the whole body exactly as the
// client sent it, here and in Deposit: the raw bytes that request.Transfer
// (and request.Deposit) return beside the decoded request, whose
// re-encoding is not the form another replica computes (fingerprint.go).
func (s *Server) Transfer(w http.ResponseWriter, r *http.Request) {
	req, _, err := request.Transfer(r)
	if err == nil {
		err = s.env.Bank.CheckTransfer(r.Context(), auth.Customer(r.Context()), req)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	s.serve(w, r, func(ctx context.Context, tx *sql.Tx, customer string) (any, string, error) {
		t, err := s.env.Bank.Transfer(ctx, tx, customer, req)
		return t, "/transfers/" + t.ID, err
	})
}

// Deposit executes a deposit once per Idempotency-Key, like Transfer.
func (s *Server) Deposit(w http.ResponseWriter, r *http.Request) {
	req, _, err := request.Deposit(r)
	if err == nil {
		err = s.env.Bank.CheckDeposit(r.Context(), auth.Customer(r.Context()), req)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	s.serve(w, r, func(ctx context.Context, tx *sql.Tx, customer string) (any, string, error) {
		d, err := s.env.Bank.Deposit(ctx, tx, customer, req)
		return d, "/deposits/" + d.ID, err
	})
}

// serve reads the request's key, waits on the core, then claims the key
// and runs op in one transaction: the claim and the money commit together
// or not at all, so a failed transfer leaves no claim behind.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, op operation) {
	ctx := r.Context()
	// The key is read before anything is claimed: a request without a
	// usable key is refused with nothing stored.
	key, err := idemkey.FromRequest(r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	// TODO(stage 2): when you are done, a body that cannot be fingerprinted
	// (fingerprint.go) gets its 400 here, like a missing key: nothing
	// claimed, nothing moved.
	if err := s.env.Bank.CallCore(ctx); err != nil {
		problem.Write(w, err)
		return
	}
	tx, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		problem.Write(w, err)
		return
	}
	defer tx.Rollback()
	// TODO(stage 2): the claim made here knows what this request asked for,
	// so that a used key's answer can tell a retry from another request
	// (see claim, keys.go).
	if err := claim(ctx, tx, key, s.env.Clock.Now()); err != nil {
		problem.Write(w, err)
		return
	}
	body, location, err := op(ctx, tx, auth.Customer(ctx))
	if err != nil {
		problem.Write(w, err)
		return
	}
	if err := tx.Commit(); err != nil {
		problem.Write(w, err)
		return
	}
	w.Header().Set("Location", location)
	respond.JSON(w, http.StatusCreated, body)
}
