package sqlitedb

import (
	"path/filepath"
	"testing"

	"idemlab/kit/internal/outboxtest"
)

// A write of the outbox read through a query counts among the outbox
// commits as one run through Exec does (outboxtest), on an in-memory
// database and on a file. Caught: a write read through a query outside a
// transaction that is never heard (a relay that marked each row sent that
// way passed S9.commits-per-posting with none of its commits counted), and
// one heard for a change an earlier statement made.
func TestOutboxCommits_CountsTheWritesReadThroughQuery(t *testing.T) {
	onMemoryAndFile(t, func(t *testing.T, db *DB) {
		outboxtest.WritesReadThroughQuery(t, db, `CREATE TABLE outbox (id INTEGER PRIMARY KEY, sent_at TEXT)`)
	})
}

// onMemoryAndFile runs f on an in-memory database and on a database file.
func onMemoryAndFile(t *testing.T, f func(t *testing.T, db *DB)) {
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "lab.db")} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			f(t, db)
		})
	}
}

// A write read through a query outside a transaction whose commit fails
// when its rows are closed (a deferred foreign key it breaks, checked at
// the commit) changed nothing, and counts no commit. Caught: rows that
// report their write when they close whatever closing them returned (the
// caller's Scan fails, and the outbox commit is counted all the same).
func TestOutboxCommits_AWriteWhoseCommitFailsAtCloseCountsNone(t *testing.T) {
	onMemoryAndFile(t, func(t *testing.T, db *DB) {
		for _, q := range []string{
			`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE outbox (id INTEGER PRIMARY KEY,
				parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		outbox, commits := db.OutboxCommits(), db.Commits()
		var id int64
		err := db.QueryRow(`INSERT INTO outbox (parent) VALUES (7) RETURNING id`).Scan(&id)
		if err == nil {
			t.Fatal("a row that breaks a deferred foreign key was inserted")
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d outbox rows, want 0: the write committed", n)
		}
		if got := db.OutboxCommits() - outbox; got != 0 {
			t.Errorf("%d outbox commits, want 0", got)
		}
		if got := db.Commits() - commits; got != 0 {
			t.Errorf("%d commits, want 0", got)
		}
	})
}
