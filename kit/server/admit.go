package server

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// reservedConns is how many of a bounded pool's connections the customer
// requests leave to the rest of the server: the outbox relay's pass, the
// purge, the key-row events, the /lab endpoints (a reset, the state the
// grader and the dashboard read), with room to spare. Each holds one
// connection at a time, and none of them may queue behind the customers:
// a relay that waits for a connection is a posting that reaches the core
// late, a lab that waits is an instructor whose dashboard freezes.
const reservedConns = 8

// slots admits at most cap(s) customer requests at a time; a nil slots
// admits every one. Requests beyond wait in the order they came (a
// channel's senders are served first come, first served), as they waited
// for a database connection before, but for a slot that leaves the
// reserved connections free.
type slots chan struct{}

// requestSlots returns the slots for a server on db: when db's pool is
// bounded (PostgreSQL's), its size less reservedConns, at least one; none
// when it is not (SQLite's, whose writers queue at its write gate, and
// whose readers need no connection of another's).
func requestSlots(db *sql.DB) slots {
	pool := db.Stats().MaxOpenConnections
	if pool == 0 {
		return nil
	}
	return make(slots, max(1, pool-reservedConns))
}

// take takes a free slot, or waits for one until ctx ends. It reports
// whether it got one; the caller that did must release it.
func (s slots) take(ctx context.Context) bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
	}
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release frees a slot that take gave.
func (s slots) release() {
	if s != nil {
		<-s
	}
}

// warm opens n of db's connections at once, then leaves them idle in its
// pool for the first requests to take. Each is held until all are open,
// so that none is opened twice. It returns the errors of those that could
// not be opened; the pool opens them later, as it is asked.
func warm(ctx context.Context, db *sql.DB, n int) error {
	errs := make([]error, n)
	conns := make([]*sql.Conn, n)
	var opened sync.WaitGroup
	for i := range n {
		opened.Go(func() {
			conns[i], errs[i] = db.Conn(ctx)
		})
	}
	opened.Wait()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	return errors.Join(errs...)
}
