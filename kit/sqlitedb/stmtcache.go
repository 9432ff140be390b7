package sqlitedb

import (
	"context"
	"database/sql/driver"
	"reflect"
)

// The driver prepares every statement run through Exec or Query anew, and
// parsing SQL is a good part of what a short transaction costs. Each
// connection keeps the statements it has prepared, by their text, and runs
// them again: SQLite re-prepares a kept statement by itself if the schema
// has changed since (a lab reset drops and creates the tables).

// maxCachedStmts bounds one connection's kept statements: code that builds
// its SQL with fmt.Sprintf would otherwise keep one per value.
const maxCachedStmts = 64

// cachedStmt is a kept statement; busy is set while rows read from it are
// open, when running it again would cut them short.
type cachedStmt struct {
	driver.Stmt
	busy bool
}

// cached returns the kept statement for query, preparing and keeping it the
// first time, or nil if it cannot be used now: it is busy, or it does not
// prepare (the caller runs query the driver's own way, which reports the
// same error).
func (c *physical) cached(ctx context.Context, query string) *cachedStmt {
	if st, ok := c.stmts[query]; ok {
		if st.busy {
			return nil
		}
		return st
	}
	inner, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if len(c.stmts) >= maxCachedStmts {
		c.dropCachedStmts()
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*cachedStmt)
	}
	st := &cachedStmt{Stmt: inner}
	c.stmts[query] = st
	return st
}

// dropCachedStmts closes the kept statements no rows are read from.
func (c *physical) dropCachedStmts() {
	for q, st := range c.stmts {
		if !st.busy {
			st.Close()
			delete(c.stmts, q)
		}
	}
}

// exec runs query with args, through its kept statement when it can.
func (c *physical) exec(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx, err := driverContext(ctx)
	if err != nil {
		return nil, err
	}
	if st := c.cached(ctx, query); st != nil {
		return st.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	}
	return c.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// query runs query with args, through its kept statement when it can; the
// statement is busy until the rows are closed. done is called once, with
// the query's error if it fails, else once the rows are closed, with what
// closing them returned (an autocommit write that commits then may fail).
func (c *physical) query(ctx context.Context, query string, args []driver.NamedValue, done func(error)) (driver.Rows, error) {
	ctx, err := driverContext(ctx)
	if err != nil {
		done(err)
		return nil, err
	}
	st := c.cached(ctx, query)
	if st == nil {
		rows, err := c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
		if err != nil {
			done(err)
			return nil, err
		}
		return &closingRows{Rows: rows, done: done}, nil
	}
	rows, err := st.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		done(err)
		return nil, err
	}
	st.busy = true
	return &closingRows{Rows: rows, st: st, done: done}, nil
}

// closingRows are rows that, once closed, free the kept statement they were
// read from, if any, and call done with what closing them returned. They
// forward the driver's optional column-type interfaces, which
// sql.Rows.ColumnTypes uses.
type closingRows struct {
	driver.Rows
	st   *cachedStmt
	done func(error)
}

func (r *closingRows) Close() error {
	err := r.Rows.Close()
	if r.st != nil {
		r.st.busy = false
		r.st = nil
	}
	if r.done != nil {
		r.done(err)
		r.done = nil
	}
	return err
}

func (r *closingRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.Rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
}

func (r *closingRows) ColumnTypeLength(i int) (int64, bool) {
	return r.Rows.(driver.RowsColumnTypeLength).ColumnTypeLength(i)
}

func (r *closingRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	return r.Rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
}

func (r *closingRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	return r.Rows.(driver.RowsColumnTypePrecisionScale).ColumnTypePrecisionScale(i)
}

func (r *closingRows) ColumnTypeScanType(i int) reflect.Type {
	return r.Rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
}

// The driver's own transactions prepare their BEGIN, COMMIT and ROLLBACK
// anew each time, and a write transaction does so with the write gate held
// (on an in-memory database, with the exclusive turn). Begun with begin,
// a transaction runs them through the statements the physical connection
// keeps, as the driver runs them otherwise: a write transaction begins
// IMMEDIATE (the _txlock of dataSourceName), a read-only one with a plain
// BEGIN, and the driver's options are not looked at further.

// begin begins a transaction on c through its kept statements.
func (c *physical) begin(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	query := "BEGIN IMMEDIATE"
	if opts.ReadOnly {
		query = "BEGIN"
	}
	if _, err := c.exec(ctx, query, nil); err != nil {
		return nil, err
	}
	return keptTx{c}, nil
}

// keptTx is a transaction begin began.
type keptTx struct{ on *physical }

// Commit commits the transaction. A COMMIT that fails may leave it open
// (a deferred foreign key still broken): it is rolled back then, as the
// driver does, so that the connection is outside any transaction either
// way.
func (t keptTx) Commit() error {
	_, err := t.on.exec(context.Background(), "COMMIT", nil)
	if err != nil {
		// When SQLite has ended the transaction itself, this ROLLBACK
		// fails for want of one, which changes nothing.
		t.on.exec(context.Background(), "ROLLBACK", nil)
	}
	return err
}

func (t keptTx) Rollback() error {
	_, err := t.on.exec(context.Background(), "ROLLBACK", nil)
	return err
}
