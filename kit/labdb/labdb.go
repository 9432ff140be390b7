// Package labdb opens the lab's database on either engine: SQLite (a file
// or ":memory:", the default; package sqlitedb) or PostgreSQL (a
// postgres:// URL; package pgdb, left out of a build tagged nopostgres,
// see postgres.go). The kit and the stages use what it
// returns as a plain *sql.DB, and the few things the engines do differently
// are here, each in one small helper: telling a UNIQUE violation apart
// (IsUniqueViolation), the column types of a CREATE TABLE (CreateTable),
// a statement that may fail without ending its transaction (Savepoint).
package labdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"idemlab/kit/fault"
	"idemlab/kit/sqlitedb"
)

// Engine is a database engine the lab runs on.
type Engine string

// The engines.
const (
	SQLite     Engine = "sqlite"
	PostgreSQL Engine = "postgres"
)

// Name is how the engine is written for people: "SQLite", "PostgreSQL",
// or the engine's own word for one the lab does not know.
func (e Engine) Name() string {
	switch e {
	case SQLite:
		return "SQLite"
	case PostgreSQL:
		return "PostgreSQL"
	}
	return string(e)
}

// EnvURL is the environment variable that names a PostgreSQL cluster for
// the lab's tests and servers (a postgres:// URL).
const EnvURL = "IDEMLAB_DATABASE_URL"

// EnvThrowaway is set, beside EnvURL, by scripts/pg-cluster.sh: the
// cluster EnvURL names lives only as long as the command it runs.
const EnvThrowaway = "IDEMLAB_PG_THROWAWAY"

// EnvRootFrom is set by lab, for itself and the checks it runs, when it
// was started in a folder under the checkout's root, not at the root: the
// way from that folder to the root ("../.." from stages/stage3), where
// the make targets and scripts it prints are.
const EnvRootFrom = "IDEMLAB_ROOT_FROM"

// FromRoot is what a command printed for a person to type, written to be
// run at the checkout's root, needs in front of it to run where lab was
// started: "cd ../.. && " from stages/stage3 (EnvRootFrom), and nothing
// at the root.
func FromRoot() string {
	if dir := os.Getenv(EnvRootFrom); dir != "" {
		return "cd " + dir + " && "
	}
	return ""
}

// AgainPrefix is what a command printed for a person to run again needs
// in front of it to run where lab was started (FromRoot) and on the
// engine this process runs on: "scripts/pg-cluster.sh " under a throwaway
// cluster, which is gone once its command ends, and nothing otherwise
// (SQLite, or a cluster of one's own, which EnvURL still names in that
// person's shell).
func AgainPrefix() string {
	if os.Getenv(EnvURL) != "" && os.Getenv(EnvThrowaway) != "" {
		return FromRoot() + "scripts/pg-cluster.sh "
	}
	return FromRoot()
}

// DB is an open lab database: the *sql.DB every package uses, the fault
// switches lab mode flips (fault.Store), and the engine it runs on.
type DB struct {
	*sql.DB
	*fault.Store
	engine Engine
	target string
	lite   *sqlitedb.DB // the SQLite database, nil on PostgreSQL
	pg     postgresDB
	closed func(context.Context) error
}

// postgresDB is an open PostgreSQL database, as DB needs it (package
// pgdb's DB).
type postgresDB interface {
	WatchKeyTable(ctx context.Context) error
	Close() error
}

// Open opens the database target names: a postgres:// or postgresql://
// URL, or else a SQLite file (created if needed) or ":memory:".
func Open(ctx context.Context, target string) (*DB, error) {
	if EngineOfTarget(target) == SQLite {
		db, err := sqlitedb.Open(target)
		if err != nil {
			return nil, err
		}
		return &DB{DB: db.DB, Store: db.Store, engine: SQLite, target: target, lite: db}, nil
	}
	return openPostgres(ctx, target)
}

// OpenOwn opens a database no one else uses, removed when it is closed:
// for a postgres:// URL, a new database on that cluster (pgdb.CreateDatabase);
// otherwise what Open opens (":memory:" is already private).
func OpenOwn(ctx context.Context, target string) (*DB, error) {
	if EngineOfTarget(target) == SQLite {
		return Open(ctx, target)
	}
	own, drop, err := createPostgresDatabase(ctx, target)
	if err != nil {
		return nil, err
	}
	db, err := Open(ctx, own)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	db.closed = drop
	return db, nil
}

// Fresh makes a database no one else uses, for a server that may crash
// and start again on it: a new database on the PostgreSQL cluster target
// names (pgdb.CreateDatabase: the tables of the database in the URL are
// never touched), or else a new SQLite file in dir, which goes with dir
// (":memory:" too: a restarted server must find its rows). It returns
// what Open opens and a function that drops the database, which does
// nothing for a file. It returns the cluster's error.
func Fresh(ctx context.Context, target, dir string) (string, func(context.Context) error, error) {
	if EngineOfTarget(target) == SQLite {
		return filepath.Join(dir, "lab.db"), func(context.Context) error { return nil }, nil
	}
	return createPostgresDatabase(ctx, target)
}

// ReuseDatabases has this process empty the PostgreSQL databases it makes
// with OpenOwn and Fresh when it is done with each, where it would drop
// them, and give them to the next OpenOwn or Fresh on the same cluster:
// creating and dropping a database costs PostgreSQL more than most checks
// do (pgdb.ReuseDatabases). It returns the function that drops those it
// keeps, for the end of the process. It changes nothing on SQLite.
func ReuseDatabases() (dropKept func(context.Context) error) {
	return reusePostgresDatabases()
}

// Sibling returns a database of its own for another service beside
// target, on its engine, made if it does not exist yet: the SQLite file
// named after target's with suffix (lab.db: lab_core.db), or the
// PostgreSQL database named after target's with suffix on the same cluster
// (pgdb.Sibling); ":memory:" for ":memory:". It returns the cluster's
// error.
func Sibling(ctx context.Context, target, suffix string) (string, error) {
	switch {
	case target == ":memory:":
		return target, nil
	case EngineOfTarget(target) == PostgreSQL:
		return siblingPostgres(ctx, target, suffix)
	}
	return strings.TrimSuffix(target, filepath.Ext(target)) + suffix + filepath.Ext(target), nil
}

// EngineOfTarget reports the engine Open would open target on.
func EngineOfTarget(target string) Engine {
	if strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://") {
		return PostgreSQL
	}
	return SQLite
}

// Redacted is target with any password in it hidden, for printing.
func Redacted(target string) string {
	if EngineOfTarget(target) == PostgreSQL {
		return redactPostgres(target)
	}
	return target
}

// Engine reports the engine db runs on.
func (db *DB) Engine() Engine { return db.engine }

// LockWaits reports how many sessions on db wait now for a lock that
// another transaction holds. On PostgreSQL it counts the backends of db's
// database, the lab server's own (its replicas share it, and no one
// else), that pg_stat_activity shows waiting on a lock: a row another
// transaction wrote or locked, say, a table or an advisory lock. A wait
// on an object lock is left out: a commit that sends a NOTIFY (the key
// table's trigger does) takes the database's notify lock for a moment,
// and one that comes meanwhile waits on it, for no lock a transaction
// holds while it runs. On SQLite it is always 0: a writer
// that finds the write lock taken by another process sleeps in SQLite's
// busy handler, which tells no one, until it gets the lock or gives up
// busy after the busy timeout. It returns the database's error.
func (db *DB) LockWaits(ctx context.Context) (int64, error) {
	if db.engine != PostgreSQL {
		return 0, nil
	}
	var n int64
	err := db.QueryRowContext(fault.LabRead(ctx),
		`SELECT count(*) FROM pg_stat_activity
		 WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'object'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the sessions waiting on a lock: %w", err)
	}
	return n, nil
}

// Target reports what db was opened from: a file, ":memory:", or a URL.
func (db *DB) Target() string { return db.target }

// WatchKeyTable makes db report changes to the stage's idempotency_keys
// rows (fault.Store.OnKeyRowsChanged). Call it once the stage has created
// its tables, and again after a reset. SQLite reports them by itself; on
// PostgreSQL it puts a trigger on the table (see package pgdb).
func (db *DB) WatchKeyTable(ctx context.Context) error {
	if db.pg == nil {
		return nil
	}
	return db.pg.WatchKeyTable(ctx)
}

// GateUse reports what a SQLite database's write gate has seen
// (sqlitedb.GateUse); nothing on PostgreSQL, which has no gate.
func (db *DB) GateUse() sqlitedb.GateUse {
	if db.lite == nil {
		return sqlitedb.GateUse{}
	}
	return db.lite.GateUse()
}

// Close closes db, and drops it if it was opened with OpenOwn.
func (db *DB) Close() error {
	var err error
	if db.pg != nil {
		err = db.pg.Close()
	} else {
		err = db.DB.Close()
	}
	if db.closed != nil {
		err = errors.Join(err, db.closed(context.Background()))
	}
	return err
}

// EngineOf reports the engine a *sql.DB opened by this package runs on.
func EngineOf(db *sql.DB) Engine {
	if isPostgresDriver(db.Driver()) {
		return PostgreSQL
	}
	return SQLite
}

// IsUniqueViolation reports whether err is the database telling us that
// an INSERT or UPDATE collided with a UNIQUE or PRIMARY KEY constraint, on
// either engine: SQLite's extended result codes, PostgreSQL's SQLSTATE
// 23505. It looks at codes, never at the message text: a NOT NULL, CHECK
// or FOREIGN KEY failure, a busy database or a closed connection are all
// different problems and must not be mistaken for "someone else has this key".
func IsUniqueViolation(err error) bool {
	return sqlitedb.IsUniqueViolation(err) || isPostgresUniqueViolation(err)
}

// IsBusy reports whether err is the database giving up on a lock: SQLite's
// SQLITE_BUSY or SQLITE_LOCKED (or the write gate's wait), PostgreSQL's
// deadlock, serialization failure or lock not available.
func IsBusy(err error) bool {
	return sqlitedb.IsBusy(err) || isPostgresBusy(err)
}

var (
	integerPrimaryKey = regexp.MustCompile(`(?i)\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?\b`)
	integerType       = regexp.MustCompile(`(?i)\bINTEGER\b`)
	blobType          = regexp.MustCompile(`(?i)\bBLOB\b`)
)

// CreateTable runs schema, a CREATE TABLE (or CREATE INDEX) statement
// written in SQLite's words, on db's engine. The engines agree on the rest
// but spell three column types differently, and on PostgreSQL this writes
// them its way: an INTEGER PRIMARY KEY, which SQLite numbers by itself (the
// rowid), becomes BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY;
// INTEGER, which SQLite stores in 64 bits, becomes BIGINT; BLOB becomes
// BYTEA. It returns the engine's error.
func CreateTable(ctx context.Context, db *sql.DB, schema string) error {
	if EngineOf(db) == PostgreSQL {
		schema = integerPrimaryKey.ReplaceAllString(schema, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
		schema = integerType.ReplaceAllString(schema, "BIGINT")
		schema = blobType.ReplaceAllString(schema, "BYTEA")
	}
	_, err := db.ExecContext(ctx, schema)
	return err
}

// Savepoint runs fn, one statement of tx that may fail (an INSERT that may
// hit a UNIQUE constraint), so that tx goes on if it does, as if the
// statement had never run, and returns fn's error. SQLite undoes a failed
// statement and keeps its transaction; PostgreSQL aborts the whole
// transaction at the first error, and refuses every later statement until
// it rolls back. A savepoint, which both engines have, gives PostgreSQL a
// point to roll back to instead. When ctx says the server runs on SQLite
// (the kit marks every request's context, see WithEngine), fn runs alone:
// the two statements of a savepoint would buy nothing there.
func Savepoint(ctx context.Context, tx *sql.Tx, fn func() error) error {
	if e, ok := ctx.Value(engineKey{}).(Engine); ok && e == SQLite {
		return fn()
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT attempt`); err != nil {
		return err
	}
	if err := fn(); err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT attempt`); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT attempt`)
	return err
}

// TestTarget is what a test's lab server opens with OpenOwn: the
// PostgreSQL cluster EnvURL names, if it is set, and else a private
// SQLite database in memory.
func TestTarget() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return ":memory:"
}

type engineKey struct{}

// WithEngine returns ctx marked as served by a database on engine: the kit
// marks each request's context with its server's engine, for Savepoint.
func WithEngine(ctx context.Context, e Engine) context.Context {
	return context.WithValue(ctx, engineKey{}, e)
}
