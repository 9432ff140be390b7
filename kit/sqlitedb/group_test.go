package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/kit/fault"
)

// groupTimeout is the write gate's timeout in these tests: long enough
// that no writer gives up while a test runs, short enough that a test
// that fails with a transaction open fails rather than hangs (Close waits
// for the gate).
const groupTimeout = 10 * time.Second

// waitForWaiters waits until n writers wait in line at db's gate: counted
// in waiting, and blocked on the gate's channel. Counted alone, a writer
// may not be in line yet, and a transaction whose Commit hands it the
// gate finds the gate free when it waits for its group, takes it first
// and commits the group alone.
func waitForWaiters(t *testing.T, db *DB, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for db.gate.waiting.Load() < n || inLine() < int(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writers wait at the gate (%d in line), want %d", db.gate.waiting.Load(), inLine(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// inLine counts the goroutines blocked in the write gate's take.
func inLine() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, " [select") && strings.Contains(g, "(*writeGate).take(") {
			n++
		}
	}
	return n
}

// within waits for ch at most 10 s: a member left waiting for ever is a
// failure, not a hang.
func within(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits after 10 s", what)
		return nil
	}
}

// count reads how many rows n has, from a connection of its own.
func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM n`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// openDeferred opens a database file like openGated, with a table child
// whose foreign key to parent only COMMIT checks.
func openDeferred(t *testing.T) *DB {
	t.Helper()
	db := openGated(t, groupTimeout)
	if _, err := db.Exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE child (parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// handOver commits a while another write transaction, b, waits at the
// gate: a hands the group on to b. It returns a's Commit's error on a
// channel, once a's Commit returns, and b, which holds the gate. It stops
// db's checkpointer first: in line at the gate, it would get the gate
// from a, commit a's group, and leave b a group of its own.
func handOver(t *testing.T, db *DB, a *sql.Tx) (aDone <-chan error, b *sql.Tx) {
	t.Helper()
	if db.ckpt != nil {
		db.ckpt.stop()
	}
	began := make(chan *sql.Tx, 1)
	go func() {
		b, err := db.Begin()
		if err != nil {
			t.Error(err)
		}
		began <- b
	}()
	waitForWaiters(t, db, 1)
	done := make(chan error, 1)
	go func() { done <- a.Commit() }()
	if b = <-began; b == nil {
		t.FailNow()
	}
	return done, b
}

// insertTx begins a write transaction and inserts v.
func insertTx(t *testing.T, db *DB, v int) *sql.Tx {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO n VALUES (?)`, v); err != nil {
		t.Fatal(err)
	}
	return tx
}

// A transaction that commits while another writer waits leaves its changes
// in the group for the next one, and its Commit returns only when the
// group has committed: never before anyone else can read them. What the
// lab hears of its commit (its business write, where lab mode crashes the
// process; its key rows, which the event stream shows) comes then too: a
// process killed there has its changes on disk. Caught: a Commit that
// returns before the group's COMMIT (the first check), no grouping at all
// (the second: a's Commit returns at once), and a member whose hooks run
// as it leaves the group (the last: a reader saw none of the group).
func TestGroup_CommitReturnsOnceTheGroupHasCommitted(t *testing.T) {
	db := openGated(t, groupTimeout)
	heard := make(chan int, 1)
	db.OnBusinessCommit(func() {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM n`).Scan(&n); err != nil {
			n = -1
		}
		heard <- n
	})
	a, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExecContext(fault.MarkBusinessWrite(context.Background()), `INSERT INTO n VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	aDone, b := handOver(t, db, a)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-aDone:
		b.Rollback()
		t.Fatalf("a's Commit returned (%v) while the group it is in is still open", err)
	case <-time.After(50 * time.Millisecond):
	}
	if got := count(t, db.DB); got != 0 {
		t.Fatalf("a reader sees %d rows before the group committed, want 0", got)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := within(t, "a's Commit", aDone); err != nil {
		t.Fatalf("a: %v", err)
	}
	if got := count(t, db.DB); got != 2 {
		t.Fatalf("after both commits a reader sees %d rows, want 2", got)
	}
	// Heard, if at all, before a's Commit returned.
	select {
	case got := <-heard:
		if got != 2 {
			t.Fatalf("when a's business commit was heard, a reader saw %d rows, want the group's 2", got)
		}
	default:
		t.Fatal("a's Commit returned, and its business commit was never heard")
	}
}

// A rollback in a group undoes its own changes only. Caught: a rollback
// that rolls back the whole SQLite transaction, members before it and all.
func TestGroup_RollbackUndoesItsOwnChangesOnly(t *testing.T) {
	db := openGated(t, groupTimeout)
	a := insertTx(t, db, 1)
	aDone, b := handOver(t, db, a)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Rollback(); err != nil {
		t.Fatalf("b's rollback: %v", err)
	}
	if err := within(t, "a's Commit", aDone); err != nil {
		t.Fatalf("a: %v", err)
	}
	var v int
	if err := db.QueryRow(`SELECT group_concat(v) FROM n`).Scan(&v); err != nil || v != 1 {
		t.Fatalf("rows after a committed and b rolled back: %v (%v), want a's 1 alone", v, err)
	}
}

// A transaction handed the group on to a writer that then gave up
// waiting: nobody comes to commit the group, so the transaction commits it
// itself, and gives the gate back. Caught: a member that only waits for
// the group (it waits for ever), and one that keeps the gate it took to
// commit the group (the next write waits out the gate's timeout).
func TestGroup_AWaiterThatGivesUpDoesNotStrandTheGroup(t *testing.T) {
	db := openGated(t, groupTimeout)
	a := insertTx(t, db, 1)
	// A writer that waits at the gate, and leaves before it gets in.
	db.gate.waiting.Add(1)
	done := make(chan error, 1)
	go func() { done <- a.Commit() }()
	if err := within(t, "a's Commit, in a group nobody else is in,", done); err != nil {
		t.Fatal(err)
	}
	db.gate.waiting.Add(-1)
	if got := count(t, db.DB); got != 1 {
		t.Fatalf("a reader sees %d rows, want 1", got)
	}
	if _, err := db.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatalf("a write after a's Commit: %v", err)
	}
}

// Close, a writer that does not join the group, commits the group open on
// the writer before it closes it. Caught: a Close that closes the writer
// under an open group (its rows are lost, and its member waits for ever).
func TestGroup_CloseCommitsTheOpenGroupFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db := openTimed(t, path, groupTimeout)
	a := insertTx(t, db, 1)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	waitForWaiters(t, db, 1)
	committed := make(chan error, 1)
	go func() { committed <- a.Commit() }()
	if err := within(t, "a's Commit, with Close next in line,", committed); err != nil {
		t.Fatalf("a: %v", err)
	}
	if err := within(t, "Close", closed); err != nil {
		t.Fatalf("close: %v", err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := count(t, again.DB); got != 1 {
		t.Fatalf("after reopening: %d rows, want a's 1", got)
	}
}

// Many writers at once, each committing or rolling back, with writes
// outside transactions among them: exactly the rows whose Commit (or
// autocommit write) returned nil are there. Run with -race, it also checks
// that the gate hands the group on without a data race.
func TestGroup_ManyWritersKeepExactlyWhatTheyWereToldCommitted(t *testing.T) {
	db := openGated(t, groupTimeout)
	const writers, each = 16, 60
	var mu sync.Mutex
	committed := map[int]bool{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range each {
				v := w*each + i
				var err error
				switch rng.IntN(5) {
				case 0:
					_, err = db.Exec(`INSERT INTO n VALUES (?)`, v)
				default:
					tx, berr := db.Begin()
					if berr != nil {
						t.Error(berr)
						return
					}
					if _, xerr := tx.Exec(`INSERT INTO n VALUES (?)`, v); xerr != nil {
						t.Error(xerr)
					}
					if rng.IntN(4) == 0 {
						tx.Rollback()
						continue
					}
					err = tx.Commit()
				}
				if err != nil {
					t.Errorf("write %d: %v", v, err)
					continue
				}
				mu.Lock()
				committed[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rows, err := db.Query(`SELECT v FROM n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if !committed[v] {
			t.Errorf("row %d is there, but its writer was not told it committed", v)
		}
		seen[v] = true
	}
	for v := range committed {
		if !seen[v] {
			t.Errorf("row %d was committed, and is not there", v)
		}
	}
	if t.Failed() {
		return
	}
	if len(committed) == 0 {
		t.Fatal("nothing committed")
	}
	t.Logf("%d rows committed by %d writers", len(committed), writers)
}

// groupFailed checks that a's group failed: a's Commit returned an
// error, and no row of the group stayed.
func groupFailed(t *testing.T, db *DB, aDone <-chan error) {
	t.Helper()
	if err := within(t, "a's Commit", aDone); err == nil {
		t.Error("a's group failed, and a's Commit returned nil")
	}
	if got := count(t, db.DB); got != 0 {
		t.Fatalf("a reader sees %d rows of the failed group, want 0", got)
	}
}

// A transaction alone opens a group and is its only member: it needs no
// savepoint, its rollback ends the group, and its commit is the group's.
// Caught: a first member that rolls back a savepoint it never made (its
// Rollback fails), and a rollback that leaves the group open (the next
// transaction's changes would be committed by nobody, or twice counted).
func TestGroup_ATransactionAloneCommitsAndRollsBackAsBefore(t *testing.T) {
	db := openGated(t, groupTimeout)
	before := db.GateUse()
	if err := insertTx(t, db, 1).Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if got := count(t, db.DB); got != 0 {
		t.Fatalf("after a rollback: %d rows, want 0", got)
	}
	if err := insertTx(t, db, 2).Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := count(t, db.DB); got != 1 {
		t.Fatalf("after a commit: %d rows, want 1", got)
	}
	if groups := db.GateUse().Sub(before).Groups; groups != 1 {
		t.Fatalf("%d groups committed, want the one transaction's", groups)
	}
}

// failingCommit is a group's SQLite transaction whose COMMIT fails, as one
// that meets an I/O error does: it rolls back instead.
type failingCommit struct{ driver.Tx }

func (f failingCommit) Commit() error {
	f.Tx.Rollback()
	return errors.New("disk I/O error")
}

// openFailingGroup opens a database file with a group on its writer whose
// COMMIT will fail: a committed into it (a's row 1, a's Commit waiting on
// the returned channel), and b, the transaction a handed the writer to.
func openFailingGroup(t *testing.T) (db *DB, aDone <-chan error, b *sql.Tx) {
	t.Helper()
	db = openGated(t, groupTimeout)
	aDone, b = handOver(t, db, insertTx(t, db, 1))
	// b holds the gate, and with it the group.
	db.gate.open.inner = failingCommit{db.gate.open.inner}
	return db, aDone, b
}

// A group whose COMMIT fails fails every member: each Commit returns the
// error, nothing of the group stays, and the writer is usable again.
// Caught: members told nil while the group rolled back, and a failed
// COMMIT's error given to the member that ran it alone.
func TestGroup_AFailedCommitFailsEveryMember(t *testing.T) {
	db, aDone, b := openFailingGroup(t)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err == nil {
		t.Error("the group's COMMIT failed, and b's Commit, which ran it, returned nil")
	}
	groupFailed(t, db, aDone)
	if _, err := db.Exec(`INSERT INTO n VALUES (3)`); err != nil {
		t.Fatalf("a write after the failed group: %v", err)
	}
}

// A transaction that reads what the members before it changed, then rolls
// back, hears when their group fails: what it read never was, and a
// stage that answers from it (a stored response replayed, a key found in
// progress) must not answer. Caught: a Rollback that returns nil whatever
// became of its group.
func TestGroup_ARollbackHearsWhenItsGroupFailed(t *testing.T) {
	db, aDone, b := openFailingGroup(t)
	var n int
	if err := b.QueryRow(`SELECT count(*) FROM n`).Scan(&n); err != nil || n != 1 {
		b.Rollback()
		t.Fatalf("b reads %d rows (%v), want a's 1 in the open group", n, err)
	}
	if err := b.Rollback(); err == nil {
		t.Error("b read a's row, its group then failed, and b's Rollback returned nil")
	}
	groupFailed(t, db, aDone)
}

// A transaction that leaves a deferred foreign key broken fails alone, as
// its own COMMIT would have: the members before it commit. Caught: a
// member released into the group with the key broken (the group's COMMIT
// refuses it, and every member fails for it).
func TestGroup_ABrokenDeferredForeignKeyFailsItsTransactionAlone(t *testing.T) {
	db := openDeferred(t)
	a := insertTx(t, db, 1)
	aDone, b := handOver(t, db, a)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(`INSERT INTO child VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err == nil {
		t.Error("b broke a deferred foreign key, and its Commit returned nil")
	}
	if err := within(t, "a's Commit", aDone); err != nil {
		t.Errorf("a broke nothing, and its Commit returned %v", err)
	}
	var rows string
	if err := db.QueryRow(`SELECT group_concat(v) || '/' || (SELECT count(*) FROM child) FROM n`).Scan(&rows); err != nil || rows != "1/0" {
		t.Fatalf("rows of n / rows of child: %q (%v), want a's 1 alone and no child", rows, err)
	}
	// The writer is usable again.
	if _, err := db.Exec(`INSERT INTO n VALUES (3)`); err != nil {
		t.Fatalf("a write after b's failed Commit: %v", err)
	}
}

// openRollingBack opens a database file like openGated, with a table u
// whose conflicts roll back the whole transaction, and a row to conflict
// with.
func openRollingBack(t *testing.T) *DB {
	t.Helper()
	db := openGated(t, groupTimeout)
	if _, err := db.Exec(`CREATE TABLE u (v INTEGER UNIQUE ON CONFLICT ROLLBACK)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO u VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// rollBackWhole runs, in tx, a statement after which SQLite rolls tx's
// transaction back whole.
func rollBackWhole(t *testing.T, tx *sql.Tx) {
	t.Helper()
	if _, err := tx.Exec(`INSERT INTO u VALUES (7)`); err == nil {
		tx.Rollback()
		t.Fatal("a conflict resolved by ROLLBACK did not fail")
	}
}

// A statement that rolls back the whole SQLite transaction (a conflict
// resolved by ON CONFLICT ROLLBACK, an I/O error) in a later member takes
// the members before it with it, whether that member then rolls back or
// commits anyway: they are told so, and the next writer finds no
// transaction left open on the writer. Caught: members told nil for
// changes SQLite rolled back, by b's Rollback or by b's Commit.
func TestGroup_AWholeTransactionRolledBackFailsTheMembersBefore(t *testing.T) {
	for _, end := range []string{"Rollback", "Commit"} {
		t.Run(end, func(t *testing.T) {
			db := openRollingBack(t)
			a := insertTx(t, db, 1)
			aDone, b := handOver(t, db, a)
			rollBackWhole(t, b)
			ending := b.Rollback
			if end == "Commit" {
				ending = b.Commit
			}
			if err := ending(); !errors.Is(err, errRolledBack) {
				t.Errorf("b's transaction was rolled back whole, with a's changes, and its %s returned %v, not that SQLite rolled it back", end, err)
			}
			groupFailed(t, db, aDone)
			c := insertTx(t, db, 3)
			if err := c.Commit(); err != nil {
				t.Fatalf("a transaction after the broken group: %v", err)
			}
		})
	}
}

// The transaction that opened a group, rolled back whole by SQLite (a
// conflict resolved by ON CONFLICT ROLLBACK), and committed anyway, hands
// the next transaction no group: SQLite's transaction is gone, and the
// next one must not run in one its own savepoint begins, committed by its
// RELEASE before it is told anything. Caught: a next transaction told its
// Commit failed while its row stayed.
func TestGroup_AFirstTransactionRolledBackWholeHandsOnNoGroup(t *testing.T) {
	db := openRollingBack(t)
	a, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	rollBackWhole(t, a)
	aDone, b := handOver(t, db, a)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	err = b.Commit()
	if got := count(t, db.DB); (err == nil) != (got == 1) {
		t.Errorf("b's Commit returned %v, and a reader sees %d of its rows", err, got)
	}
	if err := within(t, "a's Commit", aDone); err == nil {
		t.Error("SQLite rolled a's transaction back, and a's Commit returned nil")
	}
}

// PRAGMA defer_foreign_keys lasts until the end of its transaction: SQLite
// switches it off at each COMMIT and ROLLBACK. A transaction that turns it
// on in a group defers its own foreign keys, not those of the transactions
// after it. Caught: a member that inherits it from the one before, whose
// broken immediate key then passes its statement and fails only its
// Commit (a stage that tells an unknown account by the INSERT's error
// answers 500 instead).
func TestGroup_DeferForeignKeysEndsWithItsTransaction(t *testing.T) {
	db := openDeferred(t)
	if _, err := db.Exec(`CREATE TABLE pet (parent INTEGER REFERENCES parent(id))`); err != nil {
		t.Fatal(err)
	}
	a := insertTx(t, db, 1)
	if _, err := a.Exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
		t.Fatal(err)
	}
	aDone, b := handOver(t, db, a)
	_, err := b.Exec(`INSERT INTO pet VALUES (42)`)
	if rerr := b.Rollback(); rerr != nil {
		t.Errorf("b's rollback: %v", rerr)
	}
	if err == nil {
		t.Error("b broke an immediate foreign key, and its INSERT succeeded: it ran with the defer_foreign_keys of a, the transaction before it")
	}
	if err := within(t, "a's Commit", aDone); err != nil {
		t.Errorf("a: %v", err)
	}
}

// An in-memory database does not group: a transaction that commits while
// another writer waits commits alone, and its Commit returns while the
// next writer still holds the gate. Caught: in-memory transactions
// grouped, whose Commit waits for the writer after it (and whose group is
// committed by a member that holds no turn on SQLite's in-memory locks).
func TestGroup_InMemoryEachTransactionCommitsAlone(t *testing.T) {
	db := openMemory(t, groupTimeout)
	a := insertTx(t, db, 1)
	aDone, b := handOver(t, db, a)
	defer b.Rollback()
	if err := within(t, "a's Commit, with b holding the gate,", aDone); err != nil {
		t.Fatalf("a: %v", err)
	}
	if groups := db.GateUse().Groups; groups != 0 {
		t.Fatalf("%d groups committed on an in-memory database, want none", groups)
	}
}

// A member that joins a group finds defer_foreign_keys off, as the members
// before left it, and does not set it again: setting a flag pragma expires
// every statement the writer has prepared, and each would be compiled
// again at its next step, inside the gate (a sixth of the final server's
// CPU at 64 clients when every member set it). Caught: the pragma set at
// every join.
func TestGroup_AMemberDoesNotExpireTheWritersStatements(t *testing.T) {
	db := openGated(t, groupTimeout)
	var c *connector
	raw, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw.Raw(func(dc any) error {
		c = dc.(*conn).connector
		return nil
	})
	raw.Close()
	a := insertTx(t, db, 1)
	aDone, b := handOver(t, db, a)
	if _, err := b.Exec(`INSERT INTO n VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	for q := range c.writer.stmts {
		if strings.HasPrefix(q, "PRAGMA defer_foreign_keys =") {
			t.Errorf("b joined a's group and ran %q, though a left defer_foreign_keys off: every statement the writer had prepared was compiled again", q)
		}
	}
	if err := b.Commit(); err != nil {
		t.Error(err)
	}
	if err := within(t, "a's Commit", aDone); err != nil {
		t.Errorf("a: %v", err)
	}
	if n := count(t, db.DB); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}
