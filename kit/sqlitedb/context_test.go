package sqlitedb

import (
	"context"
	"testing"
	"time"
)

// A statement costs the same whether or not its context can end: the
// driver is never handed one it would watch with a goroutine of its own.
// Caught: a wrapper that passes the request's context on to the driver
// (a goroutine, a channel and closures for every statement).
func TestStatements_AreNotWatchedOneByOne(t *testing.T) {
	db := openGated(t, time.Second)
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	allocs := func(ctx context.Context) float64 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		return testing.AllocsPerRun(200, func() {
			if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`); err != nil {
				t.Fatal(err)
			}
		})
	}
	still, watched := allocs(context.Background()), allocs(cancelable)
	// One allocation of slack for the runtime's own; a watcher costs four
	// or more.
	if watched > still+1 {
		t.Errorf("a statement allocates %.0f times under a context that can end and %.0f under one that cannot: the driver watches each statement", watched, still)
	}
}

// A transaction whose context ends before it is over is rolled back and
// gives the gate back, though its statements ran under a context that
// never ends. Caught: a wrapper that hands the driver's transaction the
// context database/sql watches, or that keeps the gate after the rollback
// (the next writer is busy after the timeout).
func TestWriteGate_TransactionOfAnEndedContextRollsBack(t *testing.T) {
	db := openGated(t, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (2)`); err == nil {
		t.Fatal("a statement under an ended context ran")
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("a transaction whose context ended committed")
	}
	// The next writer gets the gate once the rollback has given it back.
	next, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatalf("the next writer: %v", err)
	}
	defer next.Rollback()
	var n int
	if err := next.QueryRow(`SELECT count(*) FROM n`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows of the ended transaction committed, want 0", n)
	}
}
