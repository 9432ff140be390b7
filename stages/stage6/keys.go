package stage6

import (
	"context"
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
// committed (completed). The response columns are set when the key
// completes: they are the answer every retry gets again (location is empty
// when there is none). Times are clock.Format strings (RFC 3339, UTC,
// milliseconds): fixed width, so they compare as text in the order they
// compare as instants.
//
// TODO(stage 6): when you are done, an in-progress key is leased: its row
// says which request holds it (by a token only that request knows) and
// until when on the lab clock (a clock.Format time, so that it compares as
// text). Lesson 06, "Leases".
const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id           INTEGER PRIMARY KEY,
	customer     TEXT NOT NULL,
	method       TEXT NOT NULL,
	route        TEXT NOT NULL,
	key          TEXT NOT NULL,
	fingerprint  TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
	created_at   TEXT NOT NULL,
	completed_at TEXT,
	status       INTEGER,
	content_type TEXT,
	location     TEXT,
	body         BLOB,
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

// claim inserts the key of scope sc as in progress with the request's
// fingerprint fp, in its own short transaction, and returns the new row's
// id. A completed key of that scope whose retention period has passed is
// deleted first, in the same transaction: it is forgotten, and this
// request is a new one. The INSERT is the check: looking first and
// inserting after would let two simultaneous requests both see "no such
// key". If the key is there, the existing row decides (see existing). Any
// other failure is 503 unavailable: a request that could not be claimed
// must not execute.
//
// TODO(stage 6): when you are done, every claim takes a lease on its key
// for this request alone (a token no other request holds; crypto/rand has
// one), for the lease period in force (cfg, read at each claim: the lab
// changes it while a server runs) from now on the lab clock; and
// complete and release (below) can prove that the key is still this
// request's.
func claim(ctx context.Context, db *sql.DB, sc scope, fp string, now time.Time, cfg stage.Config) (id int64, stored *response, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, unavailable(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx,
		`DELETE FROM idempotency_keys
		 WHERE customer = ? AND method = ? AND route = ? AND key = ?
		   AND state = 'completed' AND completed_at <= ?`,
		sc.customer, sc.method, sc.route, sc.key, expiredAt(now, cfg))
	if err != nil {
		return 0, nil, unavailable(err)
	}
	err = labdb.Savepoint(ctx, tx, func() error {
		return tx.QueryRowContext(ctx,
			`INSERT INTO idempotency_keys (customer, method, route, key, fingerprint, state, created_at)
			 VALUES (?, ?, ?, ?, ?, 'in_progress', ?) RETURNING id`,
			sc.customer, sc.method, sc.route, sc.key, fp, clock.Format(now)).Scan(&id)
	})
	switch {
	case err == nil:
		// The key is this request's, and id its new row.
	case labdb.IsUniqueViolation(err):
		if id, stored, err = existing(ctx, tx, sc, fp); err != nil {
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

// existing decides what a request gets when the key of scope sc is
// already there: 422 idempotency-key-reused for a different fingerprint
// fp, whatever the state; 409 request-in-progress (with Retry-After) while
// the original runs; and once it has completed, its stored response, to
// be sent again. It returns 503 unavailable if the key store fails.
//
// TODO(stage 6): an in-progress key is no longer always 409. When you are
// done: while its lease is live, a retry gets 409 request-in-progress (its
// request may still be running). From the moment its lease expires (the
// request that held it crashed, or is so late that a retry may act for it),
// a retry takes the key over, with a lease of its own that runs for the
// lease in force from now, and executes it; another request under the key
// (another fingerprint) is still 422. Of many retries at once, exactly one
// takes the key over and the others get 409, on SQLite as on PostgreSQL,
// and even when writes to the key table are slow (the lab's slow-key-update
// fault): a lease judged expired in one step and taken in another lets two
// retries both win, and the money moves twice. Lesson 06, "Taking over a
// lease" and "Reading the lease, then writing it", weighs the ways.
func existing(ctx context.Context, tx *sql.Tx, sc scope, fp string) (id int64, stored *response, err error) {
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
		return 0, nil, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", sc.key)}
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
// the request was refused for good, as for insufficient funds). Its
// retention period starts now. It returns 503 unavailable if the key store
// fails.
//
// TODO(stage 6): when you are done, a request whose key a retry took over
// while it waited never completes that key, and learns so here: 409
// request-in-progress (not duplicate-request: its client must retry for
// the result), so that its caller rolls back the money it was about to
// commit, on every route that claims a key. A completed key is held by
// nobody. Lesson 06, "One transaction" and "A late original".
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
//
// TODO(stage 6): when you are done, a key is given back only by the
// request it still belongs to: a retry that took it over is
// executing it, and a key deleted under it lets a third attempt execute
// beside it. If the release fails, the lease expiring is what frees the
// key now.
func release(ctx context.Context, db *sql.DB, id int64) {
	db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress'`, id)
}

// purge deletes the completed keys whose retention period under cfg has
// passed by now, and reports how many went. The state condition is the
// point: an in-progress key is never purged, however old.
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
