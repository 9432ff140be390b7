package stage9

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
)

// keySchema is the key table. It is an ordinary rowid table (the lab's
// event stream reads its rows by rowid). The UNIQUE constraint decides
// which of two requests with one key gets to execute, and it spans the
// key's whole scope: a key is one customer's, on one method and route.
// state says whether that execution is still running (in_progress) or has
// committed (completed). An in-progress key is leased: lease_owner is the
// token of the request that holds it, until lease_expires_at. The response
// columns are set when the key completes: they are the answer every retry
// gets again (location is empty when there is none). Times are
// clock.Format strings (RFC 3339, UTC, milliseconds): fixed width, so they
// compare as text in the order they compare as instants.
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id               INTEGER PRIMARY KEY,
	customer         TEXT NOT NULL,
	method           TEXT NOT NULL,
	route            TEXT NOT NULL,
	key              TEXT NOT NULL,
	fingerprint      TEXT NOT NULL,
	state            TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
	lease_owner      TEXT,
	lease_expires_at TEXT,
	created_at       TEXT NOT NULL,
	completed_at     TEXT,
	status           INTEGER,
	content_type     TEXT,
	location         TEXT,
	body             BLOB,
	UNIQUE (customer, method, route, key)
)`

// retryAfter is how long a client should wait before retrying a request
// whose original is still in progress.
const retryAfter = time.Second

// scope is what names a key: the key string alone is the client's choice,
// and two clients may choose the same one.
type scope struct {
	customer, method, route, key string
}

// lease is one request's hold on an in-progress key: the row, and the
// owner token that proves the hold is still this request's and has not
// been taken over by a retry.
type lease struct {
	id    int64
	owner string
}

// createKeyTable creates idempotency_keys if it does not exist.
func createKeyTable(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, keySchema); err != nil {
		return fmt.Errorf("create idempotency_keys: %w", err)
	}
	return nil
}

// expiredAt is the completion time at or before which a completed key has
// outlived cfg's retention period, now.
func expiredAt(now time.Time, cfg stage.Config) string {
	return clock.Format(now.Add(-cfg.Retention))
}

// claim takes a lease on the key of scope sc for a request with
// fingerprint fp, in its own short transaction: it inserts the key as in
// progress, leased to a fresh owner token until cfg's lease period from
// now. A completed key of that scope whose retention period has passed is
// deleted first, in the same transaction: it is forgotten, and this
// request is a new one. The INSERT is the check: looking first and
// inserting after would let two simultaneous requests both see "no such
// key". If the key is there, the existing row decides (see existing). Any
// other failure is 503 unavailable: a request that could not be claimed
// must not execute.
func claim(ctx context.Context, db *sql.DB, sc scope, fp string, now time.Time, cfg stage.Config) (held lease, stored *response, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return lease{}, nil, unavailable(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx,
		`DELETE FROM idempotency_keys
		 WHERE customer = ? AND method = ? AND route = ? AND key = ?
		   AND state = 'completed' AND completed_at <= ?`,
		sc.customer, sc.method, sc.route, sc.key, expiredAt(now, cfg))
	if err != nil {
		return lease{}, nil, unavailable(err)
	}
	held.owner = rand.Text()
	err = labdb.Savepoint(ctx, tx, func() error {
		return tx.QueryRowContext(ctx,
			`INSERT INTO idempotency_keys
			 (customer, method, route, key, fingerprint, state, lease_owner, lease_expires_at, created_at)
			 VALUES (?, ?, ?, ?, ?, 'in_progress', ?, ?, ?) RETURNING id`,
			sc.customer, sc.method, sc.route, sc.key, fp,
			held.owner, clock.Format(now.Add(cfg.Lease)), clock.Format(now)).Scan(&held.id)
	})
	switch {
	case err == nil:
		// The key is this request's, and held.id its new row.
	case labdb.IsUniqueViolation(err):
		if held.id, stored, err = existing(ctx, tx, sc, fp, held.owner, now, cfg); err != nil {
			return lease{}, nil, err
		}
	default:
		return lease{}, nil, unavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return lease{}, nil, unavailable(err)
	}
	return held, stored, nil
}

// existing decides what a request gets when the key of scope sc is
// already there: 422 idempotency-key-reused for a different fingerprint
// fp, whatever the state; once the key has completed, its stored response,
// to be sent again; and while it is in progress, 409 request-in-progress
// (with Retry-After) if its lease is live, or the key itself, leased to
// owner, if its lease has expired and this request takes it over. It
// returns 503 unavailable if the key store fails.
func existing(ctx context.Context, tx *sql.Tx, sc scope, fp, owner string, now time.Time, cfg stage.Config) (id int64, stored *response, err error) {
	var storedFP, state string
	err = tx.QueryRowContext(ctx,
		`SELECT id, fingerprint, state FROM idempotency_keys
		 WHERE customer = ? AND method = ? AND route = ? AND key = ?`,
		sc.customer, sc.method, sc.route, sc.key).
		Scan(&id, &storedFP, &state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The row our INSERT ran into is gone: its request failed before
		// the money moved and released it, after our INSERT and before
		// this read. On PostgreSQL, at READ COMMITTED, each statement
		// sees what has committed when it starts; on SQLite, one writer
		// at a time, it cannot happen. The key is free: a retry claims it.
		return 0, nil, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q has just ended without executing; retry with the same key", sc.key)}
	case err != nil:
		return 0, nil, unavailable(err)
	case storedFP != fp:
		return 0, nil, problem.New(problem.IdempotencyKeyReused,
			"Idempotency-Key %q was first used with a different request; an edited request needs a new key", sc.key)
	case state == "in_progress":
		return takeOver(ctx, tx, id, sc.key, owner, now, cfg)
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

// takeOver leases the in-progress key id to owner if, and only if, its
// lease has expired by now: the request that held it has crashed, or is
// so late that a retry may act for it. One conditional UPDATE decides,
// like the INSERT of a claim, so of many retries at once exactly one takes
// the key over. It returns 409 request-in-progress (with Retry-After) if
// the lease is live, and 503 unavailable if the key store fails.
func takeOver(ctx context.Context, tx *sql.Tx, id int64, key, owner string, now time.Time, cfg stage.Config) (int64, *response, error) {
	res, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys SET lease_owner = ?, lease_expires_at = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_expires_at <= ?`,
		owner, clock.Format(now.Add(cfg.Lease)), id, clock.Format(now))
	if err != nil {
		return 0, nil, unavailable(err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return 0, nil, unavailable(err)
	case n == 0:
		return 0, nil, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}
	}
	return id, nil, nil
}

// complete marks the held key completed with its response res inside tx,
// the transaction that carries the business write, so that the key is
// completed, and its answer stored, if and only if the money moved (or
// the request was refused for good, as for insufficient funds). Its
// retention period starts now. The UPDATE holds only while held is still
// the key's lease: if a retry took the key over while this request waited,
// it returns 409 request-in-progress, and the caller rolls back, money
// and all, because the retry is executing the request instead. It returns
// 503 unavailable if the key store fails.
func complete(ctx context.Context, tx *sql.Tx, held lease, res response, now time.Time) error {
	r, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		     status = ?, content_type = ?, location = ?, body = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,
		clock.Format(now), res.status, res.contentType, res.location, res.body, held.id, held.owner)
	if err != nil {
		return unavailable(err)
	}
	n, err := r.RowsAffected()
	switch {
	case err != nil:
		return unavailable(err)
	case n == 0:
		return &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: "this request waited past its lease and a retry took it over; nothing was executed here, retry with the same key for the result"}
	}
	return nil
}

// release deletes the held in-progress key of a request that failed before
// its money moved, so that a retry executes, unless a retry has taken it
// over meanwhile. It is best effort: if the key store fails here too, the
// key stays in progress until its lease expires, and then a retry takes
// it over.
func release(ctx context.Context, db *sql.DB, held lease) {
	db.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,
		held.id, held.owner)
}

// purge deletes the completed keys whose retention period under cfg has
// passed by now, and reports how many went. The state condition is the
// point: an in-progress key is never purged, however old; a crashed
// request's key waits for a retry to take it over.
func purge(ctx context.Context, db *sql.DB, now time.Time, cfg stage.Config) (int64, error) {
	res, err := db.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`, expiredAt(now, cfg))
	if err != nil {
		return 0, fmt.Errorf("purge idempotency_keys: %w", err)
	}
	return res.RowsAffected()
}

// unavailable is the answer to any failure of the key store: 503, and
// nothing executed.
func unavailable(err error) error {
	return problem.Wrap(problem.Unavailable, err,
		"the idempotency key store failed, so nothing was executed; retry with the same key")
}
