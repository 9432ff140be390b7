package sqlitedb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"idemlab/kit/fault"
)

// The wrapper below interposes on the physical connections for three
// things: every write runs on one connection, the writer, that a process's
// writers take turns on at the write gate (gate.go); each physical
// connection keeps its prepared statements (stmtcache.go); and lab mode
// injects its database faults. It forwards the optional interfaces of the
// modernc driver that database/sql uses, so that BeginTx options and
// connection validation keep working; a context is looked at before each
// statement rather than watched during it (see driverContext).
//
// Why one writer: SQLite lets one connection write at a time anyway, and a
// connection that wrote last still has the pages it needs in its cache,
// while one that comes back after others have written must read them again.
// With 64 requests in flight, 64 connections taking turns made the same
// transactions about 1.7 times slower than one connection did; and only
// transactions on one connection can share one SQLite transaction, and
// one COMMIT (group.go). Each database/sql connection keeps a physical
// connection of its own for what it reads outside a write transaction, so
// that on a database file reads never wait for a writer, and code that
// holds a transaction can still read beside it. An in-memory database has
// coarser locks (memlock.go).

type connector struct {
	base  driver.Connector
	hooks *fault.Store
	gate  *writeGate
	// mem takes SQLite's locks in Go on an in-memory database (memlock.go);
	// nil for a database file.
	mem *memTurns
	// writer is the physical connection every write transaction and every
	// write outside one runs on; only the holder of the gate uses it. It is
	// opened on first use.
	writer *physical
	// closed is set by Close: no writer is opened after it.
	closed atomic.Bool
	// ckpt runs a database file's checkpoints; nil in memory.
	ckpt *checkpointer
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	own, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	// A connection's own runs its reads outside a transaction and its
	// read-only transactions; every write transaction, and every write
	// outside one, runs on the writer. So a write reaches the own only
	// from inside a read-only transaction, and SQLite refuses it there, as
	// PostgreSQL refuses one after BEGIN READ ONLY: the plain BEGIN alone
	// let it write beside the writer, outside the gate (on an in-memory
	// database, with only a reader's turn). Set once for the connection,
	// it adds no statement to a transaction.
	if _, err := own.conn.(driver.ExecerContext).ExecContext(ctx, "PRAGMA query_only(1)", nil); err != nil {
		own.close()
		return nil, err
	}
	return &conn{own: own, cur: own, connector: c, hooks: c.hooks}, nil
}

// open makes a physical connection whose pre-update hook notes the key
// rows written on it, and whether it wrote outbox rows.
func (c *connector) open(ctx context.Context) (*physical, error) {
	inner, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	p := &physical{conn: inner}
	if hr, ok := inner.(sqlite.HookRegisterer); ok {
		// SQLite ends a transaction by itself on some errors (an I/O
		// error, a conflict resolved by ROLLBACK, a RAISE(ROLLBACK)): a
		// group open on the writer must hear of it (group.go).
		hr.RegisterRollbackHook(func() { p.rolledBack = true })
		hr.RegisterPreUpdateHook(func(d sqlite.SQLitePreUpdateData) {
			p.changed = true
			if strings.EqualFold(d.TableName, fault.OutboxTable) {
				p.outbox = true
				return
			}
			if !strings.EqualFold(d.TableName, fault.KeyTable) {
				return
			}
			switch d.Op {
			case sqlite3.SQLITE_INSERT:
				p.keyRows = append(p.keyRows, d.NewRowID)
			case sqlite3.SQLITE_DELETE:
				p.keyRows = append(p.keyRows, d.OldRowID)
			default:
				p.keyRows = append(p.keyRows, d.OldRowID, d.NewRowID)
			}
		})
	}
	return p, nil
}

// takeWriter waits for the gate and returns the writer, opening it the
// first time. A write transaction joins the group open on the writer
// (join); any other write commits it first (group.go). The caller gives
// the gate back when its write is over.
func (c *connector) takeWriter(ctx context.Context, join bool) (*physical, error) {
	take := c.gate.acquire
	if join {
		take = c.gate.take
	}
	if err := take(ctx); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		c.gate.release()
		return nil, errClosed
	}
	if c.writer == nil {
		w, err := c.open(ctx)
		if err != nil {
			c.gate.release()
			return nil, err
		}
		c.writer = w
	}
	return c.writer, nil
}

// errClosed is what a writer gets once the database is closed.
var errClosed = errors.New("sql: database is closed")

// Close closes the writer. database/sql calls it from DB.Close at once,
// while connections still in use may be inside a write transaction on the
// writer: closed under them, their ROLLBACK (database/sql's own, when
// their context ends) would run on a closed SQLite handle and crash the
// process. So Close takes the gate, as a writer would, and keeps it: it
// closes the writer once the transaction on it has ended, and no writer
// comes after. The checkpointer stops first, and runs its last checkpoint
// once the gate is Close's. If the gate is not given back within its
// timeout, the writer and the checkpointer's connection are left open and
// Close returns the gate's error.
func (c *connector) Close() error {
	c.closed.Store(true)
	if c.ckpt != nil {
		c.ckpt.stop()
	}
	if err := c.gate.acquire(context.Background()); err != nil {
		return fmt.Errorf("close the writer: a write transaction still holds it: %w", err)
	}
	var err error
	if c.writer != nil {
		err = c.writer.close()
		c.writer = nil
	}
	if c.ckpt != nil {
		err = errors.Join(err, c.ckpt.close())
		c.ckpt = nil
	}
	return err
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

// physical is one connection the driver made, with the statements it keeps
// and the key rows written on it and not yet committed; outbox is set when
// it wrote outbox rows not yet committed.
type physical struct {
	conn    driver.Conn
	stmts   map[string]*cachedStmt
	keyRows []int64
	outbox  bool
	// changed is set when a statement changed a row of any table on it;
	// what reads it clears it.
	changed bool
	// rolledBack is set when a transaction on it rolled back, by a
	// ROLLBACK or by SQLite itself; a new group clears it.
	rolledBack bool
}

func (p *physical) close() error {
	for _, st := range p.stmts {
		st.Close()
	}
	p.stmts = nil
	return p.conn.Close()
}

// conn is one database/sql connection: a physical connection of its own,
// and the writer while its write transaction holds the gate.
type conn struct {
	own       *physical
	cur       *physical // own, or the writer while gated
	connector *connector
	hooks     *fault.Store
	// gated is set while this connection's transaction holds the gate.
	gated bool
	// business is set when the open transaction carried a business write.
	business bool
	// settings is set when the open transaction wrote the settings while
	// the slow-settings-commit fault was armed: its COMMIT waits for the
	// fault.
	settings bool
	// inTx is set while a transaction is open.
	inTx bool
	// giveTurn gives back the turn the open transaction holds on an
	// in-memory database (memlock.go); nil when it holds none.
	giveTurn func()
}

// Unwrap lets the sqlite driver see the connection statements run on now.
func (c *conn) Unwrap() driver.Conn { return c.cur.conn }

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext checks that query prepares, and returns a statement that
// runs it as ExecContext and QueryContext would: on the writer when it
// writes, through the statements each physical connection keeps. The
// faults wait for those runs: a count armed on a statement counts the
// statements run, and a prepared one run once spends one.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.cur.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	n := st.NumInput()
	st.Close()
	return &stmt{conn: c, query: query, numInput: n}, nil
}

func (c *conn) Close() error {
	c.endTurns()
	return c.own.close()
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	// A read-only transaction begins with a plain BEGIN and takes no write
	// lock, so it runs on this connection's own, which refuses writes (see
	// Connect), and does not queue at the write gate; on an in-memory
	// database it holds a reader's turn.
	if opts.ReadOnly {
		give, err := c.connector.mem.shared(ctx)
		if err != nil {
			return nil, err
		}
		c.giveTurn = give
	} else {
		if err := c.hooks.BeforeBegin(ctx); err != nil {
			return nil, err
		}
		w, err := c.connector.takeWriter(ctx, true)
		if err != nil {
			return nil, err
		}
		c.gated, c.cur = true, w
		give, err := c.connector.mem.exclusive(ctx)
		if err != nil {
			c.releaseGate()
			return nil, err
		}
		c.giveTurn = give
	}
	dctx, err := driverContext(ctx)
	if err != nil {
		c.endTurns()
		return nil, err
	}
	t := &tx{conn: c, on: c.cur}
	if c.gated && c.connector.mem == nil {
		t.group, t.first, err = c.connector.joinGroup(dctx, opts)
	} else {
		t.inner, err = c.cur.begin(dctx, opts)
	}
	if err != nil {
		c.endTurns()
		return nil, err
	}
	c.business, c.settings = false, false
	c.inTx = true
	c.cur.keyRows, c.cur.outbox = nil, false
	return t, nil
}

// The driver watches the context of every statement it runs, BEGIN and
// COMMIT included, with a goroutine of its own that interrupts the
// statement if the context ends while it runs: a goroutine, a channel and
// two calls into SQLite for each of the twenty or so statements of a
// request. The lab's statements take microseconds, so the wrapper looks at
// the context once, before a statement starts, and hands the driver a
// context that never ends: a statement that has started runs to its end.
// The waits that can be long still end with the request's context: the
// write gate's (gate.go), and database/sql's own watch on a transaction,
// which rolls it back when its context ends. A wait for another process's
// lock ends after BusyTimeout. A Commit's wait for its group (group.go)
// does not end with the context: by then its changes are in the group,
// and its caller must hear whether they stayed.

// driverContext returns the context the driver runs a statement of ctx
// under, or ctx's error if ctx has ended.
func driverContext(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.Background(), nil
}

// releaseGate gives the writer and the gate back if this connection's
// transaction holds them.
func (c *conn) releaseGate() {
	if c.gated {
		c.gated, c.cur = false, c.own
		c.connector.gate.release()
	}
}

// endTurns gives back what the connection's transaction held: its turn on
// an in-memory database, and the write gate.
func (c *conn) endTurns() {
	if c.giveTurn != nil {
		c.giveTurn()
		c.giveTurn = nil
	}
	c.releaseGate()
}

// target returns the physical connection a statement runs on, and the function
// to call once it has run: inside a transaction, the transaction's; outside
// one, the writer (through the gate) for a statement that may write, and
// this connection's own for one that only reads.
func (c *conn) target(ctx context.Context, write bool) (p *physical, done func(), err error) {
	if c.inTx {
		return c.cur, func() {}, nil
	}
	if !write {
		give, err := c.connector.mem.shared(ctx)
		if err != nil {
			return nil, nil, err
		}
		return c.cur, give, nil
	}
	w, err := c.connector.takeWriter(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	give, err := c.connector.mem.exclusive(ctx)
	if err != nil {
		c.connector.gate.release()
		return nil, nil, err
	}
	return w, func() {
		give()
		c.connector.gate.release()
	}, nil
}

// holdSettings notes a write of the settings while the
// slow-settings-commit fault is armed (fault.Store.HoldsSettingsCommit).
// Inside a transaction, the transaction's COMMIT waits for the fault; the
// function it returns holds a write outside one, which committed as it
// ran, with the writer still taken: the process's other writes wait.
func (c *conn) holdSettings(query string) func() {
	switch {
	case !c.hooks.HoldsSettingsCommit(query):
	case c.inTx:
		c.settings = true
	default:
		return c.hooks.BeforeSettingsCommit
	}
	return func() {}
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.hooks.BeforeStatement(ctx, query); err != nil {
		return nil, err
	}
	p, done, err := c.target(ctx, true)
	if err != nil {
		return nil, err
	}
	hold := c.holdSettings(query)
	res, err := p.exec(ctx, query, args)
	err = c.refusedWrite(p, err)
	if err == nil && fault.IsBusinessWrite(ctx) {
		c.business = true
	}
	if err == nil {
		hold()
	}
	rows, outbox := c.afterStatement(p, err)
	// The writer is free before anyone hears of the rows: a slow listener
	// must not hold up every writer in the process.
	done()
	if err == nil && !c.inTx {
		if n, _ := res.RowsAffected(); n > 0 {
			c.hooks.Committed(rows, false)
			if outbox {
				c.hooks.OutboxCommitted()
			}
		} else {
			c.hooks.KeyRowsChanged(rows)
		}
	}
	return res, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.hooks.BeforeStatement(ctx, query); err != nil {
		return nil, err
	}
	// A write outside a transaction (INSERT … RETURNING) holds the writer
	// until its rows are closed: it commits then, and what it changed is
	// heard then, as after an Exec. Inside a transaction every statement
	// runs on the transaction's connection, whatever it does, so whether
	// it writes is not asked: a write transaction would read the question
	// with the write gate held, for nothing.
	write := !c.inTx && writes(query)
	p, done, err := c.target(ctx, write)
	if err != nil {
		return nil, err
	}
	hold := c.holdSettings(query)
	if !write {
		rows, err := p.query(ctx, query, args, func(error) { done() })
		return rows, c.refusedWrite(p, err)
	}
	p.changed = false
	w := &writeRows{}
	rows, err := p.query(ctx, query, args, func(err error) {
		changed := p.changed
		p.changed = false
		keyRows, outbox := c.afterStatement(p, nil)
		if err == nil && !w.failed {
			hold()
		}
		done()
		// A write that failed, or whose commit failed when its rows were
		// closed (a deferred foreign key it broke), was rolled back.
		if err != nil || w.failed || !changed {
			return
		}
		c.hooks.Committed(keyRows, false)
		if outbox {
			c.hooks.OutboxCommitted()
		}
	})
	if err != nil {
		return nil, err
	}
	w.closingRows = rows.(*closingRows)
	return w, nil
}

// refusedWrite says that err, SQLite refusing a write on the connection's
// own, is a write in a read-only transaction: SQLite alone says it cannot
// write a read-only database, and the database is not.
func (c *conn) refusedWrite(p *physical, err error) error {
	if err == nil || p != c.own {
		return err
	}
	var serr *sqlite.Error
	if !errors.As(err, &serr) || serr.Code() != sqlite3.SQLITE_READONLY {
		return err
	}
	return fmt.Errorf("cannot write in a read-only transaction: %w", err)
}

// writeRows are the rows of a write outside a transaction: failed is set
// when reading them failed, and then the statement, rolled back, changed
// nothing.
type writeRows struct {
	*closingRows
	failed bool
}

func (w *writeRows) Next(dest []driver.Value) error {
	err := w.closingRows.Next(dest)
	if err != nil && !errors.Is(err, io.EOF) {
		w.failed = true
	}
	return err
}

// afterStatement ends an autocommit statement on p: outside a transaction,
// a statement that succeeded has committed. It returns the key rows the
// statement changed, and whether it changed outbox rows, for the caller to
// report once the writer is free.
func (c *conn) afterStatement(p *physical, err error) (rows []int64, outbox bool) {
	if c.inTx {
		return nil, false
	}
	rows, outbox = p.keyRows, p.outbox
	p.keyRows, p.outbox = nil, false
	if err != nil {
		return nil, false
	}
	return rows, outbox
}

func (c *conn) Ping(ctx context.Context) error { return c.own.conn.(driver.Pinger).Ping(ctx) }

func (c *conn) ResetSession(ctx context.Context) error {
	return c.own.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *conn) IsValid() bool { return c.own.conn.(driver.Validator).IsValid() }

// tx is a transaction: on SQLite's own (inner), or a member of the group
// open on the writer (group, group.go); first is set on the member that
// opened the group.
type tx struct {
	inner driver.Tx
	group *group
	first bool
	conn  *conn
	on    *physical
}

func (t *tx) Commit() error {
	if t.conn.settings {
		t.conn.settings = false
		t.conn.hooks.BeforeSettingsCommit()
	}
	t.conn.hooks.BeforeCommit(t.conn.business)
	if err := t.conn.hooks.CommitFails(t.conn.business); err != nil {
		return errors.Join(err, t.Rollback())
	}
	if t.group != nil {
		return t.commitMember()
	}
	err := t.inner.Commit()
	business := t.conn.business
	t.conn.business = false
	t.conn.inTx = false
	if err != nil {
		// keptTx.Commit rolls back a transaction whose COMMIT failed: either
		// way the write lock is free.
		t.on.keyRows, t.on.outbox = nil, false
		t.conn.endTurns()
		return err
	}
	// Taken before the writer is given back: the next writer's rows are
	// its own.
	rows, outbox := t.on.keyRows, t.on.outbox
	t.on.keyRows, t.on.outbox = nil, false
	t.conn.endTurns()
	t.conn.hooks.Committed(rows, business)
	if outbox {
		t.conn.hooks.OutboxCommitted()
	}
	return t.conn.hooks.CommitAnswer(business)
}

func (t *tx) Rollback() error {
	if t.group != nil {
		return t.rollbackMember()
	}
	t.conn.business, t.conn.settings = false, false
	t.conn.inTx = false
	t.on.keyRows, t.on.outbox = nil, false
	err := t.inner.Rollback()
	t.conn.endTurns()
	return err
}

// stmt is a prepared statement. It runs through its connection's
// ExecContext and QueryContext, so that it writes on the writer and uses
// the statements the physical connection keeps.
type stmt struct {
	conn     *conn
	query    string
	numInput int
}

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return s.numInput }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.ExecContext(ctx, s.query, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.QueryContext(ctx, s.query, args)
}

func namedValues(args []driver.Value) []driver.NamedValue {
	named := make([]driver.NamedValue, len(args))
	for i, v := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return named
}
