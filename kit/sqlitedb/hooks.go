package sqlitedb

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrKeyStoreUnavailable is what a statement touching idempotency_keys
// returns while the store-unavailable fault is armed.
var ErrKeyStoreUnavailable = errors.New("key store unavailable (injected fault)")

// keyTable is the table the store-unavailable fault breaks.
const keyTable = "idempotency_keys"

// The wrapper below interposes on the physical connections to queue writers
// at the write gate (gate.go) and to inject the lab's database faults. It
// forwards every optional interface of the modernc driver, as its
// documentation asks, so that contexts, BeginTx options and connection
// validation keep working.

type connector struct {
	base  driver.Connector
	hooks *hooks
	gate  *writeGate
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{inner: inner, hooks: c.hooks, gate: c.gate}
	if hr, ok := inner.(sqlite.HookRegisterer); ok {
		hr.RegisterPreUpdateHook(func(d sqlite.SQLitePreUpdateData) {
			if !strings.EqualFold(d.TableName, keyTable) {
				return
			}
			switch d.Op {
			case sqlite3.SQLITE_INSERT:
				cn.keyRows = append(cn.keyRows, d.NewRowID)
			case sqlite3.SQLITE_DELETE:
				cn.keyRows = append(cn.keyRows, d.OldRowID)
			default:
				cn.keyRows = append(cn.keyRows, d.OldRowID, d.NewRowID)
			}
		})
	}
	return cn, nil
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

type conn struct {
	inner driver.Conn
	hooks *hooks
	gate  *writeGate
	// gated is set while this connection's transaction holds the gate.
	gated bool
	// business is set when the open transaction carried a business write.
	business bool
	// inTx is set while a transaction is open.
	inTx bool
	// keyRows are the rowids of key-table rows written and not yet committed.
	keyRows []int64
	// stmts are the statements this connection keeps (stmtcache.go).
	stmts map[string]*cachedStmt
}

// committed tells the hooks what the transaction (or autocommit statement)
// that just ended successfully changed.
func (c *conn) committed() {
	rows := c.keyRows
	c.keyRows = nil
	if len(rows) == 0 {
		return
	}
	if fn := c.hooks.keyRowsChanged.Load(); fn != nil {
		(*fn)(dedupe(rows))
	}
}

func dedupe(rows []int64) []int64 {
	seen := make(map[int64]bool, len(rows))
	out := rows[:0]
	for _, r := range rows {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Unwrap lets the sqlite driver see the connection it made.
func (c *conn) Unwrap() driver.Conn { return c.inner }

func (c *conn) checkKeyStore(ctx context.Context, query string) error {
	if isLabRead(ctx) {
		return nil
	}
	if c.hooks.keyStoreFailures.Left() <= 0 || !strings.Contains(strings.ToLower(query), keyTable) {
		return nil
	}
	if !c.hooks.keyStoreFailures.Fire() {
		return nil
	}
	return ErrKeyStoreUnavailable
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.checkKeyStore(ctx, query); err != nil {
		return nil, err
	}
	st, err := c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &stmt{Stmt: st, conn: c, query: query}, nil
}

func (c *conn) Close() error {
	c.releaseGate()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
	return c.inner.Close()
}

// releaseGate gives the gate back if this connection's transaction holds it.
func (c *conn) releaseGate() {
	if c.gated {
		c.gated = false
		c.gate.release()
	}
}

// autocommitWrite takes the gate for a statement that may write outside a
// transaction, and returns the function that gives it back (nothing to do
// for a statement inside a transaction, or one that only reads).
func (c *conn) autocommitWrite(ctx context.Context, write bool) (release func(), err error) {
	if c.inTx || !write {
		return func() {}, nil
	}
	if err := c.gate.acquire(ctx); err != nil {
		return nil, err
	}
	return c.gate.release, nil
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	// A read-only transaction begins with a plain BEGIN and takes no write
	// lock, so it does not queue at the gate either.
	if !opts.ReadOnly {
		if err := c.gate.acquire(ctx); err != nil {
			return nil, err
		}
		c.gated = true
	}
	t, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		c.releaseGate()
		return nil, err
	}
	c.business = false
	c.inTx = true
	c.keyRows = nil
	return &tx{inner: t, conn: c}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.checkKeyStore(ctx, query); err != nil {
		return nil, err
	}
	release, err := c.autocommitWrite(ctx, true)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := c.exec(ctx, query, args)
	if err == nil && isBusinessWrite(ctx) {
		c.business = true
	}
	c.afterStatement(res, err)
	return res, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.checkKeyStore(ctx, query); err != nil {
		return nil, err
	}
	// The driver runs the statement's first step before it returns the
	// rows, so a write (INSERT … RETURNING) is done, and the gate can be
	// given back, when the call returns.
	release, err := c.autocommitWrite(ctx, writes(query))
	if err != nil {
		return nil, err
	}
	defer release()
	return c.query(ctx, query, args)
}

// afterStatement ends an autocommit statement: outside a transaction, a
// statement that succeeded has committed.
func (c *conn) afterStatement(res driver.Result, err error) {
	if c.inTx {
		return
	}
	if err != nil {
		c.keyRows = nil
		return
	}
	if n, _ := res.RowsAffected(); n > 0 {
		c.hooks.commits.Add(1)
	}
	c.committed()
}

func (c *conn) Ping(ctx context.Context) error { return c.inner.(driver.Pinger).Ping(ctx) }

func (c *conn) ResetSession(ctx context.Context) error {
	return c.inner.(driver.SessionResetter).ResetSession(ctx)
}

func (c *conn) IsValid() bool { return c.inner.(driver.Validator).IsValid() }

type tx struct {
	inner driver.Tx
	conn  *conn
}

func (t *tx) Commit() error {
	err := t.inner.Commit()
	// The driver rolls back a transaction whose COMMIT failed: either way
	// the write lock is free.
	t.conn.releaseGate()
	business := t.conn.business
	t.conn.business = false
	t.conn.inTx = false
	if err != nil {
		t.conn.keyRows = nil
		return err
	}
	t.conn.hooks.commits.Add(1)
	t.conn.committed()
	if business {
		if fn := t.conn.hooks.afterBusinessCommit.Load(); fn != nil {
			(*fn)()
		}
	}
	return err
}

func (t *tx) Rollback() error {
	t.conn.business = false
	t.conn.inTx = false
	t.conn.keyRows = nil
	err := t.inner.Rollback()
	t.conn.releaseGate()
	return err
}

type stmt struct {
	driver.Stmt
	conn  *conn
	query string
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.conn.checkKeyStore(ctx, s.query); err != nil {
		return nil, err
	}
	release, err := s.conn.autocommitWrite(ctx, true)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	if err == nil && isBusinessWrite(ctx) {
		s.conn.business = true
	}
	s.conn.afterStatement(res, err)
	return res, err
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.conn.checkKeyStore(ctx, s.query); err != nil {
		return nil, err
	}
	release, err := s.conn.autocommitWrite(ctx, writes(s.query))
	if err != nil {
		return nil, err
	}
	defer release()
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
