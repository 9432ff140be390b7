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

// The wrapper below interposes on the physical connections only to inject
// the lab's database faults. It forwards every optional interface of the
// modernc driver, as its documentation asks, so that contexts, BeginTx
// options and connection validation keep working.

type connector struct {
	base  driver.Connector
	hooks *hooks
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{inner: inner, hooks: c.hooks}
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
	// business is set when the open transaction carried a business write.
	business bool
	// inTx is set while a transaction is open.
	inTx bool
	// keyRows are the rowids of key-table rows written and not yet committed.
	keyRows []int64
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

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	t, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
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
	res, err := c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
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
	return c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
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
	return t.inner.Rollback()
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
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
