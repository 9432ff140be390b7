package stage6

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
)

// openKeys returns a fresh database holding only the key table: SQLite in
// memory, or one of its own on the PostgreSQL cluster make test-pg starts,
// where simultaneous takeovers really run at once.
func openKeys(t *testing.T) *labdb.DB {
	t.Helper()
	db, err := labdb.OpenOwn(context.Background(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := createKeyTable(context.Background(), db.DB); err != nil {
		t.Fatal(err)
	}
	return db
}

// openConns opens n connections of db and puts them back in its pool, so
// that n requests at once need not wait for connections to open.
func openConns(t *testing.T, db *labdb.DB, n int) {
	t.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Close()
	}
}

// completeIn runs complete for held in a transaction of its own and
// commits it if complete succeeds.
func completeIn(ctx context.Context, db *labdb.DB, held lease, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res := response{status: 201, contentType: "application/json", body: []byte("{}\n")}
	if err := complete(ctx, tx, held, res, now); err != nil {
		return err
	}
	return tx.Commit()
}

// A request that crashed leaves its key in progress. While its lease is
// live, a retry is told to wait; once it has expired, exactly one of many
// simultaneous retries takes the key over, and the original, should it
// wake up after all, can no longer complete it.
func TestLease_ExpiredLeaseIsTakenOverOnce(t *testing.T) {
	ctx := context.Background()
	db := openKeys(t)
	cfg := stage.Config{Lease: 30 * time.Second, Retention: 24 * time.Hour}
	sc := scope{customer: "cus_a", method: "POST", route: "/transfers", key: "k-1"}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	original, _, err := claim(ctx, db.DB, sc, "fp", start, cfg)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	_, _, err = claim(ctx, db.DB, sc, "fp", start.Add(cfg.Lease-time.Millisecond), cfg)
	if !errors.Is(err, problem.RequestInProgress) {
		t.Fatalf("retry within the lease: got %v, want request-in-progress", err)
	}

	later := start.Add(cfg.Lease)
	const retries = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		takers []lease
	)
	// Every retry finds a connection open and waits at a barrier, so that
	// their transactions overlap: on PostgreSQL, where they run at once,
	// a takeover that reads the lease and then writes it lets several
	// through; the one conditional UPDATE lets one.
	openConns(t, db, retries)
	barrier := make(chan struct{})
	for range retries {
		wg.Go(func() {
			<-barrier
			held, _, err := claim(ctx, db.DB, sc, "fp", later, cfg)
			switch {
			case err == nil:
				mu.Lock()
				takers = append(takers, held)
				mu.Unlock()
			case !errors.Is(err, problem.RequestInProgress):
				t.Errorf("retry after the lease: %v", err)
			}
		})
	}
	close(barrier)
	wg.Wait()
	if len(takers) != 1 {
		t.Fatalf("%d of %d simultaneous retries took the expired lease over, want exactly 1", len(takers), retries)
	}
	taker := takers[0]
	if taker.id != original.id || taker.owner == original.owner {
		t.Fatalf("takeover: got %+v from original %+v, want the same row under a new owner", taker, original)
	}

	if err := completeIn(ctx, db, original, later); !errors.Is(err, problem.RequestInProgress) {
		t.Fatalf("the original completing after the takeover: got %v, want request-in-progress (and a rollback)", err)
	}
	if err := completeIn(ctx, db, taker, later); err != nil {
		t.Fatalf("the taker completing: %v", err)
	}
	_, stored, err := claim(ctx, db.DB, sc, "fp", later, cfg)
	if err != nil || stored == nil || stored.status != 201 {
		t.Fatalf("a retry after completion: got %+v, %v; want the stored 201", stored, err)
	}
}
