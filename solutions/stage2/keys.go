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

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
