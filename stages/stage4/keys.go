package stage4

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
// (completed). Times are clock.Format strings (RFC 3339, UTC,
// milliseconds): fixed width, so they compare as text in the order they
// compare as instants.
//
// TODO(stage 4): when you are done, a completed key's row holds the
// answer it was given: its status, content type, location and the exact
// body bytes sent, set when the key completes.
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id           INTEGER PRIMARY KEY,
	key          TEXT NOT NULL UNIQUE,
	fingerprint  TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
	created_at   TEXT NOT NULL,
	completed_at TEXT
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
// requests both see "no such key". If the key is already there it returns
// 422 idempotency-key-reused for a different fingerprint, whatever the
// state; otherwise 409 request-in-progress (with Retry-After) while the
// original runs, and 409 duplicate-request once it has completed. Any
// other failure is 503 unavailable: a request that could not be claimed
// must not execute.
//
// TODO(stage 4): when you are done, a retry whose key has completed, with
// the same fingerprint, gets back the answer its original got, to be sent
// again, instead of 409 duplicate-request. A fingerprint mismatch is still
// 422 and an in-progress key still 409 request-in-progress: there is no
// answer to replay yet.
func claim(ctx context.Context, db *sql.DB, key, fp string, now time.Time) (int64, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, unavailable(err)
	}
	defer tx.Rollback()
	var id int64
	err = labdb.Savepoint(ctx, tx, func() error {
		return tx.QueryRowContext(ctx,
			`INSERT INTO idempotency_keys (key, fingerprint, state, created_at) VALUES (?, ?, 'in_progress', ?) RETURNING id`,
			key, fp, clock.Format(now)).Scan(&id)
	})
	switch {
	case err == nil:
		if err := tx.Commit(); err != nil {
			return 0, unavailable(err)
		}
		return id, nil
	case !labdb.IsUniqueViolation(err):
		return 0, unavailable(err)
	}
	var stored, state string
	err = tx.QueryRowContext(ctx, `SELECT fingerprint, state FROM idempotency_keys WHERE key = ?`, key).
		Scan(&stored, &state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The row our INSERT ran into is gone: its request failed before
		// the money moved and released it, after our INSERT and before
		// this read. On PostgreSQL, at READ COMMITTED, each statement
		// sees what has committed when it starts; on SQLite, one writer
		// at a time, it cannot happen. The key is free: a retry claims it.
		return 0, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q has just ended without executing; retry with the same key", key)}
	case err != nil:
		return 0, unavailable(err)
	case stored != fp:
		return 0, problem.New(problem.IdempotencyKeyReused,
			"Idempotency-Key %q was first used with a different request; an edited request needs a new key", key)
	case state == "in_progress":
		return 0, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}
	default:
		return 0, problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	}
}

// complete marks the key id completed inside tx, the transaction that
// carries the business write, so that the key is completed if and only if
// the money moved. It returns 503 unavailable if the key store fails.
//
// TODO(stage 4): when you are done, a key completes with its answer and
// never without it: the answer is stored if and only if the transaction
// that completes the key commits, so that no retry ever finds a completed
// key with nothing to replay (lesson 04, "Store the answer").
func complete(ctx context.Context, tx *sql.Tx, id int64, now time.Time) error {
	_, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys SET state = 'completed', completed_at = ? WHERE id = ?`, clock.Format(now), id)
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

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
