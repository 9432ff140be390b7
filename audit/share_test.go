package audit

import (
	"database/sql"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"idemlab/kit/sqlitedb"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE moves (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db.DB
}

func moves(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM moves`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A handler's commit, in a request that carries a Unit, hands its write to
// the middleware: nothing is committed until the middleware commits it,
// with its own write beside it; rolled back, neither happened.
func TestUnit_TheHandlersCommitWaitsForTheMiddlewares(t *testing.T) {
	db := openDB(t)
	handlers := handlerDB(db)
	for _, commit := range []bool{true, false} {
		before := moves(t, db)
		r, unit := share(db)(httptest.NewRequest("POST", "/transfers", nil))
		tx, err := handlers.BeginTx(r.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(r.Context(), `INSERT INTO moves VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := moves(t, db); n != before {
			t.Fatalf("%d moves visible before the middleware committed, want %d", n, before)
		}
		handed := unit.Handed()
		if handed == nil {
			t.Fatal("the handler committed, and nothing was handed")
		}
		if _, err := handed.Exec(`INSERT INTO moves VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = handed.Commit()
		} else {
			err = handed.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := moves(t, db); n != 2 {
		t.Fatalf("%d moves, want the 2 of the committed unit", n)
	}
}

// Without a Unit, or when the handler rolls back, nothing is handed and
// the handler's own commit is a commit.
func TestUnit_NothingHandedWithoutAUnitOrACommit(t *testing.T) {
	db := openDB(t)
	handlers := handlerDB(db)
	tx, err := handlers.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(`INSERT INTO moves VALUES (1)`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := moves(t, db); n != 1 {
		t.Fatalf("%d moves after the handler's own commit, want 1", n)
	}
	r, unit := share(db)(httptest.NewRequest("POST", "/transfers", nil))
	tx, err = handlers.BeginTx(r.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(`INSERT INTO moves VALUES (1)`)
	tx.Rollback()
	if unit.Handed() != nil {
		t.Fatal("a rolled-back write was handed")
	}
	var none *Unit
	if none.Handed() != nil {
		t.Fatal("a nil Unit handed a transaction")
	}
	none.Abandon()
}
