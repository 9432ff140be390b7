// Package outboxtest holds a test both of the kit's database engines run:
// which statements count among the commits that changed the outbox.
package outboxtest

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

// DB is an open database of the kit (sqlitedb.DB, pgdb.DB): the *sql.DB
// and the counts its fault store keeps.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	OutboxCommits() int64
	Commits() int64
}

// WritesReadThroughQuery creates an outbox table with create (a table
// outbox of an id column, the primary key, and a text column sent_at) and
// checks that a write of the outbox run through QueryContext (UPDATE …
// RETURNING), outside a transaction or inside one that commits, counts one
// outbox commit and one commit when it changed rows, as one run through
// ExecContext does; one that changed no row, one rolled back, and a read
// of the outbox count none.
func WritesReadThroughQuery(t *testing.T, db DB, create string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, create); err != nil {
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
		name string
		run  func() error
		want int64
	}{
		{"a mark outside a transaction", func() error { return db.QueryRowContext(ctx, mark, 1).Scan(&id) }, 1},
		{"a mark in a transaction that commits", func() error {
			return inTx(true, func(tx *sql.Tx) error { return tx.QueryRowContext(ctx, mark, 2).Scan(&id) })
		}, 1},
		{"a mark in a transaction rolled back", func() error {
			return inTx(false, func(tx *sql.Tx) error { return tx.QueryRowContext(ctx, mark, 3).Scan(&id) })
		}, 0},
		{"a mark of no row", func() error {
			if err := db.QueryRowContext(ctx, mark, 99).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			return nil
		}, 0},
		{"a read of the outbox", func() error { return db.QueryRowContext(ctx, `SELECT id FROM outbox WHERE id = ?`, 1).Scan(&id) }, 0},
		{"a mark through a prepared statement", func() error {
			st, err := db.PrepareContext(ctx, mark)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.QueryRowContext(ctx, 3).Scan(&id)
		}, 1},
	} {
		outbox, commits := db.OutboxCommits(), db.Commits()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := db.OutboxCommits() - outbox; got != c.want {
			t.Errorf("%s: %d outbox commits, want %d", c.name, got, c.want)
		}
		if got := db.Commits() - commits; got != c.want {
			t.Errorf("%s: %d commits, want %d", c.name, got, c.want)
		}
	}
}
