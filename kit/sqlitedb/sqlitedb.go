// Package sqlitedb opens the lab's embedded SQLite database and tells a
// UNIQUE violation apart from every other error.
//
// Every connection is opened in WAL mode with a busy timeout and foreign keys
// on, and every write transaction holds SQLite's write lock from its start
// (BEGIN IMMEDIATE), so that two writers queue for the write lock instead
// of failing halfway through. A read-only transaction begins with a plain
// BEGIN and refuses any write, as PostgreSQL's BEGIN READ ONLY does. The
// writers of one process queue in Go, first come first served, at a write
// gate (gate.go) rather than in SQLite's sleeping busy handler, and each
// connection keeps the statements it has prepared (stmtcache.go). On a
// database file, the write transactions that queue run one after the
// other inside one SQLite transaction, each after the first in a
// savepoint, and commit together: a Commit returns once that COMMIT is
// done, with its error if it failed (group.go). On an in-memory
// database, which has no WAL, its readers and writers also take their
// turns in Go (memlock.go), and each transaction commits alone.
//
// A connection of its own runs the checkpoints of a database file, beside
// the writers rather than inside one of their commits (checkpoint.go).
//
// The connections are wrapped (see hooks.go) so that lab mode can inject the
// faults of lab mode: a crash right after the commit that carried a
// business write, and a key store that returns errors.
package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"idemlab/kit/fault"
)

// DB is an open lab database: the *sql.DB every package uses, plus the fault
// switches lab mode flips and what the database reports to it.
type DB struct {
	*sql.DB
	*fault.Store
	gate *writeGate
	mem  *memTurns     // nil for a database file
	ckpt *checkpointer // nil for an in-memory database
	path string
}

// Path reports the file the database lives in, or ":memory:".
func (db *DB) Path() string { return db.path }

// Open opens (creating if needed) the SQLite database at path. The path
// ":memory:" gives a private in-memory database that still allows many
// connections, so concurrent requests behave as they do on a file.
func Open(path string) (*DB, error) {
	dsn, err := dataSourceName(path)
	if err != nil {
		return nil, err
	}
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	h := &fault.Store{}
	gate := newWriteGate()
	c := &connector{base: base, hooks: h, gate: gate}
	if path == ":memory:" {
		c.mem = newMemTurns()
	} else {
		if c.ckpt, err = startCheckpointer(base, path, gate); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	sdb := sql.OpenDB(c)
	// Each request holds a connection while it waits at the write gate, so
	// under load there are as many connections as requests in flight.
	// database/sql keeps only two idle ones by default and closes the rest,
	// and opening a SQLite connection (pragmas, reading the schema) costs
	// more than a short transaction: keep them, and let the idle ones go
	// after a while.
	sdb.SetMaxIdleConns(idleConns)
	sdb.SetConnMaxIdleTime(time.Minute)
	if err := sdb.Ping(); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &DB{DB: sdb, Store: h, gate: gate, mem: c.mem, ckpt: c.ckpt, path: path}, nil
}

// BusyTimeout is how long a statement waits for a lock another connection
// holds before it fails with "database is locked" (SQLITE_BUSY). A request
// that takes about this long has waited on a lock: often one its own open
// transaction holds.
const BusyTimeout = 10 * time.Second

// idleConns is how many idle connections a database keeps open.
const idleConns = 64

var memoryDatabases atomic.Int64

func dataSourceName(path string) (string, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	// Statement journals in memory: a savepoint's (each member of a group
	// after the first runs in one, group.go) went to a temporary file, a
	// write for each page the member changed.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	if path == ":memory:" {
		// The memdb VFS shares one in-memory database between all the
		// connections that name it; the name must start with a slash.
		q.Set("vfs", "memdb")
		name := fmt.Sprintf("/idemlab-%d", memoryDatabases.Add(1))
		return "file:" + name + "?" + q.Encode(), nil
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return "", fmt.Errorf("open database: invalid path %q", path)
	}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", writerAutocheckpoint))
	return "file:" + path + "?" + q.Encode(), nil
}

// IsUniqueViolation reports whether err is SQLite telling us that an INSERT
// or UPDATE collided with a UNIQUE or PRIMARY KEY constraint. It looks at the
// extended result code, never at the message text: a NOT NULL, CHECK or
// FOREIGN KEY failure, a busy database or a closed connection are all
// different problems and must not be mistaken for "someone else has this key".
func IsUniqueViolation(err error) bool {
	var serr *sqlite.Error
	if !errors.As(err, &serr) {
		return false
	}
	switch serr.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// IsBusy reports whether err is SQLite giving up on a lock (SQLITE_BUSY or
// SQLITE_LOCKED, any extended form), or a writer giving up on the write
// gate after the same BusyTimeout.
func IsBusy(err error) bool {
	if errors.Is(err, errGateBusy) || errors.Is(err, errMemBusy) {
		return true
	}
	var serr *sqlite.Error
	if !errors.As(err, &serr) {
		return false
	}
	primary := serr.Code() & 0xff
	return primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED
}
