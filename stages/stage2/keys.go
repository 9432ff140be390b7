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
// TODO(stage 2): when you are done, the claim records the request's
// fingerprint with its key, and a request whose key is already used is
// told which request used it: the same one (a retry) gets 409
// duplicate-request, as now; another one under that key (an edited
// amount, another account) gets 422, problem.IdempotencyKeyReused; neither
// moves anything. That answer holds on PostgreSQL as on SQLite, and for an
// edited copy sent at the same instant as its original, whichever of them
// wins: the loser is never told 409 "already executed" for an amount that
// never moved. When the key store cannot say which request used the key,
// the answer is 503, as for the claim. Lesson 02, "What you decide" and
// "On PostgreSQL" (what a failed statement does to its transaction there;
// the kit has labdb.Savepoint), weighs the ways.
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
