// Package stage1 claims each request's Idempotency-Key under a UNIQUE
// constraint before it moves money. Of many requests with one key, the
// database lets exactly one claim it, and only that one executes; the
// others are told the key was already used.
//
// As handed out, it is still the naive server of stage 0: it executes
// every request it receives. The TODO(stage 1) markers say what to add.
package stage1

import (
	"context"
	"database/sql"
	"net/http"

	"idemlab/kit/auth"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
	"idemlab/kit/stage"
)

// Server holds the handlers of stage 1.
type Server struct {
	env stage.Env
}

// New creates the key table if it does not exist and returns the handlers.
// It returns an error if the table cannot be created.
//
// TODO(stage 1): the key table exists before the first request (see
// keys.go); if it cannot be made, New fails with that error.
func New(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	return &Server{env: env}, nil
}

// operation is one business write: it runs inside tx on behalf of customer
// and returns the response body and the new resource's location.
type operation func(ctx context.Context, tx *sql.Tx, customer string) (body any, location string, err error)

// Transfer executes a transfer once per Idempotency-Key. A retry with the
// same key gets 409 duplicate-request and moves nothing.
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
	// TODO(stage 1): when you are done, a request without a usable key
	// (idemkey.FromRequest says which) gets its 400 here, before anything
	// is claimed or moved: nothing stored, nothing moved.
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
	// TODO(stage 1): when you are done, the key is claimed here (claim,
	// keys.go), and a key is spent if and only if its money moved: no
	// money moves under a key that was not claimed, and a request that
	// fails after its claim (insufficient funds, an internal error, a
	// client that hangs up during the core wait) leaves its key free, so
	// that its retry executes instead of hearing 409 "already executed"
	// for money that never moved. A failed claim answers with its error
	// and moves nothing. Lesson 01, "What you decide", weighs where the
	// claim can go and what each place costs.
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
