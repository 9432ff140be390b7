package stage3

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
// TODO(stage 3): every key has a state, in_progress or completed, in a
// column named state (the lab reads exactly these names; let the database
// refuse any other value), and, if you like, the time it was completed.
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id          INTEGER PRIMARY KEY,
	key         TEXT NOT NULL UNIQUE,
	fingerprint TEXT NOT NULL,
	created_at  TEXT NOT NULL
)`

// createKeyTable creates idempotency_keys if it does not exist.
func createKeyTable(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, keySchema); err != nil {
		return fmt.Errorf("create idempotency_keys: %w", err)
	}
	return nil
}

// claim inserts key with the request's fingerprint fp inside tx. The
// INSERT is the check: looking first and inserting after would let two
// simultaneous requests both see "no such key". If the key is already
// there, the stored fingerprint tells a retry (409 duplicate-request) from
// another request under the same key (422 idempotency-key-reused). Any
// other failure is 503 unavailable: a request that could not be claimed
// must not execute.
//
// TODO(stage 3): when you are done, the claim is in_progress and visible
// to every retry before the core call: it commits in a transaction of its
// own (so it takes db, not tx), and hands back the row's id for the
// completion and the release. The write stays under labdb.Savepoint, so
// that the transaction can still read after a unique violation. On a
// unique violation, read the stored state with the fingerprint: a different
// fingerprint is still 422 whatever the state; an in-progress key is 409
// request-in-progress with a Retry-After (problem.Error carries one; a
// second is fine); a completed key is 409 duplicate-request, as now.
func claim(ctx context.Context, tx *sql.Tx, key, fp string, now time.Time) error {
	err := labdb.Savepoint(ctx, tx, func() error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO idempotency_keys (key, fingerprint, created_at) VALUES (?, ?, ?)`,
			key, fp, clock.Format(now))
		return err
	})
	switch {
	case err == nil:
		return nil
	case !labdb.IsUniqueViolation(err):
		return unavailable(err)
	}
	var stored string
	err = tx.QueryRowContext(ctx, `SELECT fingerprint FROM idempotency_keys WHERE key = ?`, key).Scan(&stored)
	switch {
	case err != nil:
		return unavailable(err)
	case stored != fp:
		return problem.New(problem.IdempotencyKeyReused,
			"Idempotency-Key %q was first used with a different request; an edited request needs a new key", key)
	default:
		return problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	}
}

// TODO(stage 3): write complete(…), which makes the key completed inside
// the transaction that carries the business write (so a key is never
// completed while its money did not move), and release(…), which gives back
// a claim whose request failed before its money moved, so that a retry
// executes; it must never give back a completed key. A key-store
// error in complete is a 503, like the claim's. If release itself fails
// the key stays in progress; stage 6 is about that.

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
