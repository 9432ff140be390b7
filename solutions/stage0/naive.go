// Package stage0 is the naive server: it validates a transfer, waits on the
// core banking system, moves the money and answers 201. It is correct as
// long as every request arrives exactly once. Clients retry, so it is not.
package stage0

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

// Server holds the naive handlers.
type Server struct {
	env stage.Env
}

// New returns the naive handlers. They need no table of their own.
func New(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	return &Server{env: env}, nil
}

// operation is one business write: it runs inside tx on behalf of customer
// and returns the response body and the new resource's location.
type operation func(ctx context.Context, tx *sql.Tx, customer string) (body any, location string, err error)

// Transfer executes every request it receives. A client that got no answer
// and sends the same transfer again has it executed again.
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

// Deposit executes every request it receives, like Transfer.
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

// serve waits on the core, runs op in a transaction and answers 201.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, op operation) {
	ctx := r.Context()
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
