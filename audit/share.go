package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net/http"
	"sync"
)

// A Unit is a transaction a middleware shares with the handler it wraps,
// as a library does that opens the transaction and hands it to the
// handler through the request's context: the handler's business write
// runs in it, and the handler's commit only hands it back, so that the
// middleware can store the answer and complete its key in the very
// commit that moves the money.
//
// The naive handlers know nothing of it: they open and commit their own
// transaction, and the lab turns that transaction into the Unit's for a
// request that carries one (see Env.Share).
type Unit struct {
	db *sql.DB
	mu sync.Mutex
	tx *sql.Tx
	// handed says the handler committed: its write waits in tx for the
	// middleware's commit.
	handed bool
}

type unitKey struct{}

// share returns r with a fresh Unit on db in its context.
func share(db *sql.DB) func(r *http.Request) (*http.Request, *Unit) {
	return func(r *http.Request) (*http.Request, *Unit) {
		u := &Unit{db: db}
		return r.WithContext(context.WithValue(r.Context(), unitKey{}, u)), u
	}
}

// Handed returns the transaction that holds the handler's committed
// business write, for the middleware to finish: it adds its own writes,
// then commits it or rolls it back (the money with it). It returns nil if
// the handler committed nothing (it refused the request, failed, or rolled
// back), and for a nil Unit, which shares nothing. While a transaction is
// handed, it holds the database's writer: the middleware must finish it
// before it writes anything else.
func (u *Unit) Handed() *sql.Tx {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.handed {
		return nil
	}
	return u.tx
}

// Abandon rolls back a transaction the middleware has not finished (a
// panic went through it, say); it does nothing to one already finished,
// nor for a nil Unit.
func (u *Unit) Abandon() {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tx != nil {
		u.tx.Rollback()
	}
}

// begin opens the Unit's transaction for the handler.
func (u *Unit) begin(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tx != nil {
		return nil, errors.New("audit: the handler began a second transaction in one request")
	}
	tx, err := u.db.BeginTx(ctx, opts)
	u.tx = tx
	return tx, err
}

// commit is the handler's commit: it hands the transaction over.
func (u *Unit) commit() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handed = true
	return nil
}

// handlerDB returns the database the naive handlers are given: db itself,
// through a driver of the package's own, so that a transaction the
// handler begins for a request that carries a Unit is the Unit's.
func handlerDB(db *sql.DB) *sql.DB {
	return sql.OpenDB(connector{db: db})
}

// The driver below runs every statement on db, through database/sql; a
// connection only keeps the transaction it is in.

type connector struct{ db *sql.DB }

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.Open("") }
func (c connector) Driver() driver.Driver                        { return c }
func (c connector) Open(string) (driver.Conn, error)             { return &conn{db: c.db}, nil }

type conn struct {
	db *sql.DB
	tx *sql.Tx
	// unit is set while the connection is in a Unit's transaction.
	unit *Unit
}

// executor is what a statement runs on: the transaction, or db.
type executor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (c *conn) on() executor {
	if c.tx != nil {
		return c.tx
	}
	return c.db
}

func (c *conn) Prepare(query string) (driver.Stmt, error) { return &stmt{conn: c, query: query}, nil }
func (c *conn) Close() error                              { return nil }
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	o := &sql.TxOptions{Isolation: sql.IsolationLevel(opts.Isolation), ReadOnly: opts.ReadOnly}
	var err error
	if u, ok := ctx.Value(unitKey{}).(*Unit); ok {
		c.unit = u
		c.tx, err = u.begin(ctx, o)
	} else {
		c.tx, err = c.db.BeginTx(ctx, o)
	}
	if err != nil {
		c.tx, c.unit = nil, nil
		return nil, err
	}
	return c, nil
}

// Commit commits the connection's transaction, or hands a Unit's over.
func (c *conn) Commit() error {
	tx, u := c.tx, c.unit
	c.tx, c.unit = nil, nil
	if u != nil {
		return u.commit()
	}
	return tx.Commit()
}

func (c *conn) Rollback() error {
	tx := c.tx
	c.tx, c.unit = nil, nil
	return tx.Rollback()
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.on().ExecContext(ctx, query, values(args)...)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.on().QueryContext(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns()
	if err != nil {
		r.Close()
		return nil, err
	}
	return &rows{rows: r, cols: cols}, nil
}

func values(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
		if a.Name != "" {
			out[i] = sql.Named(a.Name, a.Value)
		}
	}
	return out
}

// stmt is a prepared statement: database/sql runs it through its
// ExecContext and QueryContext, never through the older Exec and Query.
type stmt struct {
	conn  *conn
	query string
}

var errOldStmt = errors.New("audit: a statement runs through ExecContext and QueryContext")

func (s *stmt) Close() error                               { return nil }
func (s *stmt) NumInput() int                              { return -1 }
func (s *stmt) Exec([]driver.Value) (driver.Result, error) { return nil, errOldStmt }
func (s *stmt) Query([]driver.Value) (driver.Rows, error)  { return nil, errOldStmt }
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.ExecContext(ctx, s.query, args)
}
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.QueryContext(ctx, s.query, args)
}

// rows reads database/sql's rows as a driver's.
type rows struct {
	rows *sql.Rows
	cols []string
}

func (r *rows) Columns() []string { return r.cols }
func (r *rows) Close() error      { return r.rows.Close() }

func (r *rows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	ptrs := make([]any, len(dest))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	return r.rows.Scan(ptrs...)
}
