package pgdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// A test run that is killed never drops the databases it made, and a
// cluster that outlives runs (IDEMLAB_DATABASE_URL naming one of your own)
// would fill up with them. So every process that makes databases on a
// cluster is a run there: it holds a PostgreSQL advisory lock, drawn at
// random, for as long as it lives, and names each database it makes after
// that lock (idemlab_r<lock>_<random>). The lock goes with the process's
// session, however the process ends. When a run starts, it drops every
// database of a run whose lock nobody holds any more, if no one is
// connected to it: DROP DATABASE without FORCE, which PostgreSQL refuses
// while a connection is open, so a server still running on one (a child
// process left behind) keeps it.
//
// Databases named before runs were (idemlab_ and 16 characters) say
// nothing of who made them, and are left alone.

// runPrefix begins the name of every database a run makes.
const runPrefix = "idemlab_r"

// run is this process's claim on a cluster: the advisory lock its
// databases are named after, held on a connection of its own.
type run struct {
	lock int64
	db   *sql.DB
	conn *sql.Conn
}

var runs = struct {
	sync.Mutex
	byCluster map[string]*run
}{byCluster: make(map[string]*run)}

// runOn returns this process's run on the cluster clusterURL names,
// starting it, and sweeping the databases of ended runs, the first time.
func runOn(ctx context.Context, clusterURL string) (*run, error) {
	runs.Lock()
	defer runs.Unlock()
	if r, ok := runs.byCluster[clusterURL]; ok {
		return r, nil
	}
	r, _, err := startRun(ctx, clusterURL)
	if err != nil {
		return nil, err
	}
	runs.byCluster[clusterURL] = r
	return r, nil
}

// startRun takes a new advisory lock on the cluster, then drops the
// databases of the runs that have ended (see sweep). It returns the run
// and the names of the databases it dropped.
func startRun(ctx context.Context, clusterURL string) (*run, []string, error) {
	db, err := sql.Open("pgx", clusterURL)
	if err != nil {
		return nil, nil, fmt.Errorf("start a run on %s: %w", Redact(clusterURL), err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("start a run on %s: %w", Redact(clusterURL), err)
	}
	var b [8]byte
	rand.Read(b[:])
	// Positive and under 2^62, so that it reads back the same from
	// pg_locks' two unsigned halves.
	r := &run{lock: int64(binary.BigEndian.Uint64(b[:]) >> 2), db: db, conn: conn}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, r.lock); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, fmt.Errorf("start a run on %s: take its lock: %w", Redact(clusterURL), err)
	}
	dropped, err := r.sweep(ctx)
	if err != nil {
		conn.Close()
		db.Close()
		return nil, nil, err
	}
	return r, dropped, nil
}

// name draws the name of a new database of the run.
func (r *run) name() string {
	return fmt.Sprintf("%s%016x_%s", runPrefix, r.lock, strings.ToLower(rand.Text()[:8]))
}

// sweep drops every database named by a run other than r whose lock no
// session holds, unless someone is connected to it. It returns the
// names it dropped.
func (r *run) sweep(ctx context.Context) ([]string, error) {
	rows, err := r.conn.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'idemlab\_r%' ORDER BY datname`)
	if err != nil {
		return nil, fmt.Errorf("sweep the databases of ended runs: %w", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sweep the databases of ended runs: %w", err)
		}
		names = append(names, name)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("sweep the databases of ended runs: %w", err)
	}
	var dropped []string
	for _, name := range names {
		lock, ok := runLock(name)
		if !ok || lock == r.lock {
			continue
		}
		var held bool
		// pg_locks shows every database's locks: a run's lock counts
		// whatever database its session is on.
		err := r.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1)`, lock).Scan(&held)
		if err != nil {
			return dropped, fmt.Errorf("sweep the databases of ended runs: %w", err)
		}
		if held {
			continue
		}
		_, err = r.conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name)
		switch {
		case sqlState(err) == "55006": // object_in_use: someone is connected
			continue
		case err != nil:
			return dropped, fmt.Errorf("sweep the databases of ended runs: drop %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// runLock reads the run's lock out of a database name a run gave.
func runLock(name string) (int64, bool) {
	hex, _, ok := strings.Cut(strings.TrimPrefix(name, runPrefix), "_")
	if !ok || !strings.HasPrefix(name, runPrefix) || len(hex) != 16 {
		return 0, false
	}
	lock, err := strconv.ParseInt(hex, 16, 64)
	return lock, err == nil
}
