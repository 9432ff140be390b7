package pgdb

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"slices"
	"testing"
)

// cluster is the PostgreSQL cluster IDEMLAB_DATABASE_URL names, or a skip.
func cluster(t *testing.T) string {
	t.Helper()
	target := os.Getenv("IDEMLAB_DATABASE_URL")
	if target == "" {
		t.Skip("IDEMLAB_DATABASE_URL is not set (make test-pg sets it)")
	}
	return target
}

// TestStartRun_SweepsTheDatabasesOfEndedRuns: a killed run's databases
// are dropped when the next run starts; a live run's, one a server is
// still connected to, and one named before runs were are kept. A run
// that never swept, or swept by name alone, fails it.
func TestStartRun_SweepsTheDatabasesOfEndedRuns(t *testing.T) {
	ctx := context.Background()
	target := cluster(t)
	admin, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the cleanups below that drop the test's databases with
	// it (cleanups run last registered first, and after every defer).
	t.Cleanup(func() { admin.Close() })
	create := func(name string) string {
		t.Helper()
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
				t.Errorf("drop %s: %v", name, err)
			}
		})
		return name
	}
	// Two runs, each with a database; a server is connected to a second
	// database of the first run.
	killed, _, err := startRun(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := startRun(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer live.db.Close()
	killedDB, liveDB, busy := create(killed.name()), create(live.name()), create(killed.name())
	u, _ := url.Parse(target)
	u.Path = "/" + busy
	server, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := server.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Then the first run is killed: its lock goes with its session. (The
	// test lets go of the lock itself: PostgreSQL notices a closed
	// session a moment after the close, and the test does not wait on
	// time.)
	if _, err := killed.conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, killed.lock); err != nil {
		t.Fatal(err)
	}
	killed.conn.Close()
	killed.db.Close()
	older := create("idemlab_olderformat0000")

	next, dropped, err := startRun(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer next.db.Close()
	if !slices.Contains(dropped, killedDB) {
		t.Errorf("the killed run's %s was not dropped (dropped: %v)", killedDB, dropped)
	}
	for _, kept := range []string{liveDB, busy, older} {
		if slices.Contains(dropped, kept) {
			t.Errorf("%s was dropped", kept)
		}
	}
	var left []string
	rows, err := admin.QueryContext(ctx, `SELECT datname FROM pg_database`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		left = append(left, name)
	}
	rows.Close()
	if slices.Contains(left, killedDB) || !slices.Contains(left, liveDB) || !slices.Contains(left, busy) || !slices.Contains(left, older) {
		t.Errorf("databases left on the cluster: %v; want %s gone and %s, %s, %s there", left, killedDB, liveDB, busy, older)
	}
}

// TestCreateDatabase_NamesItAfterTheLiveRun: a database CreateDatabase
// makes carries the lock of this process's run, which a session holds,
// so that another run's sweep leaves it alone.
func TestCreateDatabase_NamesItAfterTheLiveRun(t *testing.T) {
	ctx := context.Background()
	target := cluster(t)
	dbURL, drop, err := CreateDatabase(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(ctx)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := u.Path[1:]
	other, dropped, err := startRun(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer other.db.Close()
	if _, ok := runLock(name); !ok || slices.Contains(dropped, name) {
		t.Fatalf("%s: named after a run %v, dropped by another run's sweep %v", name, ok, slices.Contains(dropped, name))
	}
}
