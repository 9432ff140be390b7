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
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "lab.db")} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			outboxtest.WritesReadThroughQuery(t, db, `CREATE TABLE outbox (id INTEGER PRIMARY KEY, sent_at TEXT)`)
		})
	}
}
