// Package stage4 answers a retry with the answer its original got. The
// response (status, Content-Type, Location and the exact body bytes) is
// stored with the key, together with the money it reports, and a retry
// of a completed key gets it again, byte for byte, marked
// Idempotent-Replayed. A refusal for insufficient funds is an answer too:
// it is stored and replayed like a success.
//
// As handed out, it is the solution of stage 3: a retry of a completed key
// is told 409 duplicate-request, so a client whose answer got lost never
// learns the transfer's id, and a refusal for insufficient funds is not
// remembered. The TODO(stage 4) markers say what to change.
package stage4

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

// Server holds the handlers of stage 4.
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
	// TODO(stage 4): when you are done, a retry of a completed key is
	// answered here with its original's answer again, marked as a replay,
	// and nothing executes.
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
	// TODO(stage 4): when you are done, the first answer is byte for byte
	// what every replay of this key will get, without the replay marker.
	w.Header().Set("Location", location)
	respond.JSON(w, http.StatusCreated, body)
}

// execute waits on the core, then runs op and marks the key id completed
// in one transaction: the money moves and the key is completed together,
// or neither happens. It returns op's error, or the core's, or 503 if its
// transaction could not begin or the key could not be completed.
//
// TODO(stage 4): when you are done, this request's answer is stored with
// its key if and only if the key completes (its money moved, or it was
// refused for good, below), and what is stored is what is sent: a replay of
// a 201 is the first answer byte for byte (its Location, and its
// balance_after and created_at as they were then, even after later
// transfers and a move of the clock; the kit renders bodies to bytes with
// respond.Marshal and problem.Marshal). Insufficient funds
// (problem.InsufficientFunds) is a business outcome, not a failure: no
// money moved, and that 422 is this request's answer for good, stored and
// replayed like a success, even after a deposit would have made the
// transfer possible. Every other error still moves nothing and gives the
// key back. Lesson 04, "Store the answer", "Never recompute" and "A refusal
// is an answer", weighs the ways.
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
