package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A read-only transaction refuses every write with an error that says so,
// as PostgreSQL's BEGIN READ ONLY does, and can still read and commit; on
// an in-memory database and on a file. Caught: a read-only transaction
// that is a plain BEGIN on a connection that may write (its INSERT
// committed, beside the writer and outside the write gate).
func TestReadOnlyTransaction_RefusesWrites(t *testing.T) {
	onMemoryAndFile(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, `CREATE TABLE n (v INTEGER)`); err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`)
		refused(t, "an INSERT run through Exec", err)
		var v int
		err = tx.QueryRowContext(ctx, `INSERT INTO n VALUES (2) RETURNING v`).Scan(&v)
		refused(t, "an INSERT … RETURNING read through QueryRow", err)
		var inside int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&inside); err != nil {
			t.Fatalf("a read after the refused writes: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("commit after the refused writes: %v", err)
		}

		if _, err := db.ExecContext(ctx, `INSERT INTO n VALUES (3)`); err != nil {
			t.Fatalf("a write after the read-only transaction: %v", err)
		}
		var rows int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if inside != 0 || rows != 1 {
			t.Fatalf("rows seen inside the read-only transaction %d, after it and one write %d; want 0 and 1", inside, rows)
		}
	})
}

// refused fails t unless err refuses a write in a read-only transaction,
// says so, and is still SQLite's error.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s in a read-only transaction succeeded", what)
	}
	var serr *sqlite.Error
	if !errors.As(err, &serr) || serr.Code() != sqlite3.SQLITE_READONLY || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("%s in a read-only transaction: err = %v; want SQLite's SQLITE_READONLY, said to be a write in a read-only transaction", what, err)
	}
}
