package stage5

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// keySchema is the key table. It is an ordinary rowid table (the lab's
// event stream reads its rows by rowid). The UNIQUE constraint on key
// decides which of two requests with one key gets to execute; state says
// whether that execution is still running (in_progress) or has committed
// (completed). The response columns are set when the key completes: they
// are the answer every retry gets again (location is empty when there is
// none). Times are clock.Format strings (RFC 3339, UTC, milliseconds):
// fixed width, so they compare as text in the order they compare as
// instants.
//
// TODO(stage 5): when you are done, a key is one customer's, on one
// method and route pattern: the same key string sent by another customer,
// or by this one to another endpoint, is another key with its own result,
// and within one scope the database still decides which of two requests
// executes. Lesson 05, "Whose key" and "What you decide".
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id           INTEGER PRIMARY KEY,
	key          TEXT NOT NULL UNIQUE,
	fingerprint  TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
	created_at   TEXT NOT NULL,
	completed_at TEXT,
	status       INTEGER,
	content_type TEXT,
	location     TEXT,
	body         BLOB
)`

// retryAfter is how long a client should wait before retrying a request
// whose original is still in progress.
const retryAfter = time.Second

// createKeyTable creates idempotency_keys if it does not exist.
func createKeyTable(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, keySchema); err != nil {
		return fmt.Errorf("create idempotency_keys: %w", err)
	}
	return nil
}

// claim inserts key as in progress with the request's fingerprint fp, in
// its own short transaction, and returns the new row's id. The INSERT is
// the check: looking first and inserting after would let two simultaneous
// requests both see "no such key". If the key is already there, the
// existing row decides (see existing). Any other failure is 503
// unavailable: a request that could not be claimed must not execute.
//
// TODO(stage 5): when you are done, the key is claimed under its whole
// scope, and a completed key of that scope whose retention period has
// passed, counted from its completion on the lab clock with the retention
// in force, is forgotten: a request with it is a new request, whatever its
// body, and executes once, however many such requests arrive at once. A
// key one moment younger is still replayed, and a key in progress is
// never forgotten, however old. The claim forgets by the same rule as the
// purge (below). Lesson 05, "How long to remember", weighs where and when
// forgetting happens.
func claim(ctx context.Context, db *sql.DB, key, fp string, now time.Time) (id int64, stored *response, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, unavailable(err)
	}
	defer tx.Rollback()
	err = labdb.Savepoint(ctx, tx, func() error {
		return tx.QueryRowContext(ctx,
			`INSERT INTO idempotency_keys (key, fingerprint, state, created_at) VALUES (?, ?, 'in_progress', ?) RETURNING id`,
			key, fp, clock.Format(now)).Scan(&id)
	})
	switch {
	case err == nil:
		// The key is this request's, and id its new row.
	case labdb.IsUniqueViolation(err):
		if id, stored, err = existing(ctx, tx, key, fp); err != nil {
			return 0, nil, err
		}
	default:
		return 0, nil, unavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, unavailable(err)
	}
	return id, stored, nil
}

// existing decides what a request gets when its key is already there: 422
// idempotency-key-reused for a different fingerprint fp, whatever the
// state; 409 request-in-progress (with Retry-After) while the original
// runs; and once it has completed, its stored response, to be sent again.
// It returns 503 unavailable if the key store fails.
//
// TODO(stage 5): when you are done, a used key is answered from its own
// scope's row, never from another scope's: one customer is never replayed
// another's transfer, nor told 422 for another's body.
func existing(ctx context.Context, tx *sql.Tx, key, fp string) (id int64, stored *response, err error) {
	var storedFP, state string
	err = tx.QueryRowContext(ctx, `SELECT id, fingerprint, state FROM idempotency_keys WHERE key = ?`, key).
		Scan(&id, &storedFP, &state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The row our INSERT ran into is gone: its request failed before
		// the money moved and released it, after our INSERT and before
		// this read. On PostgreSQL, at READ COMMITTED, each statement
		// sees what has committed when it starts; on SQLite, one writer
		// at a time, it cannot happen. The key is free: a retry claims it.
		return 0, nil, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q has just ended without executing; retry with the same key", key)}
	case err != nil:
		return 0, nil, unavailable(err)
	case storedFP != fp:
		return 0, nil, problem.New(problem.IdempotencyKeyReused,
			"Idempotency-Key %q was first used with a different request; an edited request needs a new key", key)
	case state == "in_progress":
		return 0, nil, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}
	}
	stored = &response{}
	err = tx.QueryRowContext(ctx,
		`SELECT status, content_type, location, body FROM idempotency_keys WHERE id = ?`, id).
		Scan(&stored.status, &stored.contentType, &stored.location, &stored.body)
	if err != nil {
		return 0, nil, unavailable(err)
	}
	return id, stored, nil
}

// complete marks the key id completed with its response res inside tx,
// the transaction that carries the business write, so that the key is
// completed, and its answer stored, if and only if the money moved (or
// the request was refused for good, as for insufficient funds). It
// returns 503 unavailable if the key store fails.
func complete(ctx context.Context, tx *sql.Tx, id int64, res response, now time.Time) error {
	_, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, status = ?, content_type = ?, location = ?, body = ?
		 WHERE id = ?`,
		clock.Format(now), res.status, res.contentType, res.location, res.body, id)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// release deletes the in-progress claim id of a request that failed before
// its money moved, so that a retry executes. It is best effort: if the key
// store fails here too, the key stays in progress and its retries get 409
// request-in-progress (stage 6's lease is what frees such a key).
func release(ctx context.Context, db *sql.DB, id int64) {
	db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress'`, id)
}

// TODO(stage 5): write purge, behind Server.Purge: it forgets every
// completed key whose retention period, counted from its completion, has
// passed, by the same rule as the claim, and reports how many went. A key
// in progress is never forgotten, however old.

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
