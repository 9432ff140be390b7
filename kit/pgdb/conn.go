package pgdb

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"

	"idemlab/kit/fault"
)

// The wrapper below interposes on pgx's connections for two things: it
// numbers the ? placeholders (placeholders.go), and it gives lab mode its
// faults: a key store that returns errors, and a crash right after the
// commit that carried a business write. It also counts the commits, and
// those that changed outbox rows: PostgreSQL tells a connection how many
// rows a statement changed but not in which table, so a statement that
// changed rows is taken for a write of the outbox by its text
// (fault.WritesOutbox). A write of the outbox run through QueryContext
// (UPDATE … RETURNING) tells no count of rows: it changed rows if it
// returned any (outboxRows). While the slow-settings-commit fault is
// armed, a write of the settings outside a transaction runs in one of its
// own, which the fault holds before its COMMIT (heldRows, commitHeld). It
// forwards the optional interfaces of pgx's driver that database/sql uses.

type connector struct {
	base  driver.Connector
	store *fault.Store
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{inner: inner, store: c.store}, nil
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

// pgxConn is what pgx's stdlib connection offers and database/sql uses.
type pgxConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.NamedValueChecker
}

type conn struct {
	inner driver.Conn
	store *fault.Store
	// inTx is set while a transaction is open; business when it carried a
	// business write, outbox when it changed outbox rows, settings when it
	// wrote the settings while slow-settings-commit was armed, keys when it
	// ran a statement that writes the key table.
	inTx, business, outbox, settings, keys bool
}

// before runs the faults armed on query before it runs (see
// fault.Store.BeforeStatement), and notes, in an open transaction, a
// statement of the stage's that writes the key table, only while
// held-key-commit is armed (the check arms it before its claim is sent):
// every statement of every transaction is not read for it.
func (c *conn) before(ctx context.Context, query string) error {
	if c.inTx && c.store.HeldKeyCommitsLeft() > 0 && fault.WritesKeys(ctx, query) {
		c.keys = true
	}
	return c.store.BeforeStatement(ctx, query)
}

func (c *conn) pgx() pgxConn { return c.inner.(pgxConn) }

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext prepares query. The faults wait for the statement's
// runs (stmt): a count armed on a statement counts the statements run,
// and a prepared one run once spends one.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.pgx().PrepareContext(ctx, numberPlaceholders(query))
	if err != nil {
		return nil, err
	}
	return &stmt{Stmt: st, conn: c, query: query}, nil
}

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction. pgx's transaction commits with the context
// it began with, and a COMMIT cut short by that context (a client that hung
// up) leaves its outcome unknown: PostgreSQL may have committed what the
// caller is told failed, a claimed key that no one will release, say. So
// the transaction begins without ctx's cancellation: database/sql still
// rolls it back if ctx ends before Commit, and a Commit, once sent, is
// answered.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if !opts.ReadOnly {
		if err := c.store.BeforeBegin(ctx); err != nil {
			return nil, err
		}
	}
	t, err := c.pgx().BeginTx(context.WithoutCancel(ctx), opts)
	if err != nil {
		return nil, err
	}
	c.inTx, c.business, c.outbox, c.settings, c.keys = true, false, false, false, false
	return &tx{inner: t, conn: c}, nil
}

// holdSettings notes a write of the settings while the
// slow-settings-commit fault is armed (fault.Store.HoldsSettingsCommit):
// in the open transaction, whose COMMIT the fault then holds; outside one,
// it begins a transaction of its own for the write and returns it, for
// commitHeld or heldRows to commit. In a transaction that a BEGIN
// statement of the stage's began, which database/sql does not see, it
// returns sessionTx: a transaction of its own there would commit the
// stage's at this write, and the write is held once it has run, its row
// lock taken, until the stage's own COMMIT. It returns nil for any other
// statement.
func (c *conn) holdSettings(ctx context.Context, query string) (driver.Tx, error) {
	if !c.store.HoldsSettingsCommit(query) {
		return nil, nil
	}
	if c.inTx {
		c.settings = true
		return nil, nil
	}
	if s, ok := c.inner.(interface{ Conn() *pgx.Conn }); ok && s.Conn().PgConn().TxStatus() != 'I' {
		return sessionTx{}, nil
	}
	return c.pgx().BeginTx(context.WithoutCancel(ctx), driver.TxOptions{})
}

// sessionTx stands for the transaction a BEGIN statement of the stage's
// began (holdSettings): the stage commits it or rolls it back, so it does
// neither.
type sessionTx struct{}

func (sessionTx) Commit() error   { return nil }
func (sessionTx) Rollback() error { return nil }

// commitHeld ends own, the transaction of a write of the settings that
// holdSettings began (nil: none), once the write has run with err: it
// rolls back a write that failed, and commits one that succeeded once
// the fault has held it.
func (c *conn) commitHeld(own driver.Tx, err error) error {
	switch {
	case own == nil:
		return err
	case err != nil:
		return errors.Join(err, own.Rollback())
	}
	c.store.BeforeSettingsCommit()
	return own.Commit()
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.before(ctx, query); err != nil {
		return nil, err
	}
	own, err := c.holdSettings(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := c.pgx().ExecContext(ctx, numberPlaceholders(query), args)
	if err := c.commitHeld(own, err); err != nil {
		return nil, err
	}
	c.wrote(ctx, query, res)
	return res, nil
}

// wrote notes a statement that succeeded: inside a transaction, whether it
// moved money and whether it changed outbox rows; outside one, a commit if
// it changed rows.
func (c *conn) wrote(ctx context.Context, query string, res driver.Result) {
	n, _ := res.RowsAffected()
	outbox := n > 0 && fault.WritesOutbox(query)
	if c.inTx {
		if fault.IsBusinessWrite(ctx) {
			c.business = true
		}
		c.outbox = c.outbox || outbox
		return
	}
	if n > 0 {
		c.store.Committed(nil, false)
	}
	if outbox {
		c.store.OutboxCommitted()
	}
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.before(ctx, query); err != nil {
		return nil, err
	}
	own, err := c.holdSettings(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := c.pgx().QueryContext(ctx, numberPlaceholders(query), args)
	return c.read(query, own, rows, err)
}

// read returns the rows of query, watched when query writes the outbox,
// and committing own, the transaction holdSettings began for it, if any,
// when they are closed.
func (c *conn) read(query string, own driver.Tx, rows driver.Rows, err error) (driver.Rows, error) {
	switch {
	case own != nil && err != nil:
		return nil, c.commitHeld(own, err)
	case own != nil:
		return &heldRows{pgxRows: rows.(pgxRows), conn: c, own: own}, nil
	case err != nil || !fault.WritesOutbox(query):
		return rows, err
	}
	return &outboxRows{pgxRows: rows.(pgxRows), conn: c}, nil
}

// heldRows are the rows of a write of the settings that runs in a
// transaction of its own (holdSettings): closing them commits it, once
// the slow-settings-commit fault has held it, or rolls it back if they
// failed. database/sql closes them before it hands the connection to
// another statement.
type heldRows struct {
	pgxRows
	conn *conn
	own  driver.Tx
}

func (r *heldRows) Close() error {
	return r.conn.commitHeld(r.own, r.pgxRows.Close())
}

// pgxRows is what pgx's stdlib rows offer and database/sql uses.
type pgxRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// outboxRows are the rows of a statement that writes the outbox, each a
// row it changed (RETURNING). Closed without an error after one was
// read, they note a write of the outbox as wrote does: in the open
// transaction, or, outside one, a commit. database/sql closes a
// transaction's rows before it commits it.
type outboxRows struct {
	pgxRows
	conn *conn
	// changed is set once a row was read.
	changed bool
}

func (r *outboxRows) Next(dest []driver.Value) error {
	err := r.pgxRows.Next(dest)
	if err == nil {
		r.changed = true
	}
	return err
}

func (r *outboxRows) Close() error {
	err := r.pgxRows.Close()
	if err != nil || !r.changed {
		return err
	}
	r.changed = false
	if r.conn.inTx {
		r.conn.outbox = true
		return nil
	}
	r.conn.store.Committed(nil, false)
	r.conn.store.OutboxCommitted()
	return nil
}

func (c *conn) Ping(ctx context.Context) error { return c.pgx().Ping(ctx) }

func (c *conn) ResetSession(ctx context.Context) error { return c.pgx().ResetSession(ctx) }

func (c *conn) CheckNamedValue(v *driver.NamedValue) error { return c.pgx().CheckNamedValue(v) }

type tx struct {
	inner driver.Tx
	conn  *conn
}

func (t *tx) Commit() error {
	business, outbox := t.conn.business, t.conn.outbox
	if t.conn.settings {
		t.conn.store.BeforeSettingsCommit()
	}
	if t.conn.keys {
		t.conn.store.BeforeKeyCommit()
	}
	t.conn.store.BeforeCommit(business)
	t.conn.inTx, t.conn.business, t.conn.outbox, t.conn.settings, t.conn.keys = false, false, false, false, false
	if err := t.conn.store.CommitFails(business); err != nil {
		return errors.Join(err, t.inner.Rollback())
	}
	if err := t.inner.Commit(); err != nil {
		return err
	}
	t.conn.store.Committed(nil, business)
	if outbox {
		t.conn.store.OutboxCommitted()
	}
	return t.conn.store.CommitAnswer(business)
}

func (t *tx) Rollback() error {
	t.conn.inTx, t.conn.business, t.conn.outbox, t.conn.settings, t.conn.keys = false, false, false, false, false
	return t.inner.Rollback()
}

// stmt is a prepared statement whose runs go through the fault switches.
type stmt struct {
	driver.Stmt
	conn  *conn
	query string
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.conn.before(ctx, s.query); err != nil {
		return nil, err
	}
	own, err := s.conn.holdSettings(ctx, s.query)
	if err != nil {
		return nil, err
	}
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	if err := s.conn.commitHeld(own, err); err != nil {
		return nil, err
	}
	s.conn.wrote(ctx, s.query, res)
	return res, nil
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.conn.before(ctx, s.query); err != nil {
		return nil, err
	}
	own, err := s.conn.holdSettings(ctx, s.query)
	if err != nil {
		return nil, err
	}
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return s.conn.read(s.query, own, rows, err)
}
