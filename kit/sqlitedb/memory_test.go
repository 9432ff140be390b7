package sqlitedb

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// On an in-memory database a reader and a writer lock each other out, and
// the one that comes second sleeps in SQLite's busy handler: a read
// outside a transaction and a read-only transaction wait at the gate
// instead, each one hold. Caught: reads that skip the gate in memory (no
// holds), and a read-only transaction that never gives the gate back (the
// read after it waits out the timeout and fails).
func TestMemory_ReadsTakeTheGate(t *testing.T) {
	db := openWithTable(t, ":memory:", time.Second)
	ctx := context.Background()
	if _, err := db.Exec(`INSERT INTO n VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	before := db.GateUse()
	var count int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&count); err != nil || count != 1 {
		t.Fatalf("read outside a transaction: %d rows, %v; want 1", count, err)
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&count); err != nil || count != 1 {
		t.Fatalf("read in a read-only transaction: %d rows, %v; want 1", count, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&count); err != nil {
		t.Fatalf("read after the read-only transaction: %v", err)
	}
	if use := db.GateUse().Sub(before); use.Holds != 3 {
		t.Fatalf("two reads and a read-only transaction on an in-memory database: %d holds of the gate, want 3", use.Holds)
	}
}

// A read beside an open write transaction on an in-memory database waits
// for the gate: it never sees the transaction's rows, and when the
// transaction outlasts the timeout it fails busy, as SQLite's own lock
// made it fail. Caught: a read that runs on the writer without the gate
// (it sees the uncommitted row).
func TestMemory_AReadBesideAWriteTransactionWaitsForIt(t *testing.T) {
	db := openWithTable(t, ":memory:", 50*time.Millisecond)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	var count int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&count)
	if err == nil || !IsBusy(err) {
		t.Fatalf("read beside an open write transaction: %d rows, error %v; want the gate's busy error", count, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&count); err != nil || count != 1 {
		t.Fatalf("read after the commit: %d rows, %v; want 1", count, err)
	}
}
