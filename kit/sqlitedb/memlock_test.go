package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"
)

// openMemory opens an in-memory database whose turns and write gate give
// up after timeout instead of BusyTimeout, with a table n.
func openMemory(t *testing.T, timeout time.Duration) *DB {
	t.Helper()
	return openTimed(t, ":memory:", timeout)
}

// Readers and writers of an in-memory database at once: every statement
// succeeds and every row arrives. Caught: a turn a reader never gives back
// (a writer waits out the timeout and is busy), and a writer that holds
// only its COMMIT exclusive (SQLite's in-memory locks then shut readers out
// for the whole transaction, in its busy handler, while the writer waits
// for them in Go: both give up busy).
func TestMemTurns_ReadersAndWritersAtOnce(t *testing.T) {
	db := openMemory(t, 5*time.Second)
	ctx := context.Background()
	const workers, each = 4, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range each {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`); err != nil {
					tx.Rollback()
					t.Error(err)
					return
				}
				if err := tx.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range each {
				rows, err := db.QueryContext(ctx, `SELECT v FROM n LIMIT ?`, i)
				if err != nil {
					t.Error(err)
					return
				}
				for rows.Next() {
				}
				if err := rows.Close(); err != nil {
					t.Error(err)
				}
				if _, err := db.ExecContext(ctx, `INSERT INTO n VALUES (2)`); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var count int
	if err := db.QueryRow(`SELECT count(*) FROM n`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 2*workers*each {
		t.Fatalf("rows = %d, want %d", count, 2*workers*each)
	}
}

// What waits for itself on SQLite's in-memory locks waits for itself on
// the turns too, and ends the same way: busy after the timeout, never a
// hang. A read outside an open write transaction; a write transaction
// begun while rows read outside it are open. Two reads at once are fine.
// Caught: turns with no timeout (the test hangs), an error IsBusy does not
// recognise, and a shared turn that shuts out another reader.
func TestMemTurns_WaitingForItselfIsBusyAfterTheTimeout(t *testing.T) {
	db := openMemory(t, 50*time.Millisecond)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n)
	if !IsBusy(err) {
		t.Fatalf("read beside an open write transaction: err = %v, want one IsBusy reports", err)
	}
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); !IsBusy(err) {
		t.Fatalf("read-only transaction beside an open write transaction: err = %v, want one IsBusy reports", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	rows, err := db.QueryContext(ctx, `SELECT v FROM n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n); err != nil {
		t.Fatalf("a second read while the first one's rows are open: %v", err)
	}
	if _, err := db.BeginTx(ctx, nil); !IsBusy(err) {
		t.Fatalf("write transaction while rows read outside it are open: err = %v, want one IsBusy reports", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO n VALUES (1)`); !IsBusy(err) {
		t.Fatalf("write while rows read outside it are open: err = %v, want one IsBusy reports", err)
	}
	rows.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO n VALUES (1)`); err != nil {
		t.Fatalf("write once the rows are closed: %v (a turn was kept)", err)
	}
}

// A wait for a turn ends with its context. Caught: turns that ignore it.
func TestMemTurns_WaitEndsWithTheContext(t *testing.T) {
	db := openMemory(t, time.Hour)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.QueryContext(ctx, `SELECT v FROM n`); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// Every way a statement or a transaction ends gives its turn back: rows
// read to their end, closed early or cut short by their context, a
// RETURNING write read through QueryRow, a read-only transaction rolled
// back, a write transaction whose COMMIT fails (a deferred foreign key) or
// whose context ends, a BEGIN refused for an ended context. After each,
// the exclusive turn is free (database/sql rolls back a transaction whose
// context ended on a goroutine of its own, so the turn is waited for, up
// to the timeout). Caught: a path that keeps a turn (the wait for it is
// busy).
func TestMemTurns_EveryEndGivesTheTurnBack(t *testing.T) {
	db := openMemory(t, time.Second)
	for _, q := range []string{
		`INSERT INTO n VALUES (1), (2), (3)`,
		`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	bg := context.Background()
	// read opens the rows of a read outside a transaction.
	read := func(ctx context.Context) *sql.Rows {
		rows, err := db.QueryContext(ctx, `SELECT v FROM n`)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	// write begins a write transaction and runs insert in it.
	write := func(ctx context.Context, insert string) *sql.Tx {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, insert); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, cancel func())
	}{
		{"rows read to their end", func(ctx context.Context, cancel func()) {
			rows := read(ctx)
			for rows.Next() {
			}
			rows.Close()
		}},
		{"rows closed early, twice", func(ctx context.Context, cancel func()) {
			rows := read(ctx)
			rows.Next()
			rows.Close()
			rows.Close()
		}},
		{"rows whose context ends", func(ctx context.Context, cancel func()) {
			rows := read(ctx)
			rows.Next()
			cancel()
			for rows.Next() {
			}
		}},
		{"a RETURNING write read through QueryRow", func(ctx context.Context, cancel func()) {
			var v int
			if err := db.QueryRowContext(ctx, `UPDATE n SET v = v + 1 RETURNING v`).Scan(&v); err != nil {
				t.Fatal(err)
			}
		}},
		{"a read-only transaction rolled back", func(ctx context.Context, cancel func()) {
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			tx.Rollback()
		}},
		{"a COMMIT that fails", func(ctx context.Context, cancel func()) {
			if err := write(ctx, `INSERT INTO child VALUES (7)`).Commit(); err == nil {
				t.Fatal("a transaction that breaks a deferred foreign key committed")
			}
		}},
		{"a write transaction whose context ends", func(ctx context.Context, cancel func()) {
			tx := write(ctx, `INSERT INTO n VALUES (4)`)
			cancel()
			if err := tx.Commit(); err == nil {
				t.Fatal("a transaction whose context ended committed")
			}
		}},
		{"a BEGIN refused for an ended context", func(ctx context.Context, cancel func()) {
			cancel()
			if _, err := db.BeginTx(ctx, nil); err == nil {
				t.Fatal("BeginTx with an ended context succeeded")
			}
		}},
	} {
		ctx, cancel := context.WithCancel(bg)
		c.run(ctx, cancel)
		cancel()
		give, err := db.mem.exclusive(bg)
		if err != nil {
			t.Fatalf("%s: a turn was kept: %v", c.name, err)
		}
		give()
	}
}
