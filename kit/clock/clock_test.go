package clock_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"

	"idemlab/kit/clock"
	"idemlab/kit/sqlitedb"
)

// openClock opens the database at path and the lab clock kept in it.
// The database closes when the test ends, if the test has not closed it.
func openClock(t *testing.T, path string) (*clock.Clock, *sqlitedb.DB) {
	t.Helper()
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := clock.Open(context.Background(), db.DB)
	if err != nil {
		t.Fatal(err)
	}
	return c, db
}

func TestClock_OffsetSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lab.db")
	c, db := openClock(t, path)
	before := c.Now()
	moved, err := c.Advance(ctx, 25*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := moved.Sub(before); d < 25*time.Hour || d > 25*time.Hour+time.Minute {
		t.Fatalf("advance by 25h moved the clock by %v", d)
	}
	db.Close()

	again, _ := openClock(t, path)
	if d := again.Now().Sub(before); d < 25*time.Hour {
		t.Fatalf("after reopening, the clock is only %v ahead of where it started; the offset was lost", d)
	}
}

func TestClock_SetAndFormat(t *testing.T) {
	ctx := context.Background()
	c, _ := openClock(t, ":memory:")
	target := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := c.Set(ctx, target); err != nil {
		t.Fatal(err)
	}
	if d := c.Now().Sub(target); d < -2*time.Millisecond || d > time.Minute {
		t.Fatalf("after Set the clock reads %v, want about %v", c.Now(), target)
	}
	if got := clock.Format(time.Date(2030, 1, 2, 3, 4, 5, 7e6, time.UTC)); got != "2030-01-02T03:04:05.007Z" {
		t.Fatalf("Format = %q", got)
	}
}

// After Set(t), the clock never reads earlier than t: its offset is kept
// in whole milliseconds, and a Set that rounded it to the nearest read up
// to half a millisecond before t, in about half of these tries.
func TestClock_SetNeverReadsBeforeTheInstant(t *testing.T) {
	ctx := context.Background()
	c, _ := openClock(t, ":memory:")
	for i := range 200 {
		at := time.Date(2031, 3, 4, 5, 6, 7, (i%1000)*int(time.Millisecond), time.UTC)
		now, err := c.Set(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		if now.Before(at) {
			t.Fatalf("Set(%v) answered %v, before it", at, now)
		}
	}
}

// gatedDB is a SQLite database whose writes to lab_clock stop on their way
// in: each one sends on entered, then waits for release (as a write waits
// for the write lock another transaction holds) or for its context to end
// (as SQLite's busy timeout ends the wait).
type gatedDB struct {
	dsn      string
	entered  chan<- struct{}
	released <-chan struct{}
}

func (g gatedDB) Connect(context.Context) (driver.Conn, error) { return g.Open(g.dsn) }

func (g gatedDB) Driver() driver.Driver { return g }

func (g gatedDB) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return gatedConn{Conn: c, gate: g}, nil
}

type gatedConn struct {
	driver.Conn
	gate gatedDB
}

func (c gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if strings.HasPrefix(strings.TrimSpace(query), "INSERT INTO lab_clock") {
		c.gate.entered <- struct{}{}
		select {
		case <-c.gate.released:
		case <-ctx.Done():
			return nil, fmt.Errorf("database is locked: %w", ctx.Err())
		}
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// A transaction that holds the write lock and reads the clock (a relay
// stamping the rows it sends) must not wait for a move of the clock that
// is itself waiting for that lock: the two would wait on each other until
// the busy timeout failed the move, and POST /lab/clock with it.
func TestClock_NowDoesNotWaitForAMoveWaitingOnTheDatabase(t *testing.T) {
	entered, released := make(chan struct{}), make(chan struct{})
	db := sql.OpenDB(gatedDB{dsn: filepath.Join(t.TempDir(), "lab.db"), entered: entered, released: released})
	t.Cleanup(func() { db.Close() })
	c, err := clock.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Now()
	// The busy timeout's stand-in: it ends the move's wait only if the
	// two wait on each other.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	moved := make(chan error, 1)
	go func() {
		_, err := c.Advance(ctx, time.Hour)
		moved <- err
	}()
	<-entered
	// The move now waits on the database; the transaction holding the
	// lock reads the clock, and only then lets the move through.
	read := c.Now()
	close(released)
	if err := <-moved; err != nil {
		t.Fatalf("the clock's move failed while a transaction that read the clock held the write lock: %v", err)
	}
	if d := read.Sub(before); d >= time.Hour {
		t.Fatalf("Now read during the move is %v ahead: the offset was published before it was stored", d)
	}
	if d := c.Now().Sub(before); d < time.Hour {
		t.Fatalf("after the move the clock is only %v ahead, want 1h", d)
	}
}
