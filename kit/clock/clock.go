// Package clock is the lab clock: real time plus an offset that the lab can
// move. Retention and leases are tested by moving this clock, never by
// sleeping. The offset is stored in the database, so a server restarted on
// the same file after a crash keeps the same timeline, and the server
// processes that share a database (lab serve --replicas) read the same
// clock: each adopts the stored offset before it serves a request (see
// labctl.Replica).
package clock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/kit/labdb"
)

// Layout is how the lab writes instants: RFC 3339 in UTC with milliseconds.
const Layout = "2006-01-02T15:04:05.000Z07:00"

// Clock is safe for concurrent use.
type Clock struct {
	db *sql.DB
	// moving lets one change of the offset through at a time: it stores
	// the new offset in the database, then publishes it. Now never takes
	// it. A transaction that holds the database's write lock (a relay's,
	// say) and reads the clock would otherwise wait for a change that is
	// itself waiting for that write lock: neither goes on until the busy
	// timeout fails the change.
	moving sync.Mutex
	// offset is the published offset, in nanoseconds.
	offset atomic.Int64
}

// Table is the clock's table: one row, the offset.
const Table = "lab_clock"

const schema = `CREATE TABLE IF NOT EXISTS lab_clock (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	offset_ms INTEGER NOT NULL
)`

// Open loads the clock's offset from db, creating its table if needed.
func Open(ctx context.Context, db *sql.DB) (*Clock, error) {
	if err := labdb.CreateTable(ctx, db, schema); err != nil {
		return nil, fmt.Errorf("create lab_clock: %w", err)
	}
	c := &Clock{db: db}
	var ms int64
	err := db.QueryRowContext(ctx, `SELECT offset_ms FROM lab_clock WHERE id = 1`).Scan(&ms)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return nil, fmt.Errorf("load lab clock: %w", err)
	default:
		c.offset.Store(int64(time.Duration(ms) * time.Millisecond))
	}
	return c, nil
}

// Adopt publishes off, an offset read from the database after another
// server process on it moved the clock (labctl.Replica): from then on Now
// reads it, as if this process had moved the clock itself.
func (c *Clock) Adopt(off time.Duration) { c.offset.Store(int64(off)) }

// OffsetExpr is an SQL expression that reads the stored offset, in
// milliseconds (0 before the clock was ever moved): a statement that
// selects it with what else it reads gets both in one snapshot.
const OffsetExpr = `COALESCE((SELECT offset_ms FROM lab_clock WHERE id = 1), 0)`

// Now is the lab's present, in UTC, to the millisecond.
func (c *Clock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load())).UTC().Truncate(time.Millisecond)
}

// MaxOffset is how far from real time the lab clock may be moved, either
// way: 200 years of 365 days, twice the century the checks move it on, and
// well within what a time.Duration holds (292 years). A time further than
// that cannot be kept as an offset, which would saturate or wrap round: a
// clock set to the year 1 or 9999 read 1734.
const MaxOffset = 200 * 365 * 24 * time.Hour

// ErrOutOfRange is the error of a move that would put the clock more than
// MaxOffset from real time; the clock stays where it was.
var ErrOutOfRange = errors.New("the lab clock stays within 200 years of real time")

// Advance moves the clock forward by d (or back, if d is negative). It
// returns ErrOutOfRange, and moves nothing, if the clock would end more
// than MaxOffset from real time.
func (c *Clock) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	c.moving.Lock()
	defer c.moving.Unlock()
	off := time.Duration(c.offset.Load())
	next := off + d
	if (d > 0 && next < off) || (d < 0 && next > off) || next > MaxOffset || next < -MaxOffset {
		return time.Time{}, fmt.Errorf("advance by %v: %w", d, ErrOutOfRange)
	}
	return c.store(ctx, next)
}

// Set moves the clock to t: from then on it never reads earlier than t,
// to the millisecond it keeps. It returns ErrOutOfRange, and moves
// nothing, if t is more than MaxOffset from real time.
func (c *Clock) Set(ctx context.Context, t time.Time) (time.Time, error) {
	c.moving.Lock()
	defer c.moving.Unlock()
	// The offset is kept in whole milliseconds: rounded to the nearest,
	// the clock could read up to half of one before t; rounded up, the
	// moment of the Set is at or after t.
	off := time.Until(t)
	if r := off % time.Millisecond; r > 0 {
		off += time.Millisecond - r
	} else {
		off -= r
	}
	// time.Until saturates, and the rounding up can wrap round, so that
	// the year 1 and the year 9999 are both far out of range here.
	if off > MaxOffset || off < -MaxOffset {
		return time.Time{}, fmt.Errorf("set to %s: %w", Format(t), ErrOutOfRange)
	}
	return c.store(ctx, off)
}

// Reset puts the clock back on real time.
func (c *Clock) Reset(ctx context.Context) error {
	c.moving.Lock()
	defer c.moving.Unlock()
	_, err := c.store(ctx, 0)
	return err
}

// store writes off to the database and, once it is there, publishes it.
// The caller holds c.moving.
func (c *Clock) store(ctx context.Context, off time.Duration) (time.Time, error) {
	off = off.Round(time.Millisecond)
	_, err := c.db.ExecContext(ctx,
		`INSERT INTO lab_clock (id, offset_ms) VALUES (1, ?)
		 ON CONFLICT (id) DO UPDATE SET offset_ms = excluded.offset_ms`, off.Milliseconds())
	if err != nil {
		return time.Time{}, fmt.Errorf("store lab clock: %w", err)
	}
	c.offset.Store(int64(off))
	return time.Now().Add(off).UTC().Truncate(time.Millisecond), nil
}

// Format writes t the way the lab writes every instant.
func Format(t time.Time) string { return t.UTC().Format(Layout) }
