package sqlitedb_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"idemlab/kit/fault"
	"idemlab/kit/sqlitedb"
)

func openTemp(t *testing.T) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestIsUniqueViolation_TellsConstraintsApart(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	mustExec(t, db, `CREATE TABLE parent (id TEXT PRIMARY KEY)`)
	mustExec(t, db, `CREATE TABLE t (
		id INTEGER PRIMARY KEY,
		k TEXT NOT NULL UNIQUE,
		n INTEGER CHECK (n >= 0),
		p TEXT REFERENCES parent(id))`)
	mustExec(t, db, `INSERT INTO t (id, k, n) VALUES (1, 'a', 1)`)

	cases := []struct {
		name   string
		query  string
		unique bool
	}{
		{"unique column", `INSERT INTO t (id, k, n) VALUES (2, 'a', 1)`, true},
		{"primary key", `INSERT INTO t (id, k, n) VALUES (1, 'b', 1)`, true},
		{"not null", `INSERT INTO t (id, k, n) VALUES (3, NULL, 1)`, false},
		{"check", `INSERT INTO t (id, k, n) VALUES (4, 'c', -1)`, false},
		{"foreign key", `INSERT INTO t (id, k, n, p) VALUES (5, 'd', 1, 'nobody')`, false},
		{"syntax", `INSERT INTO nowhere VALUES (1)`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.ExecContext(ctx, tc.query)
			if err == nil {
				t.Fatal("statement succeeded; the test needs it to fail")
			}
			if got := sqlitedb.IsUniqueViolation(err); got != tc.unique {
				t.Errorf("IsUniqueViolation(%v) = %v, want %v", err, got, tc.unique)
			}
		})
	}
	if sqlitedb.IsUniqueViolation(errors.New("UNIQUE constraint failed: t.k")) {
		t.Error("a plain error whose text mentions UNIQUE was taken for a violation")
	}
	if sqlitedb.IsUniqueViolation(nil) {
		t.Error("nil was taken for a violation")
	}
}

func TestOpen_MemoryIsSharedBetweenConnections(t *testing.T) {
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustExec(t, db, `CREATE TABLE n (v INTEGER)`)

	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := db.Begin()
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := tx.Exec(`INSERT INTO n VALUES (1)`); err != nil {
				t.Error(err)
			}
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var count int
	if err := db.QueryRow(`SELECT count(*) FROM n`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 16 {
		t.Errorf("rows = %d, want 16", count)
	}
	if _, err := other.Exec(`SELECT count(*) FROM n`); err == nil {
		t.Error("two in-memory databases share a table; each Open must be private")
	}
}

func TestOnBusinessCommit_FiresOnlyAfterCommitOfAMarkedWrite(t *testing.T) {
	db := openTemp(t)
	mustExec(t, db, `CREATE TABLE m (v INTEGER)`)
	fired := 0
	db.OnBusinessCommit(func() { fired++ })
	ctx := context.Background()

	run := func(mark, commit bool) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wctx := ctx
		if mark {
			wctx = fault.MarkBusinessWrite(ctx)
		}
		if _, err := tx.ExecContext(wctx, `INSERT INTO m VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	run(false, true)
	run(true, false)
	if fired != 0 {
		t.Fatalf("hook fired %d times before any marked commit", fired)
	}
	run(true, true)
	if fired != 1 {
		t.Fatalf("hook fired %d times after one marked commit, want 1", fired)
	}
	run(false, true)
	if fired != 1 {
		t.Fatalf("mark leaked into the next transaction: fired %d times", fired)
	}
}

func TestFailKeyStore_FailsOnlyKeyTableStatements(t *testing.T) {
	db := openTemp(t)
	mustExec(t, db, `CREATE TABLE idempotency_keys (k TEXT PRIMARY KEY)`)
	mustExec(t, db, `CREATE TABLE other (v INTEGER)`)
	db.FailKeyStore(2)
	if _, err := db.Exec(`INSERT INTO other VALUES (1)`); err != nil {
		t.Fatalf("statement on another table failed: %v", err)
	}
	for i := 0; i < 2; i++ {
		_, err := db.Exec(`INSERT INTO Idempotency_Keys VALUES ('x')`)
		if !errors.Is(err, fault.ErrKeyStoreUnavailable) {
			t.Fatalf("statement %d: err = %v, want ErrKeyStoreUnavailable", i, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO idempotency_keys VALUES ('x')`); err != nil {
		t.Fatalf("the fault outlived its count: %v", err)
	}
}

func mustExec(t *testing.T, db *sqlitedb.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestOnKeyRowsChanged_ReportsCommittedKeyRowsOnly(t *testing.T) {
	db := openTemp(t)
	mustExec(t, db, `CREATE TABLE idempotency_keys (k TEXT PRIMARY KEY, state TEXT)`)
	mustExec(t, db, `CREATE TABLE other (v INTEGER)`)
	var got [][]int64
	db.OnKeyRowsChanged(func(rows []int64) { got = append(got, rows) })

	mustExec(t, db, `INSERT INTO other VALUES (1)`)
	mustExec(t, db, `INSERT INTO idempotency_keys VALUES ('a', 'in_progress')`)
	tx, _ := db.Begin()
	tx.Exec(`INSERT INTO idempotency_keys VALUES ('b', 'in_progress')`)
	tx.Rollback()
	tx, _ = db.Begin()
	tx.Exec(`UPDATE idempotency_keys SET state = 'completed' WHERE k = 'a'`)
	tx.Exec(`INSERT INTO other VALUES (2)`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != 1 || len(got[1]) != 1 || got[1][0] != 1 {
		t.Fatalf("changes reported = %v, want [[1] [1]] (the insert, then the update; not the rolled-back insert)", got)
	}
}

func TestFailKeyStore_SparesTheLabsOwnReads(t *testing.T) {
	db := openTemp(t)
	mustExec(t, db, `CREATE TABLE idempotency_keys (k TEXT PRIMARY KEY)`)
	db.FailKeyStore(1)
	lab := fault.LabRead(context.Background())
	if _, err := db.QueryContext(lab, `SELECT * FROM idempotency_keys`); err != nil {
		t.Fatalf("the lab's own read met the fault: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO idempotency_keys VALUES ('x')`); !errors.Is(err, fault.ErrKeyStoreUnavailable) {
		t.Fatalf("the stage's statement did not meet the fault (the lab's read spent it?): %v", err)
	}
}

// Each connection keeps the statements it has run. Caught: a kept statement
// run again while rows read from it are open (the outer loop stops after
// one row), one that still sees a dropped table's columns, and one left
// open so that DROP TABLE fails.
func TestKeptStatements_AreSafeToRunAgain(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	mustExec(t, db, `CREATE TABLE s (v INTEGER)`)
	mustExec(t, db, `INSERT INTO s VALUES (1), (2), (3)`)
	const all = `SELECT v FROM s ORDER BY v`

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := tx.QueryContext(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for outer.Next() {
		seen++
		var inner int
		if err := tx.QueryRowContext(ctx, all).Scan(&inner); err != nil || inner != 1 {
			t.Fatalf("the same query inside the loop: %d, %v", inner, err)
		}
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if seen != 3 {
		t.Fatalf("outer loop saw %d rows, want 3", seen)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	mustExec(t, db, `DROP TABLE s`)
	mustExec(t, db, `CREATE TABLE s (w TEXT, v INTEGER)`)
	mustExec(t, db, `INSERT INTO s VALUES ('x', 7)`)
	var v int
	if err := db.QueryRowContext(ctx, all).Scan(&v); err != nil || v != 7 {
		t.Fatalf("after the table was made again: %d, %v", v, err)
	}
	cols, err := db.QueryContext(ctx, `SELECT * FROM s`)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := cols.Columns()
	types, err := cols.ColumnTypes()
	cols.Close()
	if err != nil || len(names) != 2 || len(types) != 2 || types[0].DatabaseTypeName() != "TEXT" {
		t.Fatalf("columns %v, types %v, %v: want w TEXT, v INTEGER", names, types, err)
	}
}
