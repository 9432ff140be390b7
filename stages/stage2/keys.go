package stage2

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// keySchema is the key table. It is an ordinary rowid table (the lab's
// event stream reads its rows by rowid). The UNIQUE constraint on key is
// the whole design: it is the database, not the handler, that decides
// which of two requests with one key gets to execute. Times are
// clock.Format strings (RFC 3339, UTC, milliseconds): fixed width, so
// they compare as text in the order they compare as instants.
//
// TODO(stage 2): every claim records what its request asked for, in a
// column named fingerprint that is never empty. Name it so and store
// fingerprint's hex string as it is: docs/api.md makes the column part of
// the contract (another replica or service must compute the same value),
// and the grader reads it.
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id         INTEGER PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL
)`

// createKeyTable creates idempotency_keys if it does not exist.
func createKeyTable(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, keySchema); err != nil {
		return fmt.Errorf("create idempotency_keys: %w", err)
	}
	return nil
}

// claim inserts key inside tx. The INSERT is the check: looking first and
// inserting after would let two simultaneous requests both see "no such
// key". It returns 409 duplicate-request if the key is already there, and
// 503 unavailable for any other failure: a request that could not be
// claimed must not execute.
//
// TODO(stage 2): the request's fingerprint is recorded with the key. On a
// unique violation, do not answer 409 at once: read the stored
// fingerprint (in tx) and compare. Different means another request under
// the same key: 422, problem.IdempotencyKeyReused, and nothing moves. The
// same means a retry: 409 duplicate-request, as now. If that read fails,
// the key store failed: 503, as for the INSERT.
func claim(ctx context.Context, tx *sql.Tx, key string, now time.Time) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO idempotency_keys (key, created_at) VALUES (?, ?)`, key, clock.Format(now))
	switch {
	case err == nil:
		return nil
	case labdb.IsUniqueViolation(err):
		return problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	default:
		return problem.Wrap(problem.Unavailable, err,
			"the idempotency key store failed, so nothing was executed; retry with the same key")
	}
}
