package labctl

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/fault"
	"idemlab/kit/labdb"
	"idemlab/kit/stage"
)

// Role is what a lab server is among the server processes that share its
// database (lab serve --replicas).
type Role int

const (
	// Alone is a server that has its database to itself: its clock and
	// config live in its memory, and it reads neither before a request.
	Alone Role = iota
	// Lead is the first replica of a lab that starts: it stores its
	// config for the others, over whatever config a lab run before it on
	// the same database left (the config does not outlive the lab, the
	// clock does).
	Lead
	// Join is every other replica, and any replica started again while
	// the others run: it adopts the config they store.
	Join
)

// SharedTable is the table of what the replicas of a lab share besides
// the clock's offset (lab_clock): one row, the config in force and how
// many resets the lab has had.
const SharedTable = "lab_shared"

const sharedSchema = `CREATE TABLE IF NOT EXISTS lab_shared (
	id               INTEGER PRIMARY KEY CHECK (id = 1),
	core_latency_ns  INTEGER NOT NULL,
	retention_ns     INTEGER NOT NULL,
	lease_ns         INTEGER NOT NULL,
	retry_horizon_ns INTEGER NOT NULL,
	resets           INTEGER NOT NULL
)`

// Replica keeps one server process of several on a database in step with
// the others: before each request (and each pass of the work it does on
// its own), Sync reads in one statement the clock's offset, the config
// and the count of resets that any of them stored, and adopts them. A
// clock move, a config change or a reset answered by one replica is thus
// seen by the next request to any other: the grader and an instructor
// move the clock on one and send at once to another.
//
// Syncs may run at once and finish in any order. Each takes a ticket
// before it reads, and one publishes what it read only if no Sync with a
// later ticket has published yet. A request's own Sync takes its ticket
// after the request began, so whatever Sync published last by the time
// the request reads holds at least what the database held when it began:
// what a request sees never goes back past that.
type Replica struct {
	db       *sql.DB
	clock    *clock.Clock
	settings *Settings
	bank     *bank.Bank
	faults   *Faults

	tickets atomic.Uint64
	mu      sync.Mutex
	// published is the ticket of the last Sync that published; resets
	// the count of resets this process has caught up with.
	published uint64
	resets    int64
}

// OpenReplica creates the shared table if needed and makes the server
// one of the replicas on db: as role Lead, it stores settings' config for
// the others; as Join, it adopts theirs (or stores its own, if none is
// stored yet). Then it syncs once.
func OpenReplica(ctx context.Context, db *sql.DB, role Role, clk *clock.Clock, settings *Settings, b *bank.Bank, faults *Faults) (*Replica, error) {
	if err := labdb.CreateTable(ctx, db, sharedSchema); err != nil {
		return nil, fmt.Errorf("create %s: %w", SharedTable, err)
	}
	r := &Replica{db: db, clock: clk, settings: settings, bank: b, faults: faults}
	cfg := settings.Get()
	insert := `INSERT INTO lab_shared (id, core_latency_ns, retention_ns, lease_ns, retry_horizon_ns, resets)
		VALUES (1, ?, ?, ?, ?, 0) ON CONFLICT (id) DO `
	if role == Lead {
		insert += `UPDATE SET core_latency_ns = excluded.core_latency_ns, retention_ns = excluded.retention_ns,
			lease_ns = excluded.lease_ns, retry_horizon_ns = excluded.retry_horizon_ns`
	} else {
		insert += `NOTHING`
	}
	if _, err := db.ExecContext(ctx, insert, nanos(cfg)...); err != nil {
		return nil, fmt.Errorf("store the lab's config for its replicas: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT resets FROM lab_shared WHERE id = 1`).Scan(&r.resets); err != nil {
		return nil, fmt.Errorf("read the lab's resets: %w", err)
	}
	return r, r.Sync(ctx)
}

// Sync reads what the replicas share and adopts it: the clock's offset,
// the config and, if another replica reset the lab since the last Sync,
// the reset of what this process keeps in memory (its count of core calls
// and the faults it arms itself, Faults.DisarmOwn). On a nil Replica, a
// server that has its database to itself, it does nothing.
func (r *Replica) Sync(ctx context.Context) error {
	if r == nil {
		return nil
	}
	ticket := r.tickets.Add(1)
	var offMS int64
	var cfg stage.Config
	var resets int64
	err := r.db.QueryRowContext(fault.LabRead(ctx),
		`SELECT `+clock.OffsetExpr+`, core_latency_ns, retention_ns, lease_ns, retry_horizon_ns, resets
		 FROM lab_shared WHERE id = 1`).
		Scan(&offMS, &cfg.CoreLatency, &cfg.Retention, &cfg.Lease, &cfg.RetryHorizon, &resets)
	if err != nil {
		return fmt.Errorf("read what the lab's replicas share: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ticket <= r.published {
		return nil
	}
	r.published = ticket
	r.clock.Adopt(time.Duration(offMS) * time.Millisecond)
	r.settings.set(cfg)
	if resets > r.resets {
		r.resets = resets
		r.faults.DisarmOwn()
		r.bank.ForgetCoreCalls()
	}
	return nil
}

// storeConfig stores cfg for every replica.
func (r *Replica) storeConfig(ctx context.Context, cfg stage.Config) error {
	_, err := r.db.ExecContext(ctx,
		`UPDATE lab_shared SET core_latency_ns = ?, retention_ns = ?, lease_ns = ?, retry_horizon_ns = ? WHERE id = 1`,
		nanos(cfg)...)
	if err != nil {
		return fmt.Errorf("store the config for the lab's replicas: %w", err)
	}
	return nil
}

// nanos are cfg's durations in the order lab_shared's columns list them,
// in nanoseconds.
func nanos(cfg stage.Config) []any {
	return []any{int64(cfg.CoreLatency), int64(cfg.Retention), int64(cfg.Lease), int64(cfg.RetryHorizon)}
}

// countReset counts, in tx (a reset's), one more reset of the lab, and
// returns the count; once tx has committed, caughtUp tells the replica
// that this process has done what the reset asks of it.
func (r *Replica) countReset(ctx context.Context, tx *sql.Tx) (int64, error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `UPDATE lab_shared SET resets = resets + 1 WHERE id = 1 RETURNING resets`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the reset for the lab's replicas: %w", err)
	}
	return n, nil
}

// caughtUp records that this process has done what resets up to the
// n-th ask of it.
func (r *Replica) caughtUp(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets = max(r.resets, n)
}
