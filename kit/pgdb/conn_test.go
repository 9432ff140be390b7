package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

// TestOutboxCommits_CountsTheWritesReadThroughQuery: a write of the outbox
// run through QueryContext (UPDATE … RETURNING), outside a transaction or
// inside one that commits, counts one outbox commit when it changed rows,
// as one run through ExecContext does; one that changed no row, one rolled
// back, and a read of the outbox count none. It catches a connection that
// sees only ExecContext's count of rows, which a relay that marks each
// row sent with UPDATE … RETURNING passed S9.commits-per-posting with.
func TestOutboxCommits_CountsTheWritesReadThroughQuery(t *testing.T) {
	ctx := context.Background()
	dbURL, drop, err := CreateDatabase(ctx, cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	defer drop(ctx)
	db, err := Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE outbox (id BIGSERIAL PRIMARY KEY, sent_at TEXT)`); err != nil {
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
		before := db.OutboxCommits()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := db.OutboxCommits() - before; got != c.want {
			t.Errorf("%s: %d outbox commits, want %d", c.name, got, c.want)
		}
	}
	if db.OutboxCommits() > db.Commits() {
		t.Errorf("%d outbox commits of %d commits: more than all of them", db.OutboxCommits(), db.Commits())
	}
}
