package final

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"idemlab/audit"
	"idemlab/kit/clock"
	"idemlab/kit/problem"
	"idemlab/kit/sqlitedb"
)

// schema is the middleware's key table. Its name and its state column are
// what the lab reads (GET /lab/state), so that the audit can see a key in
// progress. One row is one key in its scope; lease_owner is the token of
// the request that holds an in-progress key, until lease_expires_at; the
// answer columns (its status, Content-Type, Location and body) are set
// when the key completes. Times are clock.Format
// strings, which compare as text in the order of the instants.
const schema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id               INTEGER PRIMARY KEY,
	customer         TEXT NOT NULL,
	method           TEXT NOT NULL,
	path             TEXT NOT NULL,
	key              TEXT NOT NULL,
	fingerprint      TEXT NOT NULL,
	state            TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
	lease_owner      TEXT,
	lease_expires_at TEXT,
	created_at       TEXT NOT NULL,
	completed_at     TEXT,
	answer_status    INTEGER,
	answer_type      TEXT,
	answer_location  TEXT,
	answer_body      BLOB,
	UNIQUE (customer, method, path, key)
)`

// store keeps the keys in the lab's database, on the lab's clock.
type store struct {
	env audit.Env
}

// scope names a key: the string a client chose, within its customer, its
// method and its path.
type scope struct {
	customer, method, path, key string
}

// lease is one request's hold on its in-progress key.
type lease struct {
	id    int64
	owner string
}

// openStore creates the key table if it does not exist.
func openStore(ctx context.Context, env audit.Env) (*store, error) {
	if _, err := env.DB.ExecContext(ctx, schema); err != nil {
		return nil, fmt.Errorf("create idempotency_keys: %w", err)
	}
	return &store{env: env}, nil
}

// claim takes a lease on sc's key for a request with fingerprint fp, in a
// transaction of its own that commits before the handler runs: a retry
// then finds the key in progress. An expired completed key is forgotten
// first. The INSERT decides between simultaneous requests; if the key is
// there, its row decides (see held). Any other failure is 503.
func (s *store) claim(ctx context.Context, sc scope, fp string) (lease, *answer, error) {
	now, cfg := s.env.Clock.Now(), s.env.Config()
	tx, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		return lease{}, nil, unavailable(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM idempotency_keys
		 WHERE customer = ? AND method = ? AND path = ? AND key = ? AND state = 'completed' AND completed_at <= ?`,
		sc.customer, sc.method, sc.path, sc.key, clock.Format(now.Add(-cfg.Retention))); err != nil {
		return lease{}, nil, unavailable(err)
	}
	l := lease{owner: rand.Text()}
	until := clock.Format(now.Add(cfg.Lease))
	res, err := tx.ExecContext(ctx,
		`INSERT INTO idempotency_keys (customer, method, path, key, fingerprint, state, lease_owner, lease_expires_at, created_at)
		 VALUES (?, ?, ?, ?, ?, 'in_progress', ?, ?, ?)`,
		sc.customer, sc.method, sc.path, sc.key, fp, l.owner, until, clock.Format(now))
	var stored *answer
	switch {
	case err == nil:
		l.id, err = res.LastInsertId()
	case sqlitedb.IsUniqueViolation(err):
		stored, err = s.held(ctx, tx, sc, fp, &l, until, now)
	}
	if err != nil {
		return lease{}, nil, unavailable(err)
	}
	if err := tx.Commit(); err != nil {
		return lease{}, nil, unavailable(err)
	}
	return l, stored, nil
}

// held decides for a request whose key is already there: 422 for another
// fingerprint; the stored answer of a completed key; 409 with Retry-After
// while another request's lease is live; and once it has expired, the key
// itself, leased to l.owner until until by one conditional UPDATE, which
// only one of many retries wins. It sets l.id when it takes the key over.
func (s *store) held(ctx context.Context, tx *sql.Tx, sc scope, fp string, l *lease, until string, now time.Time) (*answer, error) {
	var (
		id              int64
		storedFP, state string
		status          sql.NullInt64
		ctype, location sql.NullString
		body            []byte
	)
	err := tx.QueryRowContext(ctx,
		`SELECT id, fingerprint, state, answer_status, answer_type, answer_location, answer_body FROM idempotency_keys
		 WHERE customer = ? AND method = ? AND path = ? AND key = ?`,
		sc.customer, sc.method, sc.path, sc.key).Scan(&id, &storedFP, &state, &status, &ctype, &location, &body)
	switch {
	case err != nil:
		return nil, err
	case storedFP != fp:
		return nil, problem.New(problem.IdempotencyKeyReused,
			"Idempotency-Key %q was first used with another request; an edited request needs a new key", sc.key)
	case state == "completed":
		stored := &answer{status: int(status.Int64), header: http.Header{}, body: body}
		stored.header.Set("Content-Type", ctype.String)
		if location.String != "" {
			stored.header.Set("Location", location.String)
		}
		return stored, nil
	}
	res, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys SET lease_owner = ?, lease_expires_at = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_expires_at <= ?`,
		l.owner, until, id, clock.Format(now))
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, inProgress(sc.key, err)
	}
	l.id = id
	return nil, nil
}

// inProgress is the answer to a retry whose original still holds its key,
// or err if the store failed.
func inProgress(key string, err error) error {
	if err != nil {
		return err
	}
	return &problem.Error{Type: problem.RequestInProgress, RetryAfter: time.Second,
		Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}
}

// execer is where a completion runs: the transaction that moves the
// money, or the database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// complete stores res as l's key's answer and marks the key completed, on
// ex, if l still holds the key. It returns 409 request-in-progress if a
// retry took the key over meanwhile (the caller rolls the money back: the
// retry executes instead), and 503 if the store fails.
func (s *store) complete(ctx context.Context, ex execer, l lease, res answer) error {
	r, err := ex.ExecContext(ctx,
		`UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		     answer_status = ?, answer_type = ?, answer_location = ?, answer_body = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,
		clock.Format(s.env.Clock.Now()), res.status, res.header.Get("Content-Type"), res.header.Get("Location"), res.body, l.id, l.owner)
	if err != nil {
		return unavailable(err)
	}
	n, err := r.RowsAffected()
	switch {
	case err != nil:
		return unavailable(err)
	case n == 0:
		return &problem.Error{Type: problem.RequestInProgress, RetryAfter: time.Second,
			Detail: "this attempt outlived its lease and another one took its key over; nothing was executed here: retry with the same key for the result"}
	}
	return nil
}

// release frees l's key after an answer that is no outcome, so that a
// retry executes; best effort: if the store fails, the lease expires.
func (s *store) release(ctx context.Context, l lease) {
	s.env.DB.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`, l.id, l.owner)
}

// purge deletes the completed keys past their retention and reports how
// many went; never an in-progress key, whose request may still run.
func (s *store) purge(ctx context.Context) (int64, error) {
	res, err := s.env.DB.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`,
		clock.Format(s.env.Clock.Now().Add(-s.env.Config().Retention)))
	if err != nil {
		return 0, fmt.Errorf("purge idempotency_keys: %w", err)
	}
	return res.RowsAffected()
}

// unavailable is the answer to a failure of the store: 503, and nothing
// executed. A problem (422, 409) passes through as it is.
func unavailable(err error) error {
	var p *problem.Error
	if errors.As(err, &p) {
		return err
	}
	return problem.Wrap(problem.Unavailable, err, "the idempotency key store failed, so nothing was executed; retry with the same key")
}
