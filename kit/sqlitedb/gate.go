package sqlitedb

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
)

// SQLite has one write lock per database file. Left to itself, a connection
// that finds it taken waits in SQLite's busy handler, which sleeps and tries
// again in steps that grow to 100 ms: under load a writer may sleep through
// many commits it could have followed, and the slowest requests wait tens of
// times longer than the typical one. The write gate queues this process's
// writers in Go instead, first come first served: a writer takes the gate
// before it begins (or before a write statement outside a transaction) and
// gives it back when it commits or rolls back, so the writer connection
// passes straight to the next writer in line. On a database file, a write
// transaction that commits while others wait hands them SQLite's
// transaction still open, and its Commit returns once they have committed
// it (group.go). SQLite's busy handler still arbitrates between processes
// (a restarted lab server on the same file).

// errGateBusy is what a writer gets when it has waited BusyTimeout for the
// write gate: what SQLite answers after its busy timeout, so IsBusy reports
// it and the message says the same. A transaction that begins a second write
// transaction (or writes outside it) while it is still open waits for itself
// and ends here, exactly as it would on SQLite's own lock.
var errGateBusy = errors.New("database is locked (5) (SQLITE_BUSY): waited " + BusyTimeout.String() +
	" for another write transaction of this process to end")

// writeGate lets one writer of a database through at a time. Waiters are
// served in the order they arrived: a goroutine blocked sending on a channel
// joins the channel's queue, and a release hands the slot to the first one.
type writeGate struct {
	slot    chan struct{} // holds a value while a writer is through
	timeout time.Duration // how long a writer waits before errGateBusy
	// released gets a value when a writer leaves, unless one is already
	// waiting there: the checkpointer (checkpoint.go) wakes on it.
	released chan struct{}
	// since is when the writer now through got in; only that writer
	// reads or writes it.
	since time.Time
	// holds and held count the writers that went through and the time
	// they held the gate, in nanoseconds (GateUse).
	holds, held atomic.Int64
	// groups counts the groups that committed (group.go).
	groups atomic.Int64
	// waiting counts the writers waiting in take: a transaction that
	// commits while one waits leaves its group open for it (group.go).
	waiting atomic.Int32
	// open is the group of transactions open on the writer, or nil; only
	// the holder reads or writes it.
	open *group
}

func newWriteGate() *writeGate {
	return &writeGate{slot: make(chan struct{}, 1), timeout: BusyTimeout, released: make(chan struct{}, 1)}
}

// acquire waits for the gate, as take does, then commits the group of
// transactions the last holder left open on the writer, if any: what a
// writer that does not join the group does (group.go). The group's error
// goes to its members.
func (g *writeGate) acquire(ctx context.Context) error {
	if err := g.take(ctx); err != nil {
		return err
	}
	g.finishGroup()
	return nil
}

// take waits for the gate, and leaves a group open on the writer open: what
// a write transaction does, to join it. It returns ctx's error if ctx ends
// first, and errGateBusy after g.timeout.
func (g *writeGate) take(ctx context.Context) error {
	select {
	case g.slot <- struct{}{}:
		g.since = time.Now()
		return nil
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case g.slot <- struct{}{}:
		g.since = time.Now()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errGateBusy
	}
}

// release lets the next writer through, and tells the checkpointer that a
// writer has left.
func (g *writeGate) release() {
	g.releaseQuietly()
	select {
	case g.released <- struct{}{}:
	default:
	}
}

// releaseQuietly lets the next writer through without telling the
// checkpointer: what it calls after its own holds, which left nothing in
// the log for it to copy (the pages of a group its acquire committed
// first, its checkpoint then copied; told, it would wake itself again and
// again on a quiet database).
func (g *writeGate) releaseQuietly() {
	g.held.Add(int64(time.Since(g.since)))
	g.holds.Add(1)
	<-g.slot
}

// GateUse is what a database's write gate has seen since it was opened:
// how many times a writer went through it (a write transaction, a write
// outside one, a checkpoint that finishes or restarts the log, a
// transaction that waited for its group and got the gate back first, to
// commit the group or find it committed), how long, in all, writers held
// it, and how many groups of write transactions committed (group.go). A
// hold still under way is not counted yet.
type GateUse struct {
	Holds  int64
	Held   time.Duration
	Groups int64
}

// Sub is what the gate saw between an earlier reading, before, and u.
func (u GateUse) Sub(before GateUse) GateUse {
	return GateUse{Holds: u.Holds - before.Holds, Held: u.Held - before.Held, Groups: u.Groups - before.Groups}
}

// GateUse reports what the write gate has seen (see GateUse): two atomic
// loads, cheap enough to read around a benchmark. An in-memory database
// has a gate too.
func (db *DB) GateUse() GateUse {
	return GateUse{Holds: db.gate.holds.Load(), Held: time.Duration(db.gate.held.Load()), Groups: db.gate.groups.Load()}
}

// writes reports whether a statement run through Query may write, so that
// outside a transaction it must take the gate: anything but a SELECT,
// VALUES, WITH or EXPLAIN, any statement with a RETURNING clause
// (INSERT … RETURNING read through QueryRow), and a WITH whose statement
// inserts, updates or deletes (WITH … DELETE). A read that merely names
// one of these words takes the gate too: slower, never wrong. Statements
// run through Exec always take it.
func writes(query string) bool {
	q := strings.ToUpper(skipComments(query))
	if hasWord(q, "WITH") {
		for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "RETURNING"} {
			if strings.Contains(q, w) {
				return true
			}
		}
		return false
	}
	for _, read := range []string{"SELECT", "VALUES", "EXPLAIN"} {
		if hasWord(q, read) {
			return strings.Contains(q, "RETURNING")
		}
	}
	return true
}

// hasWord reports whether q starts with word as a whole word.
func hasWord(q, word string) bool {
	if !strings.HasPrefix(q, word) {
		return false
	}
	rest := q[len(word):]
	return rest == "" || !(unicode.IsLetter(rune(rest[0])) || unicode.IsDigit(rune(rest[0])) || rest[0] == '_')
}

// skipComments drops the white space and SQL comments before a statement's
// first word.
func skipComments(q string) string {
	for {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		default:
			return q
		}
	}
}
