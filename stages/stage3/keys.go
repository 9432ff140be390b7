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
// TODO(stage 3): when you are done, every retry sees a key as in_progress
// from the moment its request claims it, before the core call, until the
// commit that moves its money, and is told so: 409 request-in-progress
// with a Retry-After (problem.Error carries one; a second is fine). Why: a
// retry told "already executed" while its original may still fail stops
// retrying, and the payment is lost; a retry that sees nothing calls the
// core a second time. A completed key is still 409 duplicate-request, and a
// different fingerprint still 422 whatever the state. A key whose request
// ended without executing while this claim was finding out is free again,
// which on PostgreSQL can happen: that is 409 request-in-progress too, so
// that the retry claims it, never 503. The completion and the release
// (below) must be able to find the row this claim made. Lesson 03, "The
// window", "What you decide" and "On PostgreSQL", weighs the ways.
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

// TODO(stage 3): write complete(…) and release(…), for serve. When you are
// done, a key is completed if and only if its money moved: never while the
// original still waits or may still fail (S3.never-completed-without-money
// reads the state meanwhile), and always once the money has moved, even
// when the commit went through and the server was told it failed. A request
// that failed before its money moved (an internal error, insufficient
// funds, a client that hung up) gives its key back, so that its retry
// executes; a completed key is never given back, or its retry pays again. A
// key-store error in complete is a 503, like the claim's. If the release
// itself fails, the key stays in progress; stage 6 is about that. Lesson
// 03, "Releasing a failed claim" and "Completed means the money moved",
// says which rows each may touch and why.

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
