package fault_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"idemlab/kit/fault"
)

func TestCountdown_FiresExactlyTheArmedCount(t *testing.T) {
	var c fault.Countdown
	c.Arm(5)
	var fired atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Fire() {
				fired.Add(1)
			}
		}()
	}
	wg.Wait()
	if fired.Load() != 5 || c.Left() != 0 {
		t.Fatalf("fired %d times, %d left; want 5 and 0", fired.Load(), c.Left())
	}
}

// TestSlowSettingsWrites_HoldsOnlyTheArmedSettingsWrites: an armed count
// of writes of account_settings wait before they run (a waiting write
// gives up with its context), however the statement begins (a WITH, a
// comment), and nothing else does: a read of the settings, a write of
// another table that reads them, a settings write once the count is
// spent. A fault that held reads would not widen a read-then-write
// window; one that held every statement would slow the lab for nothing;
// one that knew a write by its first word would let a save whose UPDATE
// follows a WITH close its window unseen.
func TestSlowSettingsWrites_HoldsOnlyTheArmedSettingsWrites(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	s.SlowSettingsWrites(5)
	for _, q := range []string{
		`SELECT version FROM account_settings WHERE account_id = ?`,
		`UPDATE accounts SET balance = balance - ? WHERE id = ?`,
		`WITH cur AS (SELECT version FROM account_settings WHERE account_id = ?) SELECT version FROM cur`,
		`UPDATE accounts SET balance = balance - ? WHERE id IN (SELECT account_id FROM account_settings)`,
	} {
		if err := s.BeforeStatement(gone, q); err != nil {
			t.Errorf("%s: %v; want it run at once", q, err)
		}
	}
	for _, q := range []string{
		`UPDATE account_settings SET nickname = ? WHERE account_id = ?`,
		"\n\t\tinsert into ACCOUNT_SETTINGS (account_id) values (?)",
		// A WITH says what it does after its common table expressions.
		`WITH cur AS (SELECT account_id FROM account_settings WHERE version IN (?))
		 UPDATE account_settings SET nickname = ? WHERE account_id IN (SELECT account_id FROM cur)`,
		`WITH saved AS (UPDATE account_settings SET nickname = ? RETURNING version) SELECT version FROM saved`,
		"-- the conditional write\nUPDATE \"account_settings\" SET nickname = ? WHERE account_id = ?",
	} {
		if err := s.BeforeStatement(gone, q); !errors.Is(err, context.Canceled) {
			t.Errorf("%q while armed: %v; want it held, and given up with its context", q, err)
		}
	}
	if n := s.SlowSettingsWritesLeft(); n != 0 {
		t.Errorf("%d left after five held writes; want 0", n)
	}
	if err := s.BeforeStatement(gone, `UPDATE account_settings SET nickname = ?`); err != nil {
		t.Errorf("a settings write once the count is spent: %v; want it run at once", err)
	}
}

// TestSlowSettingsRereads_HoldsOnlyAReadAfterTheRequestsWrite: an armed
// count of reads of account_settings wait before they run when their
// request has written the settings before, or when their context carries
// no request, which a read after the write run without the request's
// context (QueryRow) does (a waiting read gives up with its context); and
// nothing else does: a read before the write, one of another request or
// of the lab, a read of another table, the write itself, a read once the
// count is spent. A fault that held every read of the settings would hold
// up the other clerks' reads as long, and no save would land in the window
// it opens.
func TestSlowSettingsRereads_HoldsOnlyAReadAfterTheRequestsWrite(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	const read = `SELECT nickname, daily_limit, version FROM account_settings WHERE account_id = ?`
	s.SlowSettingsRereads(3)
	saver, other := fault.WithRequest(gone), fault.WithRequest(gone)
	for _, st := range []struct {
		ctx   context.Context
		query string
	}{
		{saver, read},
		{saver, `UPDATE account_settings SET nickname = ?, version = version + 1 WHERE account_id = ?`},
		{saver, `SELECT balance FROM accounts WHERE id = ?`},
		{other, read},
		{fault.LabRead(gone), read},
	} {
		if err := s.BeforeStatement(st.ctx, st.query); err != nil {
			t.Errorf("%s: %v; want it run at once", st.query, err)
		}
	}
	for _, q := range []string{
		"\n\t\tselect version from ACCOUNT_SETTINGS where account_id = ?",
		`WITH cur AS (SELECT version FROM account_settings WHERE account_id = ?) SELECT version FROM cur`,
	} {
		if err := s.BeforeStatement(saver, q); !errors.Is(err, context.Canceled) {
			t.Errorf("%q, a read of the settings after the request wrote them, while armed: %v; want it held, and given up with its context", q, err)
		}
	}
	if err := s.BeforeStatement(gone, read); !errors.Is(err, context.Canceled) {
		t.Errorf("a read of the settings in a context that carries no request, while armed: %v; want it held, and given up with its context", err)
	}
	if n := s.SlowSettingsRereadsLeft(); n != 0 {
		t.Errorf("%d left after three held reads; want 0", n)
	}
	if err := s.BeforeStatement(saver, read); err != nil {
		t.Errorf("a read after the write once the count is spent: %v; want it run at once", err)
	}
}

// TestSlowSettingsRereads_HoldsAReadAfterAWriteNoRequestCarries: a
// write of the settings sent without a request's context (Exec, not
// ExecContext) cannot be told from the write of the request that sent it,
// so a read of the settings that follows it in any request begun before
// it is held up, and one in a request begun after it, or before no such
// write, is not. A save that writes with Exec and reads the version it
// made under its request's context would otherwise never be held up.
func TestSlowSettingsRereads_HoldsAReadAfterAWriteNoRequestCarries(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	const read = `SELECT nickname, daily_limit, version FROM account_settings WHERE account_id = ?`
	s.SlowSettingsRereads(2)
	// Each request reads the settings once: a request's second read is
	// held up whatever ran before it.
	saver, early, other := fault.WithRequest(gone), fault.WithRequest(gone), fault.WithRequest(gone)
	if err := s.BeforeStatement(early, read); err != nil {
		t.Errorf("a read before any write: %v; want it run at once", err)
	}
	if err := s.BeforeStatement(fault.LabRead(gone), `UPDATE account_settings SET nickname = ?`); err != nil {
		t.Errorf("the lab's write: %v; want it run at once", err)
	}
	if err := s.BeforeStatement(other, read); err != nil {
		t.Errorf("a read after the lab's write: %v; want it run at once", err)
	}
	if err := s.BeforeStatement(gone, `UPDATE account_settings SET nickname = ?, version = version + 1 WHERE account_id = ?`); err != nil {
		t.Errorf("a write that no request carries: %v; want it run at once", err)
	}
	later := fault.WithRequest(gone)
	if err := s.BeforeStatement(later, read); err != nil {
		t.Errorf("a read in a request begun after that write: %v; want it run at once", err)
	}
	if err := s.BeforeStatement(saver, read); !errors.Is(err, context.Canceled) {
		t.Errorf("a read in a request begun before that write: %v; want it held, and given up with its context", err)
	}
	if n := s.SlowSettingsRereadsLeft(); n != 1 {
		t.Errorf("%d left after one held read of two; want 1", n)
	}
}

// TestSlowSettingsRereads_HoldsASecondReadLonger: a request's second read
// of the settings is held longer than a read after a write
// (SettingsSecondReadDelay): a clerk released with the GET waits on the
// core, writes and commits its save, each held up, in about 300 ms, and
// the save must land between the GET's two reads on a busy machine too.
// Still held when a context as long as twice the read-after-write hold
// ends, the read gives up with it.
func TestSlowSettingsRereads_HoldsASecondReadLonger(t *testing.T) {
	var s fault.Store
	s.SlowSettingsRereads(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*fault.SettingsRereadDelay)
	defer cancel()
	reader := fault.WithRequest(ctx)
	if err := s.BeforeStatement(reader, `SELECT nickname, daily_limit FROM account_settings WHERE account_id = ?`); err != nil {
		t.Fatalf("the request's first read: %v; want it run at once", err)
	}
	if err := s.BeforeStatement(reader, `SELECT version FROM account_settings WHERE account_id = ?`); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the request's second read, with a context of %v: %v; want it still held when the context ends", 2*fault.SettingsRereadDelay, err)
	}
}

// TestSlowSettingsRereads_HoldsARequestsSecondRead: an armed count of
// reads of account_settings wait before they run when their request has
// read the settings before, without writing them: a GET that reads the
// settings and their version in two statements hands a clerk the
// settings of one version under the ETag of another, when a save lands
// between the two. A request's first read runs at once, after a read of
// another table too, and so does another request's.
func TestSlowSettingsRereads_HoldsARequestsSecondRead(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	s.SlowSettingsRereads(1)
	reader, other := fault.WithRequest(gone), fault.WithRequest(gone)
	for _, st := range []struct {
		ctx   context.Context
		query string
	}{
		{reader, `SELECT id FROM accounts WHERE id = ? AND customer = ?`},
		{reader, `SELECT nickname, daily_limit FROM account_settings WHERE account_id = ?`},
		{other, `SELECT version FROM account_settings WHERE account_id = ?`},
	} {
		if err := s.BeforeStatement(st.ctx, st.query); err != nil {
			t.Errorf("%s: %v; want it run at once", st.query, err)
		}
	}
	if err := s.BeforeStatement(reader, `SELECT version FROM account_settings WHERE account_id = ?`); !errors.Is(err, context.Canceled) {
		t.Errorf("the request's second read of the settings, while armed: %v; want it held, and given up with its context", err)
	}
	if n := s.SlowSettingsRereadsLeft(); n != 0 {
		t.Errorf("%d left after one held read; want 0", n)
	}
}

// TestSlowKeyDeletesAfterRead_HoldsOnlyADeleteAfterTheRequestsRead: an
// armed count of deletes of the key table wait before they run when their
// request has read the table before (a waiting delete gives up with its
// context), and nothing else does: a delete before the read (a claim's
// first statement), one of another request, of the lab's purge or of a
// context no request made, the read itself, an update after it, a delete
// once the count is spent. A fault that held a claim's first delete would
// spend its count before any retry reads a lease.
func TestSlowKeyDeletesAfterRead_HoldsOnlyADeleteAfterTheRequestsRead(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	const del = `DELETE FROM idempotency_keys WHERE customer = ? AND key = ?`
	s.SlowKeyDeletesAfterRead(2)
	taker, other := fault.WithRequest(gone), fault.WithRequest(gone)
	for _, st := range []struct {
		ctx   context.Context
		query string
	}{
		{taker, del},
		{taker, `SELECT lease_expires_at FROM idempotency_keys WHERE id = ?`},
		{taker, `UPDATE idempotency_keys SET lease_owner = ? WHERE id = ?`},
		{other, del},
		{fault.LabRead(taker), del},
		{gone, del},
	} {
		if err := s.BeforeStatement(st.ctx, st.query); err != nil {
			t.Errorf("%s: %v; want it run at once", st.query, err)
		}
	}
	for range 2 {
		if err := s.BeforeStatement(taker, "\n\t\tdelete from IDEMPOTENCY_KEYS where id = ?"); !errors.Is(err, context.Canceled) {
			t.Errorf("a delete of the key table after the request read it, while armed: %v; want it held, and given up with its context", err)
		}
	}
	if n := s.SlowKeyDeletesAfterReadLeft(); n != 0 {
		t.Errorf("%d left after two held deletes; want 0", n)
	}
	if err := s.BeforeStatement(taker, del); err != nil {
		t.Errorf("a delete after the read once the count is spent: %v; want it run at once", err)
	}
}

// TestSlowBegins_HoldsOnlyTheArmedBegins: an armed count of
// transactions wait before they begin (a waiting one gives up with its
// context), and once the count is spent a transaction begins at once. A
// fault that held nothing would leave a look in a statement of its own
// and the transaction that writes after it without a window on SQLite.
func TestSlowBegins_HoldsOnlyTheArmedBegins(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.BeforeBegin(gone); err != nil {
		t.Errorf("a begin with nothing armed: %v; want it at once", err)
	}
	s.SlowBegins(2)
	for i := range 2 {
		if err := s.BeforeBegin(gone); !errors.Is(err, context.Canceled) {
			t.Errorf("begin %d while armed: %v; want it held, and given up with its context", i+1, err)
		}
	}
	if n := s.SlowBeginsLeft(); n != 0 {
		t.Errorf("%d left after two held begins; want 0", n)
	}
	if err := s.BeforeBegin(gone); err != nil {
		t.Errorf("a begin once the count is spent: %v; want it at once", err)
	}
}

// TestFailBegins_RefusesOnlyTheArmedBeginsOfRequests: an armed count of
// transactions begun for a request are refused (ErrBeginRefused), the
// lab's own and the relay's begin and spend nothing, and once the count
// is spent a transaction begins. A fault that refused nothing would leave
// the answer to a business transaction that cannot begin unseen.
func TestFailBegins_RefusesOnlyTheArmedBeginsOfRequests(t *testing.T) {
	var s fault.Store
	ctx := context.Background()
	if err := s.BeforeBegin(ctx); err != nil {
		t.Errorf("a begin with nothing armed: %v; want it to begin", err)
	}
	s.FailBegins(2)
	for _, spared := range []context.Context{fault.LabRead(ctx), fault.Relaying(ctx)} {
		if err := s.BeforeBegin(spared); err != nil {
			t.Errorf("the lab's or the relay's begin while armed: %v; want it to begin", err)
		}
	}
	for i := range 2 {
		if err := s.BeforeBegin(ctx); !errors.Is(err, fault.ErrBeginRefused) {
			t.Errorf("begin %d while armed: %v; want %v", i+1, err, fault.ErrBeginRefused)
		}
	}
	if n := s.FailedBeginsLeft(); n != 0 {
		t.Errorf("%d left after two refused begins; want 0", n)
	}
	if err := s.BeforeBegin(ctx); err != nil {
		t.Errorf("a begin once the count is spent: %v; want it to begin", err)
	}
}

// TestSlowKeyUpdates_HoldsOnlyTheArmedUpdatesOfTheKeyTable: an armed
// count of statements that update idempotency_keys, however spelled,
// wait before they run (a waiting one gives up with its context), and
// nothing else does: a read of the table (one that locks its rows too),
// an insert, an upsert or a delete of its rows, an update of another
// table, one whose name begins with it, a comment that names it, an
// update once the count is spent. A fault that missed a spelling would
// leave a takeover's two statements without a window; one that held the
// claims' inserts would spend its count before any retry reads a lease.
func TestSlowKeyUpdates_HoldsOnlyTheArmedUpdatesOfTheKeyTable(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	s.SlowKeyUpdates(4)
	for _, q := range []string{
		`SELECT lease_expires_at FROM idempotency_keys WHERE id = ?`,
		`SELECT id FROM idempotency_keys WHERE id = $1 FOR UPDATE`,
		`INSERT INTO idempotency_keys (key, state) VALUES (?, 'in_progress')`,
		`INSERT INTO idempotency_keys (key) VALUES ($1) ON CONFLICT (key) DO UPDATE SET key = excluded.key`,
		`DELETE FROM idempotency_keys WHERE id = ?`,
		`UPDATE accounts SET balance = balance - ? WHERE id = ?`,
		`UPDATE idempotency_keys_archive SET state = 'expired'`,
		"-- then update idempotency_keys\nUPDATE accounts SET balance = 1",
	} {
		if err := s.BeforeStatement(gone, q); err != nil {
			t.Errorf("%q: %v; want it run at once", q, err)
		}
	}
	for _, q := range []string{
		`UPDATE idempotency_keys SET lease_owner = ?, lease_expires_at = ? WHERE id = ?`,
		"\n\t\tUPDATE \"public\".\"idempotency_keys\"\n set lease_owner = $1",
		`update or rollback IDEMPOTENCY_KEYS set state = 'completed' where id = ?`,
		`WITH expired AS (SELECT 1) UPDATE /* the takeover */ idempotency_keys SET lease_owner = ?`,
	} {
		if err := s.BeforeStatement(gone, q); !errors.Is(err, context.Canceled) {
			t.Errorf("%q while armed: %v; want it held, and given up with its context", q, err)
		}
	}
	if n := s.SlowKeyUpdatesLeft(); n != 0 {
		t.Errorf("%d left after four held updates; want 0", n)
	}
	if err := s.BeforeStatement(gone, `UPDATE idempotency_keys SET lease_owner = ?`); err != nil {
		t.Errorf("an update of the key table once the count is spent: %v; want it run at once", err)
	}
}

// keyReads are statements that read idempotency_keys, spelled in several
// ways, and notKeyReads statements that do not: an insert, a delete or an
// update of the table, a read of another table, a comment that names it.
var (
	keyReads = []string{
		`SELECT fingerprint, state FROM idempotency_keys WHERE key = ?`,
		"\n\t\tselect id\n from \"public\".\"idempotency_keys\" where key = $1 FOR UPDATE",
		`/* the claim */ SELECT k.state FROM IDEMPOTENCY_KEYS AS k WHERE k.key = ?`,
	}
	notKeyReads = []string{
		`INSERT INTO idempotency_keys (key, state) VALUES (?, 'in_progress') RETURNING id`,
		`DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress'`,
		`UPDATE idempotency_keys SET state = 'completed' WHERE id = ?`,
		`SELECT balance FROM accounts WHERE id = ?`,
		`SELECT state FROM idempotency_keys_archive WHERE key = ?`,
		"-- then select from idempotency_keys\nSELECT 1",
	}
)

// TestSlowKeyReads_HoldsOnlyTheArmedReadsOfTheKeyTable: an armed count
// of statements that read idempotency_keys, however spelled, wait before
// they run, and nothing else does: the lab's own reads, an insert, a
// delete or an update of the table, a read of another table, a comment
// that names it, a read once the count is spent. One that held the
// lab's reads, or the claims' inserts, would spend its count before the
// retry's read.
func TestSlowKeyReads_HoldsOnlyTheArmedReadsOfTheKeyTable(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	s.SlowKeyReads(3)
	if err := s.BeforeStatement(fault.LabRead(gone), `SELECT rowid AS rowid, * FROM idempotency_keys`); err != nil {
		t.Errorf("the lab's read of the key table: %v; want it run at once", err)
	}
	for _, q := range notKeyReads {
		if err := s.BeforeStatement(gone, q); err != nil {
			t.Errorf("%q: %v; want it run at once", q, err)
		}
	}
	for _, q := range keyReads {
		if err := s.BeforeStatement(gone, q); !errors.Is(err, context.Canceled) {
			t.Errorf("%q while armed: %v; want it held, and given up with its context", q, err)
		}
	}
	if n := s.SlowKeyReadsLeft(); n != 0 {
		t.Errorf("%d left after three held reads; want 0", n)
	}
	if err := s.BeforeStatement(gone, `SELECT state FROM idempotency_keys WHERE key = ?`); err != nil {
		t.Errorf("a read of the key table once the count is spent: %v; want it run at once", err)
	}
}

// TestFailKeyReads_RefusesOnlyTheArmedReadsOfTheKeyTable: an armed count
// of statements that read idempotency_keys, however spelled, are refused,
// and nothing else is: the lab's own reads, an insert, a delete or an
// update of the table, a read of another table, a comment that names it,
// a read once the count is spent. One that refused the lab's reads, or
// the claims' inserts, would spend its count before the retry's read.
func TestFailKeyReads_RefusesOnlyTheArmedReadsOfTheKeyTable(t *testing.T) {
	var s fault.Store
	ctx := context.Background()
	s.FailKeyReads(3)
	if err := s.BeforeStatement(fault.LabRead(ctx), `SELECT rowid AS rowid, * FROM idempotency_keys`); err != nil {
		t.Errorf("the lab's read of the key table: %v; want it run", err)
	}
	for _, q := range notKeyReads {
		if err := s.BeforeStatement(ctx, q); err != nil {
			t.Errorf("%q: %v; want it run", q, err)
		}
	}
	for _, q := range keyReads {
		if err := s.BeforeStatement(ctx, q); !errors.Is(err, fault.ErrKeyReadRefused) {
			t.Errorf("%q while armed: %v; want %v", q, err, fault.ErrKeyReadRefused)
		}
	}
	if n := s.FailedKeyReadsLeft(); n != 0 {
		t.Errorf("%d left after three refused reads; want 0", n)
	}
	if err := s.BeforeStatement(ctx, `SELECT state FROM idempotency_keys WHERE key = ?`); err != nil {
		t.Errorf("a read of the key table once the count is spent: %v; want it run", err)
	}
}

// TestSlowKeyDeletes_HoldOnlyTheArmedDeletesOfTheKeyTable: an armed
// count of statements that delete rows of idempotency_keys, however
// spelled, wait before they run, and nothing else does: the lab's own
// purges, an insert, a read or an update of the table, a delete from
// another table, a comment that names it, a delete once the count is
// spent. One that held the lab's purges would spend its count before the
// claims' deletes.
func TestSlowKeyDeletes_HoldOnlyTheArmedDeletesOfTheKeyTable(t *testing.T) {
	var s fault.Store
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	s.SlowKeyDeletes(2)
	if err := s.BeforeStatement(fault.LabRead(gone), `DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`); err != nil {
		t.Errorf("the lab's purge of the key table: %v; want it run at once", err)
	}
	for _, q := range []string{
		`INSERT INTO idempotency_keys (key, state) VALUES (?, 'in_progress') RETURNING id`,
		`SELECT state, completed_at FROM idempotency_keys WHERE key = ?`,
		`UPDATE idempotency_keys SET state = 'completed' WHERE id = ?`,
		`DELETE FROM idempotency_keys_archive WHERE key = ?`,
		"-- then delete from idempotency_keys\nSELECT 1",
	} {
		if err := s.BeforeStatement(gone, q); err != nil {
			t.Errorf("%q: %v; want it run at once", q, err)
		}
	}
	for _, q := range []string{
		`DELETE FROM idempotency_keys WHERE key = ?`,
		"\n\t\tdelete from \"public\".\"IDEMPOTENCY_KEYS\" where key = $1",
	} {
		if err := s.BeforeStatement(gone, q); !errors.Is(err, context.Canceled) {
			t.Errorf("%q while armed: %v; want it held, and given up with its context", q, err)
		}
	}
	if n := s.SlowKeyDeletesLeft(); n != 0 {
		t.Errorf("%d left after two held deletes; want 0", n)
	}
	if err := s.BeforeStatement(gone, `DELETE FROM idempotency_keys WHERE key = ?`); err != nil {
		t.Errorf("a delete from the key table once the count is spent: %v; want it run at once", err)
	}
}

// TestSlowCommits_HoldOnlyTransactionsThatMovedMoney: an armed count is
// spent only by the commits of transactions that carried a business
// write, each held CommitDelay; a commit of any other transaction, one
// once the count is spent, and one once the fault is disarmed, goes at
// once. A fault that held every commit would hold up the claims and the
// refusals too; one that held a transaction that moved money whether or
// not a firing was left would hold every one of them for ever after. The
// commits are held on a synctest bubble's clock, which moves only while
// everything in the bubble waits: a hold moves it by CommitDelay exactly,
// a commit let through at once not at all, however busy the machine.
func TestSlowCommits_HoldOnlyTransactionsThatMovedMoney(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		held := func(business bool) time.Duration { return commitHeld(&s, business) }
		s.SlowCommits(1)
		if d := held(false); d != 0 {
			t.Errorf("a commit that moved no money, armed, was held %v; want it at once", d)
		}
		if n := s.SlowCommitsLeft(); n != 1 {
			t.Fatalf("%d left after a commit that moved no money; want 1", n)
		}
		if d := held(true); d != fault.CommitDelay {
			t.Errorf("the armed commit was held %v; want %v", d, fault.CommitDelay)
		}
		if n := s.SlowCommitsLeft(); n != 0 {
			t.Errorf("%d left after the armed commit; want 0", n)
		}
		if d := held(true); d != 0 {
			t.Errorf("a commit that moved money once the count is spent was held %v; want it at once", d)
		}
		s.SlowCommits(1)
		s.SlowCommits(0)
		if d := held(true); d != 0 {
			t.Errorf("a commit that moved money once the fault is disarmed (SlowCommits(0)) was held %v; want it at once", d)
		}
	})
}

// commitHeld is how long s held up a COMMIT of a transaction that moved
// money (business) or not, on the clock of the synctest bubble it runs in.
func commitHeld(s *fault.Store, business bool) time.Duration {
	start := time.Now()
	s.BeforeCommit(business)
	return time.Since(start)
}

// TestHoldCommits_HoldUntilReleased: the armed commit of a transaction
// that moved money waits until the fault is disarmed, however long that
// takes below HeldCommitMax, and HeldCommitMax at most; a commit that
// moved no money, one once the count is spent, goes at once. A fault held
// for a fixed time would let the lab's held row commit before a relay
// pass read the rows beside it on a slow machine; one that missed the
// release would hold every such commit HeldCommitMax. Held on a synctest
// bubble's clock, as TestSlowCommits_HoldOnlyTransactionsThatMovedMoney.
func TestHoldCommits_HoldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		held := func(business bool) time.Duration { return commitHeld(&s, business) }
		s.HoldCommits(1)
		if d := held(false); d != 0 {
			t.Errorf("a commit that moved no money, armed, was held %v; want it at once", d)
		}
		const wait = 3 * time.Second
		done := make(chan time.Duration)
		go func() { done <- held(true) }()
		time.Sleep(wait)
		synctest.Wait()
		select {
		case d := <-done:
			t.Fatalf("the armed commit went after %v, before the fault was disarmed", d)
		default:
		}
		if n := s.HeldCommitsLeft(); n != 0 {
			t.Errorf("%d left while the armed commit is held; want 0", n)
		}
		s.HoldCommits(0)
		if d := <-done; d != wait {
			t.Errorf("the armed commit was held %v; want it let go when the fault was disarmed, %v", d, wait)
		}
		if d := held(true); d != 0 {
			t.Errorf("a commit that moved money once the count is spent was held %v; want it at once", d)
		}
		s.HoldCommits(1)
		if d := held(true); d != fault.HeldCommitMax {
			t.Errorf("an armed commit never released was held %v; want %v", d, fault.HeldCommitMax)
		}
		s.HoldCommits(0)
	})
}

// statementHeld is how long s's faults hold up q, run under ctx, before
// it runs, and their error.
func statementHeld(s *fault.Store, ctx context.Context, q string) (time.Duration, error) {
	start := time.Now()
	err := s.BeforeStatement(ctx, q)
	return time.Since(start), err
}

// heldUntilDisarmed runs run, a statement a held fault was armed once
// for, and checks on a synctest bubble that it waits until the fault is
// disarmed, its count spent meanwhile (left), and runs then: held as long
// as the check waited. what names the statement in the failures.
func heldUntilDisarmed(t *testing.T, what string, left func() int64, arm func(int64), run func() time.Duration) {
	t.Helper()
	const wait = 2 * time.Second
	done := make(chan time.Duration)
	go func() { done <- run() }()
	time.Sleep(wait)
	synctest.Wait()
	select {
	case d := <-done:
		t.Fatalf("the armed %s ran after %v, before the fault was disarmed", what, d)
	default:
	}
	if n := left(); n != 0 {
		t.Errorf("%d left while the armed %s is held; want 0", n, what)
	}
	arm(0)
	if d := <-done; d != wait {
		t.Errorf("the armed %s was held %v; want it let go when the fault was disarmed, %v", what, d, wait)
	}
}

// TestHoldKeyPurges_HoldUntilReleased: an armed delete of the key table
// by the lab's purge (LabRead) waits, before it runs, until the fault is
// disarmed, and then runs; the purge's read runs at once, and so does a
// stage's own delete of the table (a claim forgetting an expired key);
// once the count is spent, nothing waits. A fault that held the claims'
// deletes would hold the retry the round sends, not the purge.
func TestHoldKeyPurges_HoldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		lab := fault.LabRead(context.Background())
		held := func(ctx context.Context, q string) (time.Duration, error) { return statementHeld(&s, ctx, q) }
		const purge = `DELETE FROM idempotency_keys WHERE customer = ? AND key = ?`
		s.HoldKeyPurges(1)
		if d, err := held(lab, `SELECT customer, key FROM idempotency_keys WHERE state = 'completed'`); d != 0 || err != nil {
			t.Errorf("the purge's read of the key table, armed, was held %v (%v); want it at once", d, err)
		}
		if d, err := held(context.Background(), purge); d != 0 || err != nil {
			t.Errorf("a stage's own delete of the key table, armed, was held %v (%v); want it at once", d, err)
		}
		heldUntilDisarmed(t, "delete", s.HeldKeyPurgesLeft, s.HoldKeyPurges, func() time.Duration {
			d, _ := held(lab, purge)
			return d
		})
		if d, err := held(lab, purge); d != 0 || err != nil {
			t.Errorf("a purge's delete once the count is spent was held %v (%v); want it at once", d, err)
		}
	})
}

// TestHoldKeyDeletes_HoldUntilReleased: an armed delete of the key table
// by the stage (a release of a key) waits, before it runs, until the fault
// is disarmed, and then runs; a read of the lease owner runs at once, and
// so does a delete by the lab's own purge (LabRead); once the count is
// spent, nothing waits. A fault that held the lab's purges would spend its
// count on the clock's move, before the original releases its key.
func TestHoldKeyDeletes_HoldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		held := func(ctx context.Context, q string) (time.Duration, error) { return statementHeld(&s, ctx, q) }
		const release = `DELETE FROM idempotency_keys WHERE id = ? AND lease_owner = ?`
		s.HoldKeyDeletes(1)
		if d, err := held(context.Background(), `SELECT lease_owner FROM idempotency_keys WHERE id = ?`); d != 0 || err != nil {
			t.Errorf("a read of the lease owner, armed, was held %v (%v); want it at once", d, err)
		}
		if d, err := held(fault.LabRead(context.Background()), `DELETE FROM idempotency_keys WHERE state = 'completed'`); d != 0 || err != nil {
			t.Errorf("the lab's purge, armed, was held %v (%v); want it at once", d, err)
		}
		heldUntilDisarmed(t, "delete", s.HeldKeyDeletesLeft, s.HoldKeyDeletes, func() time.Duration {
			d, _ := held(context.Background(), release)
			return d
		})
		if d, err := held(context.Background(), release); d != 0 || err != nil {
			t.Errorf("a delete once the count is spent was held %v (%v); want it at once", d, err)
		}
	})
}

// TestHoldKeyUpdates_HoldUntilReleased: an armed update of the key table
// waits, before it runs, until the fault is disarmed, and then runs; a
// statement that does not update the table (a read of the lease) runs at
// once; once the count is spent, nothing waits; a held update whose
// context ends gives up with it, and one never let go runs once
// HeldStatementMax has passed. A fault held for a fixed time would let
// an original's completion run before the retry took its key over, on a
// slow machine; one that missed the release would hold it
// HeldStatementMax; one with no cap would hold a statement the check
// never let go (a check stopped, its disarm lost) for good.
func TestHoldKeyUpdates_HoldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		ctx := context.Background()
		held := func(ctx context.Context, q string) (time.Duration, error) { return statementHeld(&s, ctx, q) }
		const update = `UPDATE idempotency_keys SET state = 'completed' WHERE id = ?`
		s.HoldKeyUpdates(1)
		if d, err := held(ctx, `SELECT lease_owner FROM idempotency_keys WHERE id = ?`); d != 0 || err != nil {
			t.Errorf("a read of the key table, armed, was held %v (%v); want it at once", d, err)
		}
		heldUntilDisarmed(t, "update", s.HeldKeyUpdatesLeft, s.HoldKeyUpdates, func() time.Duration {
			d, _ := held(ctx, update)
			return d
		})
		if d, err := held(ctx, update); d != 0 || err != nil {
			t.Errorf("an update once the count is spent was held %v (%v); want it at once", d, err)
		}
		s.HoldKeyUpdates(1)
		gone, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if d, err := held(gone, update); d != time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a held update whose context ended: held %v, %v; want a second, and its context's error", d, err)
		}
		s.HoldKeyUpdates(1)
		if d, err := held(ctx, update); d != fault.HeldStatementMax || err != nil {
			t.Errorf("a held update never let go: held %v, %v; want the cap, %v, and no error", d, err, fault.HeldStatementMax)
		}
		s.HoldKeyUpdates(0)
	})
}

// TestHoldKeyCommits_HoldUntilReleased: an armed commit of a transaction
// that wrote the key table waits until the fault is disarmed, and then
// commits; unarmed, or once the count is spent, nothing waits; one never
// let go commits once HeldStatementMax has passed. A hold that missed
// the release would keep the claim's row locked, and the purge waiting
// for it, until the cap; one with no cap would hold a claim whose check
// stopped before it disarmed the fault for good.
func TestHoldKeyCommits_HoldUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s fault.Store
		held := func() time.Duration {
			start := time.Now()
			s.BeforeKeyCommit()
			return time.Since(start)
		}
		if d := held(); d != 0 {
			t.Errorf("a commit with the fault unarmed was held %v; want it at once", d)
		}
		s.HoldKeyCommits(1)
		heldUntilDisarmed(t, "commit", s.HeldKeyCommitsLeft, s.HoldKeyCommits, held)
		if d := held(); d != 0 {
			t.Errorf("a commit once the count is spent was held %v; want it at once", d)
		}
		s.HoldKeyCommits(1)
		if d := held(); d != fault.HeldStatementMax {
			t.Errorf("an armed commit never let go was held %v; want the cap, %v", d, fault.HeldStatementMax)
		}
		s.HoldKeyCommits(0)
	})
}

// TestWritesKeys_TellsTheStagesWritesOfTheKeyTable: a statement of the
// stage's that inserts, updates or deletes rows of the key table, however
// spelled, is a write of it, and its transaction's commit is the one
// held-key-commit holds; a read of the table (a SELECT … FOR UPDATE
// too), a write of another table, and the lab's own purge (LabRead) are
// not. A match that took a read for a write would hold a transaction
// that claimed nothing; one that took the lab's purge would hold the
// purge the round runs beside the claim.
func TestWritesKeys_TellsTheStagesWritesOfTheKeyTable(t *testing.T) {
	stage, lab := context.Background(), fault.LabRead(context.Background())
	for _, c := range []struct {
		ctx  context.Context
		q    string
		want bool
	}{
		{stage, `INSERT INTO idempotency_keys (customer, key, state) VALUES ($1, $2, 'in_progress') RETURNING id`, true},
		{stage, "update idempotency_keys\n\tset state = 'in_progress' where id = $1 and state = 'completed'", true},
		{stage, `DELETE FROM "idempotency_keys" WHERE customer = $1 AND key = $2 AND state = 'completed'`, true},
		{stage, `INSERT INTO public.idempotency_keys (key) VALUES ($1) ON CONFLICT DO NOTHING`, true},
		{stage, `SELECT id, state FROM idempotency_keys WHERE key = $1 FOR UPDATE`, false},
		{stage, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, false},
		{stage, `INSERT INTO transfers (id, amount) VALUES ($1, $2) -- idempotency_keys`, false},
		{lab, `DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= $1`, false},
	} {
		if got := fault.WritesKeys(c.ctx, c.q); got != c.want {
			t.Errorf("WritesKeys(%q), the lab's own %v: %v; want %v", c.q, c.ctx == lab, got, c.want)
		}
	}
}

// TestWritesOutbox_TellsAWriteOfTheOutboxByItsStatement: the statements
// that insert, update, delete or merge outbox rows, however spelled
// (quoted, in a schema, with comments), are writes of the outbox; a read
// of it, a write of another table whose name begins with it, or a comment
// that names it, is not. It catches a match on the table's name alone (a
// SELECT would count), one that takes outbox_archive for it, and one that
// misses a write a PostgreSQL relay may spell otherwise.
func TestWritesOutbox_TellsAWriteOfTheOutboxByItsStatement(t *testing.T) {
	for q, want := range map[string]bool{
		`INSERT INTO outbox (transfer_id, core_key) VALUES ($1, $2)`:          true,
		"update outbox\n\tset sent_at = ? where id in (?, ?)":                 true,
		`DELETE FROM "outbox" WHERE id = 1`:                                   true,
		`WITH done AS (SELECT 1) UPDATE outbox SET sent_at = now()`:           true,
		`INSERT INTO outbox(transfer_id) VALUES (?)`:                          true,
		`UPDATE public.outbox SET sent_at = now() WHERE id = $1 RETURNING id`: true,
		`update "public"."outbox" set sent_at = now()`:                        true,
		`UPDATE /* the relay's mark */ outbox SET sent_at = now()`:            true,
		"UPDATE -- the relay's mark\n outbox SET sent_at = now()":             true,
		`DELETE FROM outbox;`: true,
		`MERGE INTO outbox o USING sent s ON o.id = s.id WHEN MATCHED THEN DELETE`: true,
		`SELECT id, core_key FROM outbox WHERE sent_at IS NULL`:                    false,
		`SELECT id FROM outbox WHERE sent_at IS NULL FOR UPDATE SKIP LOCKED`:       false,
		`UPDATE outbox_archive SET sent_at = now()`:                                false,
		`UPDATE accounts SET balance = balance - 1 WHERE id IN (SELECT 1)`:         false,
		"-- then update outbox\nUPDATE accounts SET balance = 1":                   false,
		`UPDATE accounts /* not update outbox */ SET balance = 1`:                  false,
	} {
		if got := fault.WritesOutbox(q); got != want {
			t.Errorf("fault.WritesOutbox(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestFailOutboxWrites_RefusesOnlyTheArmedOutboxInserts: an armed count
// of statements that insert into the outbox, however spelled (REPLACE
// INTO, a MERGE that inserts), fail with ErrOutboxWriteRefused, and
// nothing else does: a read of the outbox, the relay's marks (a MERGE
// that only marks too), an insert into another table whose name begins
// with it, an outbox insert once the count is spent. A spelling missed
// would let a stage's transfer through with the fault still armed; a
// fault that refused the marks would hold rows owed for ever; one that
// refused every statement would fail the transfer before its money and
// its outbox row.
func TestFailOutboxWrites_RefusesOnlyTheArmedOutboxInserts(t *testing.T) {
	var s fault.Store
	ctx := context.Background()
	s.FailOutboxWrites(5)
	for _, q := range []string{
		`SELECT id, core_key FROM outbox WHERE sent_at IS NULL`,
		`UPDATE outbox SET sent_at = ? WHERE id IN (?, ?)`,
		`MERGE INTO outbox o USING sent s ON o.id = s.id WHEN MATCHED THEN UPDATE SET sent_at = now()`,
		`INSERT INTO outbox_archive (id) VALUES (?)`,
		`INSERT INTO transfers (id, amount) VALUES (?, ?)`,
		"-- then insert into outbox\nUPDATE accounts SET balance = 1",
	} {
		if err := s.BeforeStatement(ctx, q); err != nil {
			t.Errorf("%q: %v; want it run", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO outbox (transfer_id, core_key) VALUES (?, ?)`,
		"insert into \"public\".\"outbox\"(transfer_id)\n values ($1)",
		`INSERT OR IGNORE INTO outbox (transfer_id) VALUES (?)`,
		`REPLACE INTO outbox (transfer_id, core_key) VALUES (?, ?)`,
		"MERGE INTO outbox o USING (VALUES ($1)) v (id) ON o.transfer_id = v.id\nWHEN NOT MATCHED THEN INSERT (transfer_id) VALUES (v.id)",
	} {
		if err := s.BeforeStatement(ctx, q); !errors.Is(err, fault.ErrOutboxWriteRefused) {
			t.Errorf("%q while armed: %v; want %v", q, err, fault.ErrOutboxWriteRefused)
		}
	}
	if n := s.OutboxWriteFailuresLeft(); n != 0 {
		t.Errorf("%d left after five refused inserts; want 0", n)
	}
	if err := s.BeforeStatement(ctx, `INSERT INTO outbox (transfer_id) VALUES (?)`); err != nil {
		t.Errorf("an outbox insert once the count is spent: %v; want it run", err)
	}
}

// TestFailOutboxSettles_RefusesOnlyTheArmedOutboxUpdates: an armed count
// of the relay's statements (a Relaying context) that update outbox rows,
// its marks and dead letters, fail with ErrOutboxSettleRefused, and
// nothing else does: the relay's read of the outbox, an insert into it,
// an update of another table whose name begins with it, an outbox update
// once the count is spent, and an outbox update that is not the relay's
// however it is run: a customer's request's (a transfer that writes its
// row in two statements), the same on a context its handler made from
// nothing (context.Background()), the lab's redrive of a dead letter. A
// fault that refused those would fail a transfer, or the lab, not the
// relay.
func TestFailOutboxSettles_RefusesOnlyTheArmedOutboxUpdates(t *testing.T) {
	var s fault.Store
	ctx := context.Background()
	relay := fault.Relaying(ctx)
	s.FailOutboxSettles(3)
	for _, q := range []string{
		`SELECT id, core_key FROM outbox WHERE sent_at IS NULL`,
		`INSERT INTO outbox (transfer_id, core_key) VALUES (?, ?)`,
		`UPDATE outbox_archive SET sent_at = ?`,
		"-- update outbox\nUPDATE accounts SET balance = 1",
	} {
		if err := s.BeforeStatement(relay, q); err != nil {
			t.Errorf("%q: %v; want it run", q, err)
		}
	}
	for name, ctx := range map[string]context.Context{
		"a customer's request's":                  fault.WithRequest(ctx),
		"a handler's, on context.Background()":    ctx,
		"the lab's (a redrive, or a LabRead one)": fault.LabRead(ctx),
	} {
		if err := s.BeforeStatement(ctx, `UPDATE outbox SET dead_at = NULL, sent_at = NULL WHERE transfer_id = ?`); err != nil {
			t.Errorf("an outbox update of %s: %v; want it run", name, err)
		}
	}
	for _, q := range []string{
		`UPDATE outbox SET sent_at = ? WHERE id IN (?, ?)`,
		"update \"public\".\"outbox\"\n set dead_at = $1 where id = $2",
		`UPDATE OR IGNORE outbox SET sent_at = ? WHERE id = ?`,
	} {
		if err := s.BeforeStatement(relay, q); !errors.Is(err, fault.ErrOutboxSettleRefused) {
			t.Errorf("%q while armed: %v; want %v", q, err, fault.ErrOutboxSettleRefused)
		}
	}
	if n := s.OutboxSettleFailuresLeft(); n != 0 {
		t.Errorf("%d left after three refused updates; want 0", n)
	}
	if err := s.BeforeStatement(relay, `UPDATE outbox SET sent_at = ? WHERE id = ?`); err != nil {
		t.Errorf("an outbox update once the count is spent: %v; want it run", err)
	}
}

// TestFailReferenceWrites_RefusesOnlyTheArmedReferenceInserts: an armed
// count of statements that insert into transfer_references, however
// spelled, fail with ErrReferenceWriteRefused, and nothing else does: the
// lookup of the transfer that holds a reference, the transfer's own
// insert, an outbox insert, a reference insert once the count is spent. A
// fault that refused the lookup would answer a duplicate with a 5xx, not
// with the failure of the insert the check is about.
func TestFailReferenceWrites_RefusesOnlyTheArmedReferenceInserts(t *testing.T) {
	var s fault.Store
	ctx := context.Background()
	s.FailReferenceWrites(3)
	for _, q := range []string{
		`SELECT transfer_id FROM transfer_references WHERE customer = ? AND reference = ?`,
		`INSERT INTO transfers (id, reference) VALUES (?, ?)`,
		`INSERT INTO outbox (transfer_id) VALUES (?)`,
		`INSERT INTO transfer_references_archive (reference) VALUES (?)`,
	} {
		if err := s.BeforeStatement(ctx, q); err != nil {
			t.Errorf("%q: %v; want it run", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO transfer_references (customer, reference, transfer_id, created_at) VALUES (?, ?, ?, ?)`,
		"insert into \"public\".\"transfer_references\"(customer, reference)\n values ($1, $2)",
		`INSERT OR IGNORE INTO transfer_references (customer, reference) VALUES (?, ?)`,
	} {
		if err := s.BeforeStatement(ctx, q); !errors.Is(err, fault.ErrReferenceWriteRefused) {
			t.Errorf("%q while armed: %v; want %v", q, err, fault.ErrReferenceWriteRefused)
		}
	}
	if err := s.BeforeStatement(ctx, `INSERT INTO transfer_references (customer, reference) VALUES (?, ?)`); err != nil {
		t.Errorf("a reference insert once the count is spent: %v; want it run", err)
	}
}

// TestHold_AContextOverWhenTheWaitEndsIsReported: a hold whose context
// has ended by the time its wait does reports the context's end, every
// time, not whichever of the two it happened to see first (a statement
// held on a busy machine ran on a context already over, and a test that
// wants it held past its context's end flaked).
func TestHold_AContextOverWhenTheWaitEndsIsReported(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		if err := fault.Hold(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Hold on a context already over, with no wait: %v; want %v", err, context.Canceled)
		}
	}
	if err := fault.Hold(context.Background(), 0); err != nil {
		t.Errorf("Hold with no wait on a live context: %v; want nil", err)
	}
}

// lateContext is a context whose deadline has passed but which has not
// yet been told so, as a context is between its deadline and the run of
// its own timer on a busy machine.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestHold_APassedDeadlineIsReported: a hold that wakes after its
// context's deadline reports the deadline exceeded, though the context's
// own timer has not run yet. Before, it returned nil on such a machine,
// and the transaction it held began on a context already over.
func TestHold_APassedDeadlineIsReported(t *testing.T) {
	if err := fault.Hold(lateContext{context.Background()}, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hold past its context's deadline: %v; want %v", err, context.DeadlineExceeded)
	}
}
