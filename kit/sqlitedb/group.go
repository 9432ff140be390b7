package sqlitedb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"modernc.org/sqlite"
)

// Group commit. On a database file, a commit costs more than the
// statements before it: SQLite appends every page the transaction changed
// to the log, two system calls a page, and a transfer changes a dozen. Most
// of those pages are the same from one transaction to the next (the last
// page of each table the rows are appended to), so when writers queue at
// the gate, their transactions run one after the other inside one SQLite
// transaction on the writer, each after the first in a savepoint of its
// own, and one COMMIT writes the pages they changed once for all of them.
//
// - A transaction's Commit releases its savepoint: its changes are in the
//   group, and it is done with the writer. If a writer is waiting at the
//   gate, it hands the gate on and waits for the group's COMMIT; if none
//   is, it commits the group at once. Alone, a transaction commits exactly
//   as it would without groups.
// - Commit returns only once the group has committed, with the group's
//   error if its COMMIT failed: a caller that hears "committed" can tell
//   its client so, and a caller that hears an error knows that nothing of
//   its transaction stayed.
// - A transaction that leaves a deferred foreign key broken fails alone,
//   at its Commit, as its own COMMIT would have failed: the group's
//   COMMIT, which checks them, would fail every member for it. And each
//   member begins with defer_foreign_keys off, as a transaction does.
// - A Rollback rolls back its savepoint only. It waits for the group too,
//   because what it read may have been another member's changes, and
//   returns the group's error if the group failed: what it read never
//   was.
// - A member waiting for its group also waits in line at the gate: if it
//   gets the gate back and the group is still open, the writers that were
//   ahead of it have all gone through, and it commits the group. So a
//   group never waits for a writer that gave up waiting.
// - A writer that is not a transaction (a write outside one, the
//   checkpointer, Close) commits the open group before it starts.
// - When SQLite rolls the whole transaction back under a member (an I/O
//   error, a conflict resolved by ROLLBACK), the group fails, with every
//   member committed into it so far.
//
// Readers on other connections see a group's changes when it commits, as
// they would see each member's on its own. A member sees the changes of
// the members before it, which they do not yet: code that holds a
// transaction and reads beside it, outside it, may miss a row its own
// transaction finds. Crashes keep their meaning: a transaction whose
// Commit has not returned may be lost, one whose Commit has returned is in
// the log. An in-memory database has no log to write and does not group.

// group is the SQLite transaction open on the writer while write
// transactions take turns inside it. Only the holder of the gate touches
// inner.
type group struct {
	inner driver.Tx     // the SQLite transaction, begun by its first member
	done  chan struct{} // closed once the group has committed or failed
	err   error         // why it failed; set before done is closed
}

// memberSavepoint is the savepoint each transaction of a group runs in.
const memberSavepoint = "idemlab_member"

// finishGroup commits the group open on the writer, if any. The caller
// holds the gate. It returns the COMMIT's error, which every member of the
// group gets too.
func (g *writeGate) finishGroup() error {
	grp := g.open
	if grp == nil {
		return nil
	}
	g.open = nil
	if err := grp.inner.Commit(); err != nil {
		// keptTx.Commit rolls back a transaction its failed COMMIT left
		// open: the next writer starts afresh.
		grp.fail(fmt.Errorf("commit: %w", err))
		return grp.err
	}
	g.groups.Add(1)
	close(grp.done)
	return nil
}

// abandonGroup rolls back the group open on the writer, members and all,
// because its transaction broke (err); every member waiting gets err. The
// caller holds the gate.
func (g *writeGate) abandonGroup(err error) {
	grp := g.open
	if grp == nil {
		return
	}
	g.open = nil
	grp.inner.Rollback()
	grp.fail(err)
}

func (grp *group) fail(err error) {
	grp.err = err
	close(grp.done)
}

// leaveGroup ends the holder's part in grp, the group open on the writer:
// if another writer waits at the gate, it gives the gate (and the writer)
// to it by calling give, and waits for the group to commit; if none does,
// it commits the group, then calls give. It returns the group's error.
func (g *writeGate) leaveGroup(grp *group, give func()) error {
	if g.waiting.Load() == 0 {
		err := g.finishGroup()
		give()
		return err
	}
	give()
	return g.await(grp)
}

// await waits until grp has committed or failed, in line at the gate
// meanwhile: whoever gets the gate first, this goroutine or the one that
// commits the group, ends the wait.
func (g *writeGate) await(grp *group) error {
	select {
	case <-grp.done:
		return grp.err
	case g.slot <- struct{}{}:
		g.since = time.Now()
	}
	// The writers that were ahead in line have gone through; if the group
	// is still open, none of them committed it.
	if g.open == grp {
		g.finishGroup()
	}
	g.release()
	<-grp.done
	return grp.err
}

// errGroupBroken is what the members of a group get when a statement of a
// later member broke the SQLite transaction they shared (an I/O error
// rolls the whole transaction back): none of their changes stayed.
var errGroupBroken = errors.New("the write transaction this one was committed into failed, and nothing of it stayed")

// joinGroup begins a transaction in the group open on the writer, in a
// savepoint of its own, or opens the group for it if there is none (first).
// The first member needs no savepoint: while it runs, the group holds only
// its changes, and its rollback ends the group. The caller holds the gate.
func (c *connector) joinGroup(ctx context.Context, opts driver.TxOptions) (grp *group, first bool, err error) {
	g := c.gate
	if g.open == nil {
		t, err := c.writer.begin(ctx, opts)
		if err != nil {
			return nil, false, err
		}
		g.open = &group{inner: t, done: make(chan struct{})}
		c.writer.rolledBack = false
		return g.open, true, nil
	}
	// A transaction of its own would begin with defer_foreign_keys off:
	// SQLite switches it off at each COMMIT and ROLLBACK, not at a RELEASE,
	// and a member before may have turned it on. It is read before it is
	// set: setting a flag pragma expires every statement the connection
	// has prepared, and each would be compiled again at its next step.
	err = c.writer.deferForeignKeysOff(ctx)
	if err == nil {
		_, err = c.writer.exec(ctx, "SAVEPOINT "+memberSavepoint, nil)
	}
	if err != nil {
		// Commit what the members before put in: they are waiting for it.
		g.finishGroup()
		return nil, false, err
	}
	return g.open, false, nil
}

// deferForeignKeysOff switches defer_foreign_keys off on c if it is on.
// The read is prepared each time, not kept: SQLite compiles the flag's
// value into the statement, and neither a COMMIT, which clears the flag,
// nor preparing the pragma that sets it (which is when SQLite sets it)
// expires a kept statement.
func (c *physical) deferForeignKeysOff(ctx context.Context) error {
	ctx, err := driverContext(ctx)
	if err != nil {
		return err
	}
	rows, err := c.conn.(driver.QueryerContext).QueryContext(ctx, "PRAGMA defer_foreign_keys", nil)
	if err != nil {
		return err
	}
	on := false
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err == nil {
		n, _ := v[0].(int64)
		on = n != 0
	} else if err != io.EOF {
		rows.Close()
		return err
	}
	if err := rows.Close(); err != nil || !on {
		return err
	}
	_, err = c.exec(ctx, "PRAGMA defer_foreign_keys = OFF", nil)
	return err
}

// commitMember commits t, a member of a group: it releases t's savepoint
// (the first member has none), then leaves the group (leaveGroup) and,
// once the group has committed, tells the hooks what t changed, as Commit
// does for a transaction of its own.
func (t *tx) commitMember() error {
	if brokenForeignKey(t.on) {
		if err := t.rollbackMember(); err != nil {
			return errors.Join(errForeignKey, err)
		}
		return errForeignKey
	}
	c := t.conn
	business := c.business
	c.business, c.inTx = false, false
	rows, outbox := t.on.keyRows, t.on.outbox
	t.on.keyRows, t.on.outbox = nil, false
	g := c.connector.gate
	if t.on.rolledBack {
		// SQLite rolled the group's transaction back under t, with the
		// members before it: handed on, it would be no group, and the
		// next member's savepoint would begin and commit a transaction
		// of its own.
		return t.breakGroup(fmt.Errorf("commit: %w", errRolledBack))
	}
	if !t.first {
		if _, err := t.on.exec(context.Background(), "RELEASE "+memberSavepoint, nil); err != nil {
			// A transaction that cannot release its savepoint is broken:
			// roll the group back, so that nothing half done stays.
			return t.breakGroup(fmt.Errorf("commit: %w", err))
		}
	}
	if err := g.leaveGroup(t.group, c.endTurns); err != nil {
		return err
	}
	c.hooks.Committed(rows, business)
	if outbox {
		c.hooks.OutboxCommitted()
	}
	return c.hooks.CommitAnswer(business)
}

// errRolledBack is what a member's Commit or Rollback returns when SQLite
// rolled its transaction back on an error before it (an I/O error, a
// conflict resolved by ROLLBACK): its statements after that ran outside
// any transaction.
var errRolledBack = errors.New("SQLite rolled this transaction back on an earlier error: nothing it ran before that stayed, and what it ran after ran outside any transaction")

// errForeignKey is what a member's Commit returns when the member left a
// deferred foreign key broken: what SQLite's COMMIT says, and why nothing
// of the member stayed.
var errForeignKey = errors.New("commit: FOREIGN KEY constraint failed: a deferred foreign key this transaction broke is still broken, and nothing of the transaction stayed")

// brokenForeignKey reports whether the transaction open on p has a
// foreign key broken that COMMIT would refuse (a deferred one). Members
// are asked as they commit, and one that finds a key broken fails alone,
// so the one that finds it broke it.
func brokenForeignKey(p *physical) bool {
	s, ok := p.conn.(sqlite.DBStatus)
	if !ok {
		return false
	}
	n, _, err := s.Status(sqlite.DBStatusDeferredFKs, false)
	return err == nil && n != 0
}

// breakGroup rolls back the group t is in, with the members before t,
// because t found the group's transaction broken (err), and gives back
// what t's connection holds. It returns err.
func (t *tx) breakGroup(err error) error {
	t.conn.connector.gate.abandonGroup(fmt.Errorf("%w: %w", errGroupBroken, err))
	t.conn.endTurns()
	return err
}

// rollbackMember rolls back t's savepoint, and leaves the group. The first
// member's rollback ends the group: nothing else is in it. Another's
// returns the group's error, once the group has committed or failed.
func (t *tx) rollbackMember() error {
	c := t.conn
	c.business, c.settings, c.inTx = false, false, false
	t.on.keyRows, t.on.outbox = nil, false
	g := c.connector.gate
	if t.first {
		g.abandonGroup(nil)
		c.endTurns()
		return nil
	}
	if t.on.rolledBack {
		// SQLite's rollback took t's savepoint with it.
		return t.breakGroup(fmt.Errorf("rollback: %w", errRolledBack))
	}
	_, err := t.on.exec(context.Background(), "ROLLBACK TO "+memberSavepoint, nil)
	if err == nil {
		_, err = t.on.exec(context.Background(), "RELEASE "+memberSavepoint, nil)
	}
	if err != nil {
		return t.breakGroup(fmt.Errorf("rollback: %w", err))
	}
	// What t read may have been the changes of the members before it: if
	// they did not commit, its caller hears so, as they do.
	if err := g.leaveGroup(t.group, c.endTurns); err != nil {
		return fmt.Errorf("rollback: the transactions before it in its group, whose changes it could read, did not commit: %w", err)
	}
	return nil
}
