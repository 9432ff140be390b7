package fault

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrKeyStoreUnavailable is what a statement touching idempotency_keys
// returns while the store-unavailable fault is armed.
var ErrKeyStoreUnavailable = errors.New("key store unavailable (injected fault)")

// ErrOutboxWriteRefused is what an INSERT into the outbox returns while
// the fail-outbox-write fault is armed. The refusal comes from the
// connection, before the statement reaches the engine, as a driver's
// refusal of an argument it cannot encode would: the transaction stays
// usable on either engine. (A statement PostgreSQL itself refuses, a
// broken constraint say, aborts its transaction, and the COMMIT that
// follows rolls back; SQLite keeps the transaction open after most failed
// statements, a broken constraint among them, and the COMMIT keeps the
// rest, though a full disk or an I/O error may roll it back whole.)
var ErrOutboxWriteRefused = errors.New("outbox write refused (injected fault)")

// ErrReferenceWriteRefused is what an INSERT into transfer_references
// returns while the fail-reference-write fault is armed, refused by the
// connection as ErrOutboxWriteRefused is: the transaction stays usable on
// either engine.
var ErrReferenceWriteRefused = errors.New("reference write refused (injected fault)")

// ErrOutboxSettleRefused is what an UPDATE of the outbox returns while the
// fail-outbox-settle fault is armed: the relay's own database refuses the
// write that marks a row sent or sets it aside, as a full disk or a lock
// timeout would. As ErrOutboxWriteRefused, the refusal comes from the
// connection, before the engine sees the statement.
var ErrOutboxSettleRefused = errors.New("outbox settle refused (injected fault)")

// ErrCommitFailed is what a COMMIT returns while the fail-commit fault is
// armed: the transaction was rolled back instead, and nothing it did
// stays.
var ErrCommitFailed = errors.New("the COMMIT failed (injected fault); the transaction was rolled back")

// ErrCommitAnswerLost is what a COMMIT that went through returns while
// the commit-answer-lost fault is armed: the transaction committed, and
// its caller is told it failed, as when a connection drops between the
// database's commit and its answer.
var ErrCommitAnswerLost = errors.New("the COMMIT's answer was lost (injected fault); the transaction committed")

// ErrBeginRefused is what the BEGIN of a transaction that may write
// returns while the fail-begin fault is armed: the transaction never
// began, and nothing it would have done happened, as when the database
// takes no more connections or the write lock cannot be had in time.
var ErrBeginRefused = errors.New("the BEGIN was refused (injected fault); no transaction began")

// ErrKeyReadRefused is what a statement that reads idempotency_keys
// returns while the fail-key-read fault is armed: the connection refuses
// it before the engine sees it, as an internal error reading the row
// would (a lost connection, a statement timeout), and nothing was read.
var ErrKeyReadRefused = errors.New("the read of the key table failed (injected fault); nothing was read")

// KeyTable is the table the store-unavailable fault breaks, and whose row
// changes a database reports (see Store.OnKeyRowsChanged).
const KeyTable = "idempotency_keys"

// SettingsTable is the table of account settings, whose writes the
// slow-settings-write fault holds up.
const SettingsTable = "account_settings"

// OutboxTable is the table of the postings owed to the core ledger (stage
// 9), whose committed writes a database counts (see Store.OutboxCommits).
const OutboxTable = "outbox"

// ReferenceTable is the table of the references a stage holds (stage 8
// on), whose inserts the fail-reference-write fault refuses.
const ReferenceTable = "transfer_references"

// SettingsWriteDelay is how long the slow-settings-write fault holds up a
// write of the settings: long enough for every clerk released at once to
// read the settings before any of them writes.
const SettingsWriteDelay = 100 * time.Millisecond

// SettingsCommitDelay is how long the slow-settings-commit fault holds a
// write of the settings after it has run, before it commits: longer than
// the other clerks released with it take to start their own writes, which
// then read the settings while the held one's change is not yet theirs to
// see.
const SettingsCommitDelay = 100 * time.Millisecond

// SettingsRereadDelay is how long the slow-settings-reread fault holds up
// a read of the settings that follows a write of them in one request:
// longer than another clerk takes to read the version that write made,
// wait on the core and save over it, with its write held up as well.
const SettingsRereadDelay = 500 * time.Millisecond

// SettingsSecondReadDelay is how long the slow-settings-reread fault holds
// up a request's second read of the settings, one made with no write of
// them before it (a GET that reads the settings and their version apart):
// longer than a clerk released with that request takes to wait on the
// core, write and commit its save, each held up as well (about 300 ms),
// with room for a machine busy enough to stretch that twice over, so that
// the save lands between the two reads.
const SettingsSecondReadDelay = 1500 * time.Millisecond

// BeginDelay is how long the slow-begin fault holds up a transaction
// before it begins: clerks that leave the core within it of each other
// have all looked before the first of them starts the transaction that
// writes.
const BeginDelay = 100 * time.Millisecond

// HeldCommitMax is how long the held-commit fault holds up a transaction
// that moved money at most, if the fault is never disarmed.
const HeldCommitMax = 5 * time.Second

// HeldStatementMax is how long the faults that hold a statement of the key
// table (held-key-update, held-key-delete, held-key-purge), or the commit
// of a transaction that wrote it (held-key-commit), hold it up at
// most, if they are never disarmed: longer than a check waits, on a busy
// machine, for a retry to take the key over while the statement waits,
// so that the statement runs when the check lets it go, not before.
const HeldStatementMax = 30 * time.Second

// KeyUpdateDelay is how long the slow-key-update fault holds up a
// statement that updates a row of the key table: long enough for every
// retry released at once to read an expired lease before the first of
// them writes its takeover.
const KeyUpdateDelay = 100 * time.Millisecond

// KeyDeleteDelay is how long the slow-key-delete fault holds up a
// statement that deletes rows of the key table: long enough for every
// late retry released at once to read an expired key, and for one of
// them to forget it and claim it again, before the first delete runs.
const KeyDeleteDelay = 100 * time.Millisecond

// KeyReadDelay is how long the slow-key-read fault holds up a statement
// that reads the key table: longer than an original still waiting on a
// short core call takes to fail and give its key back.
const KeyReadDelay = 300 * time.Millisecond

// CommitDelay is how long the slow-commit fault holds up a transaction
// that moved money before its COMMIT: long enough for the clerks released
// at once whose transactions take no lock in common to have looked before
// any of them commits.
const CommitDelay = 100 * time.Millisecond

// Store holds the fault switches of one database and what it reports to
// lab mode, whichever engine the database runs on: each engine's
// connections call BeforeBegin before a transaction that may write begins,
// BeforeStatement before a statement, BeforeCommit before a COMMIT, and
// Committed once a transaction (or a statement outside one) has
// committed. The zero value injects nothing and reports to no one.
type Store struct {
	// afterBusinessCommit, when set, runs right after a transaction that
	// carried a business write (see MarkBusinessWrite) has committed.
	afterBusinessCommit atomic.Pointer[func()]
	// keyRowsChanged, when set, receives the row ids of idempotency_keys
	// rows that a committed transaction inserted, updated or deleted.
	keyRowsChanged atomic.Pointer[func(rowids []int64)]
	// keyRowsListening, when set, hears that the database stopped
	// reporting key-row changes (an error) or reports them again (nil).
	keyRowsListening atomic.Pointer[func(err error)]
	// commits counts the transactions committed (explicit ones and
	// statements outside one that wrote); outboxCommits those of them
	// that changed rows of the outbox table.
	commits, outboxCommits atomic.Int64
	// keyStoreFailures counts down the statements touching the key table that fail.
	keyStoreFailures Countdown
	// slowSettingsWrites counts down the writes of the settings held up.
	slowSettingsWrites Countdown
	// slowSettingsCommits counts down the writes of the settings held
	// before they commit.
	slowSettingsCommits Countdown
	// slowSettingsRereads counts down the reads of the settings held up
	// that follow a write of them in one request.
	slowSettingsRereads Countdown
	// looseSettingsWrite is the step (see steps) of the last write of the
	// settings sent in a context that carries no request and is not the
	// lab's, noted while rereads are armed.
	looseSettingsWrite atomic.Int64
	// outboxWriteFailures counts down the outbox INSERTs that fail.
	outboxWriteFailures Countdown
	// referenceWriteFailures counts down the reference INSERTs that fail.
	referenceWriteFailures Countdown
	// outboxSettleFailures counts down the outbox UPDATEs that fail.
	outboxSettleFailures Countdown
	// slowBegins counts down the write transactions held up before they begin.
	slowBegins Countdown
	// failedBegins counts down the write transactions refused as they begin.
	failedBegins Countdown
	// slowCommits counts down the transactions that moved money held up
	// before they commit.
	slowCommits Countdown
	// slowKeyUpdates counts down the updates of the key table held up.
	slowKeyUpdates Countdown
	// slowKeyDeletes counts down the deletes of the key table held up.
	slowKeyDeletes Countdown
	// slowKeyDeletesAfterRead counts down the deletes of the key table
	// held up that follow a read of it in one request.
	slowKeyDeletesAfterRead Countdown
	// slowKeyReads counts down the reads of the key table held up.
	slowKeyReads Countdown
	// failedKeyReads counts down the reads of the key table refused.
	failedKeyReads Countdown
	// commitAnswersLost counts down the commits of transactions that
	// moved money whose caller is told they failed.
	commitAnswersLost Countdown
	// failedCommits counts down the transactions that moved money rolled
	// back at their COMMIT.
	failedCommits Countdown
	// heldCommits counts down the transactions that moved money held at
	// their COMMIT until released.
	heldCommits held
	// heldKeyUpdates counts down the updates of the key table held, before
	// they run, until released.
	heldKeyUpdates held
	// heldKeyPurges counts down the deletes of the key table by the lab's
	// purges held, before they run, until released.
	heldKeyPurges held
	// heldKeyDeletes counts down the stage's own deletes of the key table
	// held, before they run, until released.
	heldKeyDeletes held
	// heldKeyCommits counts down the stage's transactions that wrote the
	// key table held at their COMMIT until released.
	heldKeyCommits held
}

// held is a countdown whose firings wait until it is disarmed: closing
// release lets them go. mu makes a firing and the channel it waits on one
// step, so that a release never misses a firing before it.
type held struct {
	mu      sync.Mutex
	n       Countdown
	release chan struct{}
}

// arm arms n firings; 0 disarms and lets every held one go.
func (h *held) arm(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n.Arm(n)
	if n == 0 && h.release != nil {
		close(h.release)
		h.release = nil
	}
}

// fire uses one firing, and returns the channel whose closing releases
// it, or nil if none was left.
func (h *held) fire() <-chan struct{} {
	if h.n.Left() <= 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.n.Fire() {
		return nil
	}
	if h.release == nil {
		h.release = make(chan struct{})
	}
	return h.release
}

// wait holds a firing up until release is closed, max has passed, or ctx
// ends.
func (h *held) wait(ctx context.Context, release <-chan struct{}, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-release:
	case <-t.C:
	case <-ctx.Done():
	}
}

// SlowSettingsWrites makes the next n statements that write the
// account_settings table wait SettingsWriteDelay before they run. A
// stage that reads the settings' version and writes later, in a
// statement of its own, then has a window that other clerks' writes land
// in, on any engine; one conditional UPDATE has none, however late it
// runs.
func (s *Store) SlowSettingsWrites(n int64) { s.slowSettingsWrites.Arm(n) }

// SlowSettingsWritesLeft reports how many settings writes will still be
// held up.
func (s *Store) SlowSettingsWritesLeft() int64 { return s.slowSettingsWrites.Left() }

// SlowSettingsCommits makes the next n writes of the account_settings
// table wait SettingsCommitDelay once they have run, before they commit,
// holding the row locks they took (see BeforeSettingsCommit): a write in
// a transaction waits at the transaction's COMMIT, and a write outside
// one runs, while the fault is armed, in a transaction of its own (see
// HoldsSettingsCommit). On PostgreSQL, at READ COMMITTED, the writes that
// start meanwhile read the settings as they were before the held one,
// and wait for its row lock: an UPDATE whose own WHERE names the version
// checks it again on the row the held one made, and matches nothing; one
// that compares a version it read otherwise (a subquery, an earlier
// statement of its transaction) compares the old one, and writes over
// the held change. On SQLite one write runs at a time: the others wait
// for the held one, or find it committed (a write outside a transaction
// has committed once it ran there, and holds its process's writer).
func (s *Store) SlowSettingsCommits(n int64) { s.slowSettingsCommits.Arm(n) }

// SlowSettingsCommitsLeft reports how many writes of the settings will
// still be held before they commit.
func (s *Store) SlowSettingsCommitsLeft() int64 { return s.slowSettingsCommits.Left() }

// HoldsSettingsCommit reports whether query writes the settings while the
// slow-settings-commit fault is armed: outside a transaction, an engine's
// connection runs it in a transaction of its own, and calls
// BeforeSettingsCommit before that transaction's COMMIT; inside one, it
// calls BeforeSettingsCommit before the transaction's.
func (s *Store) HoldsSettingsCommit(query string) bool {
	return s.slowSettingsCommits.Left() > 0 && writesSettings(query)
}

// BeforeSettingsCommit runs the fault armed on a transaction that wrote
// the settings, before its COMMIT: it holds the transaction up (see
// SlowSettingsCommits). A COMMIT takes no context, and once the caller has
// asked for it the answer must come, so the wait does not end early.
func (s *Store) BeforeSettingsCommit() {
	if s.slowSettingsCommits.Left() > 0 && s.slowSettingsCommits.Fire() {
		Hold(context.Background(), SettingsCommitDelay)
	}
}

// SlowSettingsRereads makes the next n statements that read the
// account_settings table wait before they run when they are sent in a
// request that has already sent a write of it (see writesSettings;
// whatever rows it matched: SettingsRereadDelay) or a read of it
// (SettingsSecondReadDelay), in a request begun while the fault was armed
// (the server notes a request's statements only then: see WithRequest),
// or in a context that carries no request and is not the lab's
// (SettingsRereadDelay). A write sent in such a context counts as one of
// every request begun before it (see holdReread). A stage that answers a
// save with what a read after its write finds then answers another
// clerk's save, which landed in between; one that answers what its write
// made has no such read to hold up. A GET that reads the settings and
// their version in two statements answers a clerk the settings from
// before a save that landed between them, under that save's ETag.
func (s *Store) SlowSettingsRereads(n int64) { s.slowSettingsRereads.Arm(n) }

// SlowSettingsRereadsLeft reports how many reads of the settings after a
// write or a read of them will still be held up.
func (s *Store) SlowSettingsRereadsLeft() int64 { return s.slowSettingsRereads.Left() }

// steps orders the beginnings of requests (see WithRequest) and the
// writes of the settings that no request carries: a request begun at a
// step before such a write may have sent it.
var steps atomic.Int64

// request is what the database notes about the statements of one
// request (see WithRequest).
type request struct {
	// begun is the step at which the request began.
	begun int64
	// wroteSettings is set once a statement of the request has written
	// the settings.
	wroteSettings atomic.Bool
	// readSettings is set once a statement of the request has read the
	// settings.
	readSettings atomic.Bool
	// readKeys is set once a statement of the request has read the key
	// table.
	readKeys atomic.Bool
}

type requestKey struct{}

// WithRequest returns a context for the statements of one request: the
// database notes in it when the request writes or reads the settings, so
// that the slow-settings-reread fault can hold up a read of them that
// follows, and
// when it reads the key table, so that the slow-key-delete-after-read
// fault can hold up a delete of the table that follows.
func WithRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestKey{}, &request{begun: steps.Add(1)})
}

// FailOutboxWrites makes the next n statements that insert into the
// outbox table fail with ErrOutboxWriteRefused, before they reach the
// engine, so the transaction they run in can still commit on either
// engine: a stage that drops the error commits the money without its
// outbox row, as one whose INSERT broke a constraint would on SQLite, or
// on PostgreSQL under a savepoint the code rolls back to (as
// labdb.Savepoint does). A prepared statement counts when it runs, not
// when it is prepared. The relay's marks (UPDATE) are spared.
func (s *Store) FailOutboxWrites(n int64) { s.outboxWriteFailures.Arm(n) }

// OutboxWriteFailuresLeft reports how many outbox INSERTs will still fail.
func (s *Store) OutboxWriteFailuresLeft() int64 { return s.outboxWriteFailures.Left() }

// FailReferenceWrites makes the next n statements that insert into the
// table of references fail with ErrReferenceWriteRefused, before they
// reach the engine, as FailOutboxWrites does the outbox's: a stage that
// drops the error commits the transfer without its reference, and the
// invoice can be paid again.
func (s *Store) FailReferenceWrites(n int64) { s.referenceWriteFailures.Arm(n) }

// ReferenceWriteFailuresLeft reports how many reference INSERTs will still fail.
func (s *Store) ReferenceWriteFailuresLeft() int64 { return s.referenceWriteFailures.Left() }

// FailOutboxSettles makes the next n statements of the stage's outbox
// relay (run with a Relaying context) that update rows of the outbox
// table, its marks and dead letters, fail with ErrOutboxSettleRefused,
// before they reach the engine. Every other statement is spared: a
// transfer's, whatever context its handler runs it with (one that writes
// its outbox row in two statements, an INSERT and an UPDATE, is not the
// relay), and the lab's, a dead letter sent again among them.
func (s *Store) FailOutboxSettles(n int64) { s.outboxSettleFailures.Arm(n) }

// OutboxSettleFailuresLeft reports how many outbox UPDATEs will still
// fail.
func (s *Store) OutboxSettleFailuresLeft() int64 { return s.outboxSettleFailures.Left() }

// SlowBegins makes the next n transactions that may write wait
// BeginDelay before they begin, before any lock is taken: a stage that
// looks for a row in a statement of its own and writes it later, in a
// transaction, then has a window other clerks' looks land in, on any
// engine and wherever the look is (before the core call or after it); a
// look inside the transaction that writes, on SQLite where that
// transaction holds the write lock from its BEGIN, or an INSERT a UNIQUE
// constraint decides, has none.
func (s *Store) SlowBegins(n int64) { s.slowBegins.Arm(n) }

// SlowBeginsLeft reports how many transactions will still be held up.
func (s *Store) SlowBeginsLeft() int64 { return s.slowBegins.Left() }

// FailBegins makes the next n transactions that may write, begun for a
// request of the stage's (the lab's own and the relay's are spared), fail
// as they begin (ErrBeginRefused), before any lock is taken: armed while
// a request waits on the core, once its key is claimed, it refuses the
// transaction that would move the money, and a stage that does not give
// the key back then, or answers as if the money moved, is seen.
func (s *Store) FailBegins(n int64) { s.failedBegins.Arm(n) }

// FailedBeginsLeft reports how many transactions will still be refused as
// they begin.
func (s *Store) FailedBeginsLeft() int64 { return s.failedBegins.Left() }

// SlowCommits makes the next n transactions that carried a business
// write (see MarkBusinessWrite) wait CommitDelay before their COMMIT,
// holding every lock they took: on PostgreSQL, at READ COMMITTED, a stage
// that looks for a row in the transaction that moves the money and
// inserts it if it is not there then lets every clerk whose transaction
// shares no locked row with the first (another account, another op) look
// before the first commits; an INSERT a UNIQUE constraint decides waits
// for the first to commit, and fails. On SQLite the transaction holds the
// write lock from its BEGIN, and the others simply wait.
func (s *Store) SlowCommits(n int64) { s.slowCommits.Arm(n) }

// SlowCommitsLeft reports how many transactions that moved money will
// still be held up before they commit.
func (s *Store) SlowCommitsLeft() int64 { return s.slowCommits.Left() }

// SlowKeyUpdates makes the next n statements that update the
// idempotency_keys table wait KeyUpdateDelay before they run, before they
// lock any row. A takeover that reads the lease in one statement and
// writes the new owner in another then lets every retry that arrives
// meanwhile read the lease expired, and each of them writes it, on
// PostgreSQL, where a plain UPDATE waits for the row and then writes it
// anyway; one conditional UPDATE that matches only an expired lease
// matches nothing once another retry has taken the key, however late it
// runs. On SQLite the transaction holds the write lock from its BEGIN,
// and the others wait. Inserts and deletes of the table are spared.
func (s *Store) SlowKeyUpdates(n int64) { s.slowKeyUpdates.Arm(n) }

// SlowKeyUpdatesLeft reports how many updates of the key table will
// still be held up.
func (s *Store) SlowKeyUpdatesLeft() int64 { return s.slowKeyUpdates.Left() }

// SlowKeyDeletes makes the next n statements that delete rows of the
// idempotency_keys table wait KeyDeleteDelay before they run, before they
// lock any row; the lab's own statements (LabRead: the purges it starts)
// are spared. A claim that reads an expired key in one statement and
// deletes the key by its name in another then deletes, on PostgreSQL at
// READ COMMITTED, the claim in progress another late retry made
// meanwhile, and claims the key again: both run the payment. One DELETE
// whose own condition says the key is completed and expired matches
// nothing once the key was claimed again, however late it runs. On SQLite
// the transaction holds the write lock from its BEGIN, and the others
// wait.
func (s *Store) SlowKeyDeletes(n int64) { s.slowKeyDeletes.Arm(n) }

// SlowKeyDeletesLeft reports how many deletes of the key table will
// still be held up.
func (s *Store) SlowKeyDeletesLeft() int64 { return s.slowKeyDeletes.Left() }

// SlowKeyDeletesAfterRead makes the next n statements that delete rows of
// the idempotency_keys table in a request that has already read the table
// (a SELECT from it), in a request begun while the fault was armed (see
// WithRequest), wait KeyDeleteDelay before they run, before they lock any
// row. A takeover that reads an expired lease and then deletes the key by
// its name, to claim it afresh, then deletes, on PostgreSQL at READ
// COMMITTED, the claim another retry of the key made meanwhile, and both
// call the core; a takeover by one conditional UPDATE deletes nothing and
// is not held up, and neither is a claim's first statement, whatever it
// deletes. On SQLite the claim's transaction holds the write lock from
// its BEGIN, and the others wait.
func (s *Store) SlowKeyDeletesAfterRead(n int64) { s.slowKeyDeletesAfterRead.Arm(n) }

// SlowKeyDeletesAfterReadLeft reports how many deletes of the key table
// after a read of it will still be held up.
func (s *Store) SlowKeyDeletesAfterReadLeft() int64 { return s.slowKeyDeletesAfterRead.Left() }

// SlowKeyReads makes the next n statements that read the idempotency_keys
// table (a SELECT from it, one that locks its rows too) wait KeyReadDelay
// before they run; the lab's own reads (LabRead) are spared. A claim whose
// INSERT ran into a key in progress, and that reads the key's row in a
// statement of its own, then reads it after the original has failed and
// given the key back: on PostgreSQL, at READ COMMITTED, it finds no row at
// all. On SQLite the claim's transaction holds the write lock from its
// BEGIN, the original's release waits for it, and the read finds the key
// in progress.
func (s *Store) SlowKeyReads(n int64) { s.slowKeyReads.Arm(n) }

// SlowKeyReadsLeft reports how many reads of the key table will still be
// held up.
func (s *Store) SlowKeyReadsLeft() int64 { return s.slowKeyReads.Left() }

// FailKeyReads makes the next n statements that read the idempotency_keys
// table (a SELECT from it, one that locks its rows too) fail before they
// run (ErrKeyReadRefused); the lab's own reads (LabRead) are spared. A
// claim whose INSERT ran into a key already there, and that reads the
// key's row to answer, then knows nothing of the key: what it answers
// without having read it is seen.
func (s *Store) FailKeyReads(n int64) { s.failedKeyReads.Arm(n) }

// FailedKeyReadsLeft reports how many reads of the key table will still
// be refused.
func (s *Store) FailedKeyReadsLeft() int64 { return s.failedKeyReads.Left() }

// LoseCommitAnswers makes the next n transactions that carried a business
// write (see MarkBusinessWrite) commit, and then tells their callers the
// COMMIT failed (ErrCommitAnswerLost): a stage that takes a failed commit
// for one that did not happen, and gives the key back, hands a completed
// key, whose money moved, to a retry that pays again.
func (s *Store) LoseCommitAnswers(n int64) { s.commitAnswersLost.Arm(n) }

// CommitAnswersLostLeft reports how many commits of transactions that
// moved money will still be told they failed.
func (s *Store) CommitAnswersLostLeft() int64 { return s.commitAnswersLost.Left() }

// FailCommits makes the next n transactions that carried a business
// write (see MarkBusinessWrite) roll back at their COMMIT, and tells their
// callers the COMMIT failed (ErrCommitFailed), as a COMMIT the database
// refuses does (a full disk, a serialization failure): nothing moved, the
// key is still in progress, and a stage that does not give it back when
// its commit fails leaves the payment's retries waiting for good.
func (s *Store) FailCommits(n int64) { s.failedCommits.Arm(n) }

// FailedCommitsLeft reports how many commits of transactions that moved
// money will still fail.
func (s *Store) FailedCommitsLeft() int64 { return s.failedCommits.Left() }

// CommitFails reports, using one armed firing of fail-commit, whether a
// transaction about to commit is rolled back instead: ErrCommitFailed for
// one that carried a business write; nil otherwise. Each engine's
// connections ask it after BeforeCommit, and roll the transaction back
// when it answers an error.
func (s *Store) CommitFails(business bool) error {
	if !business || s.failedCommits.Left() <= 0 || !s.failedCommits.Fire() {
		return nil
	}
	return ErrCommitFailed
}

// CommitAnswer is what a COMMIT that went through answers its caller:
// ErrCommitAnswerLost, using one armed firing of commit-answer-lost, for a
// transaction that carried a business write; nil otherwise. Each engine's
// connections return it once the commit is done and reported (Committed).
func (s *Store) CommitAnswer(business bool) error {
	if !business || s.commitAnswersLost.Left() <= 0 || !s.commitAnswersLost.Fire() {
		return nil
	}
	return ErrCommitAnswerLost
}

// HoldCommits makes the next n transactions that carried a business
// write (see MarkBusinessWrite) wait before their COMMIT, holding every
// lock they took, until the fault is disarmed (HoldCommits(0), which lets
// every held one go) or HeldCommitMax has passed. Where SlowCommits holds
// for a fixed time, this one holds for as long as the lab needs something
// to happen meanwhile: on PostgreSQL, transfers beside the held one commit
// outbox rows with later ids, and a relay pass reads them, before the
// held row is seen. On SQLite the transaction holds the write lock, and
// the others wait.
func (s *Store) HoldCommits(n int64) { s.heldCommits.arm(n) }

// HeldCommitsLeft reports how many transactions that moved money will
// still be held at their COMMIT until released.
func (s *Store) HeldCommitsLeft() int64 { return s.heldCommits.n.Left() }

// HoldKeyUpdates makes the next n statements that update a row of the key
// table wait before they run, until the fault is disarmed
// (HoldKeyUpdates(0), which lets every held one go), HeldStatementMax
// has passed or the statement's context ends. Armed while an original that
// outlived its lease waits on the core, it holds the original's
// completion after everything its transaction did before it: on
// PostgreSQL a retry takes the key over meanwhile, and a completion that
// proved its lease by an earlier read completes a key it no longer holds.
// Armed in one server process while the original runs in another, it
// holds a retry's takeover instead, until the original has completed.
func (s *Store) HoldKeyUpdates(n int64) { s.heldKeyUpdates.arm(n) }

// HeldKeyUpdatesLeft reports how many updates of the key table will still
// be held until released.
func (s *Store) HeldKeyUpdatesLeft() int64 { return s.heldKeyUpdates.n.Left() }

// HoldKeyPurges makes the next n statements of the lab's own purges
// (LabRead) that delete rows of the idempotency_keys table wait, before
// they run, until the fault is disarmed (HoldKeyPurges(0), which lets
// every held one go), HeldStatementMax has passed or the statement's
// context ends; a stage's own statements are spared. Armed while a purge runs, it
// holds the purge's delete after everything the purge read before it: on
// PostgreSQL a late retry of an expired key claims it again meanwhile,
// and a purge that chose its keys by an earlier read deletes that claim
// in progress. One DELETE whose own condition says the key is completed
// and expired keeps it, however late it runs.
func (s *Store) HoldKeyPurges(n int64) { s.heldKeyPurges.arm(n) }

// HeldKeyPurgesLeft reports how many deletes of the key table by the
// lab's purges will still be held until released.
func (s *Store) HeldKeyPurgesLeft() int64 { return s.heldKeyPurges.n.Left() }

// HoldKeyDeletes makes the next n of the stage's own statements that
// delete rows of the idempotency_keys table wait, before they run, until
// the fault is disarmed (HoldKeyDeletes(0), which lets every held one go),
// HeldStatementMax has passed or the statement's context ends; the lab's own
// purges (LabRead) are spared. Armed while an original that outlived its
// lease fails, it holds the original's release of its key after
// everything the release read before it: a retry takes the key over
// meanwhile, and a release that proved its lease by an earlier read
// deletes the retry's claim. One DELETE whose own condition names the
// owner keeps it, however late it runs. A release outside a transaction
// holds no lock while it waits, on either engine.
func (s *Store) HoldKeyDeletes(n int64) { s.heldKeyDeletes.arm(n) }

// HeldKeyDeletesLeft reports how many of the stage's deletes of the key
// table will still be held until released.
func (s *Store) HeldKeyDeletesLeft() int64 { return s.heldKeyDeletes.n.Left() }

// HoldKeyCommits makes the next n transactions of the stage's own that
// wrote the key table (a claim) wait at their COMMIT, after all their
// statements have run, until HoldKeyCommits(0) or HeldStatementMax. On
// PostgreSQL a purge that runs meanwhile takes its snapshot before the
// claim commits and waits for the row the claim changed: a purge whose
// DELETE says in its own condition that a key is completed and expired
// checks the row again once the claim has committed, and one that deletes
// rows a subquery chose by their ids does not; so does a release of an
// original that failed, beside a retry's takeover held here, whose
// condition on the owner reads it in a subquery. PostgreSQL connections
// hold them (fault.WritesKeys notes the writes); on SQLite the claim's
// transaction holds the write lock, and a purge waits for it anyway.
func (s *Store) HoldKeyCommits(n int64) { s.heldKeyCommits.arm(n) }

// HeldKeyCommitsLeft reports how many commits of transactions that wrote
// the key table will still be held.
func (s *Store) HeldKeyCommitsLeft() int64 { return s.heldKeyCommits.n.Left() }

// BeforeKeyCommit holds up the COMMIT of a transaction that wrote the key
// table, if held-key-commit is armed (see HoldKeyCommits). Like
// BeforeCommit, its wait does not end early.
func (s *Store) BeforeKeyCommit() {
	if release := s.heldKeyCommits.fire(); release != nil {
		s.heldKeyCommits.wait(context.Background(), release, HeldStatementMax)
	}
}

// WritesKeys reports whether query, run with ctx, is a statement of the
// stage's own (not the lab's) that inserts, updates or deletes rows of
// the key table.
func WritesKeys(ctx context.Context, query string) bool {
	return !labRead.in(ctx) && (updatesKeys(query) || deletesKeys(query) || inserts(keyInsert, query))
}

// BeforeCommit runs the faults armed on a transaction's COMMIT: it holds
// up one that carried a business write (see SlowCommits and
// HoldCommits). A COMMIT takes no context, and once the caller has asked
// for it the answer must come, so the wait does not end early.
func (s *Store) BeforeCommit(business bool) {
	if !business {
		return
	}
	if release := s.heldCommits.fire(); release != nil {
		s.heldCommits.wait(context.Background(), release, HeldCommitMax)
	}
	if s.slowCommits.Left() > 0 && s.slowCommits.Fire() {
		Hold(context.Background(), CommitDelay)
	}
}

// BeforeBegin runs the faults armed on a transaction that may write,
// before it begins: it holds the transaction up (see SlowBegins), then
// refuses it (see FailBegins). It returns ctx's error if ctx ends while
// the transaction waits, and ErrBeginRefused if the transaction must not
// begin.
func (s *Store) BeforeBegin(ctx context.Context) error {
	if s.slowBegins.Left() > 0 && s.slowBegins.Fire() {
		if err := Hold(ctx, BeginDelay); err != nil {
			return fmt.Errorf("slow begin: %w", err)
		}
	}
	if s.failedBegins.Left() > 0 && !labRead.in(ctx) && !relaying.in(ctx) && s.failedBegins.Fire() {
		return ErrBeginRefused
	}
	return nil
}

// BeforeStatement runs the faults armed on a statement before it runs:
// it holds up a write of the settings (see SlowSettingsWrites), a read
// of them after a write or a read in the same request (see
// SlowSettingsRereads) and
// an update, a delete or a read of the key table (see SlowKeyUpdates,
// HoldKeyUpdates, SlowKeyDeletes, HoldKeyDeletes, HoldKeyPurges,
// SlowKeyDeletesAfterRead and SlowKeyReads), refuses a read of the key
// table (see FailKeyReads), an INSERT into the outbox (see
// FailOutboxWrites), an UPDATE of it (see FailOutboxSettles) or an
// INSERT into the table of references (see FailReferenceWrites), then
// returns CheckKeyStore's error.
// It returns ctx's error if ctx ends while the statement waits.
func (s *Store) BeforeStatement(ctx context.Context, query string) error {
	if s.slowSettingsWrites.Left() > 0 && writesSettings(query) && s.slowSettingsWrites.Fire() {
		if err := Hold(ctx, SettingsWriteDelay); err != nil {
			return fmt.Errorf("slow settings write: %w", err)
		}
	}
	// A request's writes of the settings are noted only while rereads are
	// armed (the check arms it before its clerks save): every statement
	// of every request is not read for them.
	if s.slowSettingsRereads.Left() > 0 {
		if err := s.holdReread(ctx, query); err != nil {
			return err
		}
	}
	if s.slowKeyUpdates.Left() > 0 && updatesKeys(query) && s.slowKeyUpdates.Fire() {
		if err := Hold(ctx, KeyUpdateDelay); err != nil {
			return fmt.Errorf("slow key update: %w", err)
		}
	}
	if s.heldKeyUpdates.n.Left() > 0 && updatesKeys(query) {
		if release := s.heldKeyUpdates.fire(); release != nil {
			s.heldKeyUpdates.wait(ctx, release, HeldStatementMax)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("held key update: %w", err)
			}
		}
	}
	if s.heldKeyPurges.n.Left() > 0 && labRead.in(ctx) && deletesKeys(query) {
		if release := s.heldKeyPurges.fire(); release != nil {
			s.heldKeyPurges.wait(ctx, release, HeldStatementMax)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("held key purge: %w", err)
			}
		}
	}
	if s.heldKeyDeletes.n.Left() > 0 && !labRead.in(ctx) && deletesKeys(query) {
		if release := s.heldKeyDeletes.fire(); release != nil {
			s.heldKeyDeletes.wait(ctx, release, HeldStatementMax)
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("held key delete: %w", err)
			}
		}
	}
	if s.slowKeyDeletes.Left() > 0 && !labRead.in(ctx) && deletesKeys(query) && s.slowKeyDeletes.Fire() {
		if err := Hold(ctx, KeyDeleteDelay); err != nil {
			return fmt.Errorf("slow key delete: %w", err)
		}
	}
	if s.slowKeyDeletesAfterRead.Left() > 0 && !labRead.in(ctx) {
		if err := s.holdDeleteAfterRead(ctx, query); err != nil {
			return err
		}
	}
	if s.slowKeyReads.Left() > 0 && !labRead.in(ctx) && readsKeys(query) && s.slowKeyReads.Fire() {
		if err := Hold(ctx, KeyReadDelay); err != nil {
			return fmt.Errorf("slow key read: %w", err)
		}
	}
	if s.failedKeyReads.Left() > 0 && !labRead.in(ctx) && readsKeys(query) && s.failedKeyReads.Fire() {
		return ErrKeyReadRefused
	}
	if s.outboxWriteFailures.Left() > 0 && insertsOutbox(query) && s.outboxWriteFailures.Fire() {
		return ErrOutboxWriteRefused
	}
	if s.referenceWriteFailures.Left() > 0 && inserts(referenceInsert, query) && s.referenceWriteFailures.Fire() {
		return ErrReferenceWriteRefused
	}
	if s.outboxSettleFailures.Left() > 0 && relaying.in(ctx) && updatesOutbox(query) && s.outboxSettleFailures.Fire() {
		return ErrOutboxSettleRefused
	}
	return s.CheckKeyStore(ctx, query)
}

// holdReread notes in ctx's request (see WithRequest) a write or a read
// of the settings, and holds up a read of them that follows one. A statement run
// without the context of the request that runs it (QueryRow or Exec, not
// QueryRowContext or ExecContext: database/sql runs it under
// context.Background) cannot be told from another request's, so such a
// read is held up too, unless the lab makes it; and such a write is
// noted for every request begun before it, whose reads of the settings
// that follow are held up as after the request's own write.
func (s *Store) holdReread(ctx context.Context, query string) error {
	req, ok := ctx.Value(requestKey{}).(*request)
	delay := SettingsRereadDelay
	switch {
	case ok && writesSettings(query):
		req.wroteSettings.Store(true)
		return nil
	case !ok && labRead.in(ctx):
		return nil
	case !ok && writesSettings(query):
		// Two such writes may note their steps in either order: the
		// later step stays, or a request begun between them would not
		// count as one that may have sent the later.
		step := steps.Add(1)
		for last := s.looseSettingsWrite.Load(); last < step && !s.looseSettingsWrite.CompareAndSwap(last, step); {
			last = s.looseSettingsWrite.Load()
		}
		return nil
	case ok && !req.wroteSettings.Load() && readsSettings(query) && req.readSettings.Swap(true):
		// The request's second read of the settings, one that reads them
		// and their version apart: held, as a read after a write is, and
		// longer.
		delay = SettingsSecondReadDelay
	case ok && !req.wroteSettings.Load() && s.looseSettingsWrite.Load() < req.begun:
		return nil
	}
	if readsSettings(query) && s.slowSettingsRereads.Fire() {
		if err := Hold(ctx, delay); err != nil {
			return fmt.Errorf("slow settings reread: %w", err)
		}
	}
	return nil
}

// holdDeleteAfterRead notes in ctx's request (see WithRequest) a read of
// the key table, and holds up a delete of it that follows one.
func (s *Store) holdDeleteAfterRead(ctx context.Context, query string) error {
	req, ok := ctx.Value(requestKey{}).(*request)
	switch {
	case !ok:
	case readsKeys(query):
		req.readKeys.Store(true)
	case req.readKeys.Load() && deletesKeys(query) && s.slowKeyDeletesAfterRead.Fire():
		if err := Hold(ctx, KeyDeleteDelay); err != nil {
			return fmt.Errorf("slow key delete after read: %w", err)
		}
	}
	return nil
}

// Hold waits d, or until ctx ends, and then returns ctx's error: how a
// fault, or the core's latency, holds up what it delays. A context that
// ended by the time the wait did is reported, whichever Hold saw first:
// on a busy machine a goroutine woken late finds both done, and the
// statement it holds would run on a context already over. A deadline
// already past counts as the context's end though the context has not
// yet been told (its own timer, as late as the wait's, may not have run).
func Hold(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if end, ok := ctx.Deadline(); ok && !time.Now().Before(end) {
		return context.DeadlineExceeded
	}
	return nil
}

// writesSettings reports whether query writes the settings table: an
// UPDATE, INSERT INTO, DELETE FROM or MERGE INTO that names it, spelled as
// WritesOutbox allows the outbox's, wherever the statement says so: first,
// or after the common table expressions of a WITH, or in one of them. An
// UPDATE that finds its row in a WITH, or after a comment, is a write of
// the settings all the same, and the faults that widen a save's windows
// must hold it too.
func writesSettings(query string) bool {
	return settingsWrite.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// readsSettings reports whether query reads the settings table: a
// statement that begins with SELECT or WITH, comments taken out, names the
// table and does not write it.
func readsSettings(query string) bool {
	q := sqlComment.ReplaceAllString(query, " ")
	return settingsRead.MatchString(q) && !settingsWrite.MatchString(q)
}

// FailKeyStore makes the next n statements that touch the idempotency_keys
// table fail with ErrKeyStoreUnavailable.
func (s *Store) FailKeyStore(n int64) { s.keyStoreFailures.Arm(n) }

// KeyStoreFailuresLeft reports how many key-store statements will still fail.
func (s *Store) KeyStoreFailuresLeft() int64 { return s.keyStoreFailures.Left() }

// OnBusinessCommit sets the function that runs right after a transaction
// carrying a business write commits; nil removes it.
func (s *Store) OnBusinessCommit(fn func()) {
	if fn == nil {
		s.afterBusinessCommit.Store(nil)
		return
	}
	s.afterBusinessCommit.Store(&fn)
}

// OnKeyRowsChanged sets the function that receives the row ids of the
// idempotency_keys rows each committed transaction changed; nil removes
// it. The lab's event stream uses it to show key rows changing state,
// whatever the stage's design of that table.
func (s *Store) OnKeyRowsChanged(fn func(rowids []int64)) {
	if fn == nil {
		s.keyRowsChanged.Store(nil)
		return
	}
	s.keyRowsChanged.Store(&fn)
}

// OnKeyRowsListening sets the function that hears when the database stops
// reporting key-row changes (with the error that stopped it) and when it
// reports them again (nil): PostgreSQL's listening connection lost and
// made again. Changes made in between were not reported. nil removes it.
func (s *Store) OnKeyRowsListening(fn func(err error)) {
	if fn == nil {
		s.keyRowsListening.Store(nil)
		return
	}
	s.keyRowsListening.Store(&fn)
}

// KeyRowsListening tells the listener, if any, that key-row reports
// stopped (err) or resumed (nil).
func (s *Store) KeyRowsListening(err error) {
	if fn := s.keyRowsListening.Load(); fn != nil {
		(*fn)(err)
	}
}

// Commits reports how many transactions have committed: explicit
// transactions, and statements outside one that changed rows. The
// benchmarks report it per request. It counts transactions, not the
// engine's COMMITs: on a SQLite file, the transactions that queue at the
// write gate share one COMMIT.
func (s *Store) Commits() int64 { return s.commits.Load() }

// OutboxCommits reports how many of the commits Commits counts changed
// rows of the outbox table: what a relay spent on the rows it settled,
// without the empty transactions it may commit on a pass that had nothing
// to mark, however many a slow machine's passes make.
func (s *Store) OutboxCommits() int64 { return s.outboxCommits.Load() }

// OutboxCommitted counts a commit that changed rows of the outbox table.
// The engine's connections call it beside Committed.
func (s *Store) OutboxCommitted() { s.outboxCommits.Add(1) }

// WritesOutbox reports whether query writes the outbox table: an INSERT
// INTO, UPDATE, DELETE FROM or MERGE INTO that names it, quoted or not,
// in a schema or not, with comments anywhere, as a database that cannot
// see which table a row change is in (PostgreSQL's connections) tells a
// write of the outbox from its statement.
func WritesOutbox(query string) bool {
	return outboxWrite.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// insertsOutbox reports whether query inserts rows into the outbox table,
// spelled as WritesOutbox allows, SQLite's INSERT OR IGNORE (OR
// REPLACE…) and REPLACE INTO too, and a MERGE that inserts when no row
// matches.
func insertsOutbox(query string) bool {
	return inserts(outboxInsert, query)
}

// inserts reports whether query, comments taken out, matches insert, a
// pattern made by insertInto.
func inserts(insert *regexp.Regexp, query string) bool {
	return insert.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// updatesOutbox reports whether query updates rows of the outbox table,
// spelled as WritesOutbox allows, SQLite's UPDATE OR … too.
func updatesOutbox(query string) bool {
	return outboxUpdate.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// updatesKeys reports whether query updates the key table, its name
// spelled as WritesOutbox allows the outbox's.
func updatesKeys(query string) bool {
	return keyUpdate.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// deletesKeys reports whether query deletes rows of the key table, its
// name spelled as WritesOutbox allows the outbox's.
func deletesKeys(query string) bool {
	return keyDelete.MatchString(sqlComment.ReplaceAllString(query, " "))
}

// readsKeys reports whether query reads the key table: a SELECT from it,
// its name spelled as WritesOutbox allows the outbox's.
func readsKeys(query string) bool {
	return keyRead.MatchString(sqlComment.ReplaceAllString(query, " "))
}

var (
	// sqlComment matches a comment: a block one, or one to the end of
	// its line.
	sqlComment = regexp.MustCompile(`(?s)/\*.*?\*/|--[^\n]*`)
	// outboxName matches the outbox table's name after the verb that
	// writes it: quoted or not, in a schema or not.
	outboxName = tableName(OutboxTable)
	// outboxWrite matches a statement, comments taken out, that writes
	// the outbox table; outboxInsert one that inserts into it.
	outboxWrite  = regexp.MustCompile(`(?is)\b(?:insert\s+into|update|delete\s+from|merge\s+into)` + outboxName)
	outboxInsert = insertInto(OutboxTable)
	// referenceInsert matches a statement, comments taken out, that
	// inserts into the table of references.
	referenceInsert = insertInto(ReferenceTable)
	// outboxUpdate matches a statement, comments taken out, that updates
	// rows of the outbox table (SQLite's UPDATE OR … too).
	outboxUpdate = regexp.MustCompile(`(?is)\bupdate(?:\s+or\s+\w+)?` + outboxName)
	// keyUpdate matches a statement, comments taken out, that updates the
	// key table (SQLite's UPDATE OR … too).
	keyUpdate = regexp.MustCompile(`(?is)\bupdate(?:\s+or\s+\w+)?` + tableName(KeyTable))
	// keyDelete matches a statement, comments taken out, that deletes
	// rows of the key table.
	keyDelete = regexp.MustCompile(`(?is)\bdelete\s+from` + tableName(KeyTable))
	// keyInsert matches a statement, comments taken out, that inserts
	// into the key table.
	keyInsert = insertInto(KeyTable)
	// keyRead matches a statement, comments taken out, that begins with
	// SELECT and reads the key table.
	keyRead = regexp.MustCompile(`(?is)^\s*select\b.*\bfrom` + tableName(KeyTable))
	// settingsWrite matches a statement, comments taken out, that writes
	// the settings table (SQLite's UPDATE OR …, INSERT OR … and REPLACE
	// INTO too); settingsRead one that begins with SELECT or WITH and
	// names it.
	settingsWrite = regexp.MustCompile(`(?is)\b(?:update(?:\s+or\s+\w+)?|insert(?:\s+or\s+\w+)?\s+into|replace\s+into|delete\s+from|merge\s+into)` + tableName(SettingsTable))
	settingsRead  = regexp.MustCompile(`(?is)^\s*(?:select|with)\b.*\b` + SettingsTable + `\b`)
)

// insertInto matches a statement that inserts rows into table, its name
// spelled as WritesOutbox allows the outbox's: INSERT, SQLite's INSERT
// OR IGNORE (OR REPLACE…) and REPLACE INTO, and a MERGE that inserts when
// no row matches.
func insertInto(table string) *regexp.Regexp {
	name := tableName(table)
	return regexp.MustCompile(`(?is)\b(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into)` + name + `|\bmerge\s+into` + name + `.*\bthen\s+insert\b`)
}

// tableName is a pattern for a table's name after a verb that writes it:
// quoted or not, in a schema or not.
func tableName(table string) string {
	return `\s+(?:only\s+)?(?:"?\w+"?\s*\.\s*)?"?` + table + `"?(?:[\s(;*]|$)`
}

// CheckKeyStore returns ErrKeyStoreUnavailable, using one armed failure,
// if query touches the key table and the store-unavailable fault is armed;
// statements run with a LabRead context are spared.
func (s *Store) CheckKeyStore(ctx context.Context, query string) error {
	if labRead.in(ctx) || s.keyStoreFailures.Left() <= 0 || !strings.Contains(strings.ToLower(query), KeyTable) {
		return nil
	}
	if !s.keyStoreFailures.Fire() {
		return nil
	}
	return ErrKeyStoreUnavailable
}

// Committed counts a commit and tells the listeners: the key rows it
// changed (rowids, if any), then, if it carried a business write, the
// crash-after-commit switch.
func (s *Store) Committed(rowids []int64, business bool) {
	s.commits.Add(1)
	s.KeyRowsChanged(rowids)
	if business {
		if fn := s.afterBusinessCommit.Load(); fn != nil {
			(*fn)()
		}
	}
}

// KeyRowsChanged tells the listener, if any, that the key rows rowids
// have changed, each named once.
func (s *Store) KeyRowsChanged(rowids []int64) {
	if len(rowids) == 0 {
		return
	}
	if fn := s.keyRowsChanged.Load(); fn != nil {
		(*fn)(dedupe(rowids))
	}
}

func dedupe(rows []int64) []int64 {
	seen := make(map[int64]bool, len(rows))
	out := rows[:0]
	for _, r := range rows {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// mark is a context key for a fact about the statements run with the
// context: set, it holds true.
type mark int

const (
	labRead mark = iota
	businessWrite
	relaying
)

func (m mark) on(ctx context.Context) context.Context { return context.WithValue(ctx, m, true) }

func (m mark) in(ctx context.Context) bool {
	v, _ := ctx.Value(m).(bool)
	return v
}

// LabRead returns a context for the lab's own statements on the key table
// (its state, its event stream, the purges it starts): the
// store-unavailable fault spares them, so that an armed count is spent
// only by the stage's requests.
func LabRead(ctx context.Context) context.Context { return labRead.on(ctx) }

// Relaying returns a context for the statements of the stage's outbox
// relay: the kit runs each of its passes with one, and the
// fail-outbox-settle fault refuses their updates of the outbox alone.
func Relaying(ctx context.Context) context.Context { return relaying.on(ctx) }

// MarkBusinessWrite returns a context that tells the database a statement
// executed with it moves money. The bank uses it, so that the
// crash-after-commit fault fires right after the commit that carried the
// money, whoever calls Commit.
func MarkBusinessWrite(ctx context.Context) context.Context { return businessWrite.on(ctx) }

// IsBusinessWrite reports whether ctx was made by MarkBusinessWrite.
func IsBusinessWrite(ctx context.Context) bool { return businessWrite.in(ctx) }
