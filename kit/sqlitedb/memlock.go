package sqlitedb

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/semaphore"
)

// An in-memory database (the memdb VFS) has no write-ahead log, and its
// locks are coarser than a file's: while a write transaction is open, no
// other connection may start to read, and a commit waits for the readers
// to leave. A connection that finds the database locked gets SQLITE_BUSY,
// and SQLite's busy handler sleeps, at least a millisecond and up to
// 100 ms: longer than a whole request here. With a few requests in flight
// the connections spent more time asleep than working, and a day replayed
// by four clients took as long as one replayed by a single client.
//
// So for an in-memory database the wrapper takes the same turns in Go,
// where the one who waits is woken as soon as they are free instead of
// sleeping: a statement read outside a write transaction holds a shared
// turn until its rows are closed (a read-only transaction holds it until
// it ends); a write transaction holds the exclusive turn from its BEGIN to
// its end, after the write gate, and a write outside a transaction holds
// it while it runs. Turns are served in the order they were asked for, so
// a writer waiting for the readers to leave holds up the readers after
// it. A read beside an open write transaction waited for it on SQLite's
// own locks too, and so did a commit beside open rows. One wait is new: a
// write transaction that ends in a rollback never waited for the readers
// on SQLite's locks (only a commit does), and here it waits for them at
// its BEGIN. A database file in WAL mode needs none of this: its readers
// never wait for a writer.

// memTurns is the shared and exclusive turns on an in-memory database.
type memTurns struct {
	sem     *semaphore.Weighted
	timeout time.Duration // how long a turn is waited for before errMemBusy
}

// allReaders is the exclusive turn's weight: more than readers can ever
// hold at once.
const allReaders = 1 << 30

func newMemTurns() *memTurns {
	return &memTurns{sem: semaphore.NewWeighted(allReaders), timeout: BusyTimeout}
}

// shared waits for a shared turn and returns the function that gives it
// back; exclusive waits for the exclusive one. Both return ctx's error if
// ctx ends first, and errMemBusy after m.timeout. A nil *memTurns (a
// database file) grants every turn at once.
func (m *memTurns) shared(ctx context.Context) (func(), error) { return m.take(ctx, 1) }

func (m *memTurns) exclusive(ctx context.Context) (func(), error) { return m.take(ctx, allReaders) }

func (m *memTurns) take(ctx context.Context, n int64) (func(), error) {
	if m == nil {
		return func() {}, nil
	}
	give := func() { m.sem.Release(n) }
	if m.sem.TryAcquire(n) {
		return give, nil
	}
	wait, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if err := m.sem.Acquire(wait, n); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errMemBusy
	}
	return give, nil
}

// errMemBusy is what a statement gets when it has waited BusyTimeout for
// its turn on an in-memory database: what SQLite answers after its busy
// timeout, so IsBusy reports it. Code that reads outside its own open
// write transaction, or begins one while rows it read are still open,
// waits for itself and ends here, as it would on SQLite's own locks (in
// the second case only at its COMMIT there: one that rolls back went
// through).
var errMemBusy = errors.New("database is locked (5) (SQLITE_BUSY): waited " + BusyTimeout.String() +
	" for the other connections of this in-memory database")
