package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// A write of the outbox run through QueryContext (UPDATE … RETURNING),
// outside a transaction or inside one that commits, counts one outbox
// commit and one commit when it changed rows, as one run through
// ExecContext does; one that changed no row, one rolled back, and a read
// of the outbox count none. Caught: a write read through a query outside a
// transaction that is never heard (a relay that marked each row sent that
// way passed S9.commits-per-posting with none of its commits counted), and
// one heard for a change an earlier statement made.
func TestOutboxCommits_CountsTheWritesReadThroughQuery(t *testing.T) {
	for _, path := range []string{":memory:", filepath.Join(t.TempDir(), "lab.db")} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			countsTheWritesReadThroughQuery(t, path)
		})
	}
}

func countsTheWritesReadThroughQuery(t *testing.T, path string) {
	ctx := context.Background()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE outbox (id INTEGER PRIMARY KEY, sent_at TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO outbox (sent_at) VALUES (NULL), (NULL), (NULL)`); err != nil {
		t.Fatal(err)
	}
	const mark = `UPDATE outbox SET sent_at = 'now' WHERE id = ? RETURNING id`
	inTx := func(commit bool, f func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := f(tx); err != nil {
			tx.Rollback()
			return err
		}
		if !commit {
			return tx.Rollback()
		}
		return tx.Commit()
	}
	var id int64
	for _, c := range []struct {
		name            string
		run             func() error
		outbox, commits int64
	}{
		{"a mark outside a transaction", func() error { return db.QueryRowContext(ctx, mark, 1).Scan(&id) }, 1, 1},
		{"a mark in a transaction that commits", func() error {
			return inTx(true, func(tx *sql.Tx) error { return tx.QueryRowContext(ctx, mark, 2).Scan(&id) })
		}, 1, 1},
		{"a mark in a transaction rolled back", func() error {
			return inTx(false, func(tx *sql.Tx) error { return tx.QueryRowContext(ctx, mark, 3).Scan(&id) })
		}, 0, 0},
		{"a mark of no row", func() error {
			if err := db.QueryRowContext(ctx, mark, 99).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			return nil
		}, 0, 0},
		{"a read of the outbox", func() error { return db.QueryRowContext(ctx, `SELECT id FROM outbox WHERE id = ?`, 1).Scan(&id) }, 0, 0},
		{"a mark through a prepared statement", func() error {
			st, err := db.PrepareContext(ctx, mark)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.QueryRowContext(ctx, 3).Scan(&id)
		}, 1, 1},
	} {
		outbox, commits := db.OutboxCommits(), db.Commits()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := db.OutboxCommits() - outbox; got != c.outbox {
			t.Errorf("%s: %d outbox commits, want %d", c.name, got, c.outbox)
		}
		if got := db.Commits() - commits; got != c.commits {
			t.Errorf("%s: %d commits, want %d", c.name, got, c.commits)
		}
	}
}
