package labdb_test

import (
	"database/sql"
	"strings"
	"testing"

	"idemlab/kit/labdb"
)

// TestSibling_SQLiteNamesAFileBeside: a file beside the lab's, never the
// lab's itself; memory stays memory.
func TestSibling_SQLiteNamesAFileBeside(t *testing.T) {
	for target, want := range map[string]string{
		"/srv/lab/lab-stage9.db": "/srv/lab/lab-stage9_core.db",
		"tmp/lab":                "tmp/lab_core",
		":memory:":               ":memory:",
	} {
		got, err := labdb.Sibling(t.Context(), target, "_core")
		if err != nil || got != want {
			t.Errorf("Sibling(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
}

// TestSibling_PostgreSQLMakesADatabaseOnce (PostgreSQL): the sibling is
// another database on the cluster, made the first time and found the
// next, and a table made in it is not in the lab's. A sibling that was the
// lab's database, or one made anew (empty) each time, fails.
func TestSibling_PostgreSQLMakesADatabaseOnce(t *testing.T) {
	cluster := labdb.TestTarget()
	if labdb.EngineOfTarget(cluster) != labdb.PostgreSQL {
		t.Skip("set " + labdb.EnvURL)
	}
	lab, err := labdb.OpenOwn(t.Context(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	first, err := labdb.Sibling(t.Context(), lab.Target(), "_core")
	if err != nil {
		t.Fatal(err)
	}
	if first == lab.Target() || !strings.Contains(first, "_core") {
		t.Fatalf("sibling %s of %s", labdb.Redacted(first), labdb.Redacted(lab.Target()))
	}
	db, err := labdb.Open(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	defer dropAfter(t, lab.DB, first)
	_, err = db.ExecContext(t.Context(), `CREATE TABLE kept (n int)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	again, err := labdb.Sibling(t.Context(), lab.Target(), "_core")
	if err != nil || again != first {
		t.Fatalf("the second time: %s, %v", labdb.Redacted(again), err)
	}
	db, err = labdb.Open(t.Context(), again)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM kept`).Scan(&n); err != nil {
		t.Fatalf("the table made in the sibling is gone: %v", err)
	}
	if err := lab.QueryRowContext(t.Context(), `SELECT count(*) FROM kept`).Scan(&n); err == nil {
		t.Fatal("the table made in the sibling is in the lab's database")
	}
}

// dropAfter drops the database target names, through admin, once the test
// has closed it.
func dropAfter(t *testing.T, admin *sql.DB, target string) {
	name := target[strings.LastIndex(target, "/")+1:]
	name, _, _ = strings.Cut(name, "?")
	if _, err := admin.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}
