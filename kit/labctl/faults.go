package labctl

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/fault"
	"idemlab/kit/problem"
)

// Fault points, as POST /lab/faults names them (docs/api.md).
const (
	CrashInTransfer     = "crash-in-transfer"
	CrashAfterCommit    = "crash-after-commit"
	CrashBeforeResponse = "crash-before-response"
	FailInTransfer      = "fail-in-transfer"
	StoreUnavailable    = "store-unavailable"
	// CrashAfterPost fires as the core ledger's answer to a posting has
	// arrived (stage 9): after the send, before the relay marks it sent.
	CrashAfterPost = "crash-after-post"
	// SlowSettingsWrite holds up a statement that writes an account's
	// settings (stage 7), before it runs: a read of the version and a
	// later write of its own get a window other clerks' writes land in.
	SlowSettingsWrite = "slow-settings-write"
	// SlowSettingsCommit holds up a write of an account's settings once it
	// has run, before it commits, holding its row lock (stage 7): on
	// PostgreSQL the saves that start meanwhile read the settings as they
	// were, and wait for the lock.
	SlowSettingsCommit = "slow-settings-commit"
	// SlowSettingsReread holds up a statement that reads an account's
	// settings in a request that has already written them, or read them
	// (stage 7): another clerk's save lands between a save and a read of
	// what it made, or between a GET's two reads.
	SlowSettingsReread = "slow-settings-reread"
	// FailOutboxWrite makes the database connection refuse a statement
	// that inserts an outbox row (stage 9), before the engine sees it, so
	// the transaction can still commit on either engine: the transfer
	// whose row it is must fail with it, or it commits without the row.
	FailOutboxWrite = "fail-outbox-write"
	// FailReferenceWrite makes the database connection refuse a statement
	// that inserts into transfer_references (stage 8), as FailOutboxWrite
	// does the outbox's: the transfer whose reference it is must fail with
	// it, or it commits without its reference, and its invoice can be paid
	// again.
	FailReferenceWrite = "fail-reference-write"
	// FailOutboxSettle makes the database connection refuse a statement
	// of the stage's relay that updates outbox rows (stage 9): its marks
	// and dead letters, refused by its own database, before the engine
	// sees them. The rows stay owed, and a later pass settles them. The
	// statements of customers' requests and of the lab are spared.
	FailOutboxSettle = "fail-outbox-settle"
	// SlowBegin holds up a transaction that may write, before it begins
	// (stage 8): a look in a statement of its own and a write in a later
	// transaction get a window other clerks' looks land in.
	SlowBegin = "slow-begin"
	// FailBegin refuses a transaction that may write as it begins
	// (stage 3): armed while a request waits on the core, once its key
	// is claimed, it refuses the transaction that would move the money;
	// nothing moved, and the key must be given back. The lab's own
	// transactions and the relay's are spared.
	FailBegin = "fail-begin"
	// SlowCommit holds up a transaction that moved money, before its
	// COMMIT (stage 8): on PostgreSQL, clerks whose transactions lock no
	// row in common look before any of them commits.
	SlowCommit = "slow-commit"
	// SlowKeyUpdate holds up a statement that updates a row of the key
	// table (stage 6), before it runs: a takeover that read the lease
	// earlier, in a statement of its own, gives the other retries a
	// window to read it expired too.
	SlowKeyUpdate = "slow-key-update"
	// HeldCommit holds up a transaction that moved money, before its
	// COMMIT, until the fault is disarmed or 5 s have passed (stage 9):
	// on PostgreSQL, transfers beside it commit outbox rows with later ids
	// first, and the check lets it go once a relay request reaches the
	// core ledger.
	HeldCommit = "held-commit"
	// HeldKeyUpdate holds up a statement that updates a row of the key
	// table, before it runs, until the fault is disarmed or 30 s have
	// passed (stage 6): armed while an original that outlived its lease
	// waits on the core, it holds the original's completion, and on
	// PostgreSQL the check's retry takes the key over meanwhile; armed in
	// one process of two while the original runs in the other, it holds
	// the takeover of a retry until the original has completed.
	HeldKeyUpdate = "held-key-update"
	// SlowKeyRead holds up a statement that reads the key table (stage
	// 3), before it runs: a claim whose INSERT ran into a key in progress
	// reads the key's row after the original has given it back.
	SlowKeyRead = "slow-key-read"
	// FailKeyRead refuses a statement that reads the key table (stage
	// 3): a claim whose INSERT ran into the key, and that reads the
	// key's row to answer, knows nothing of the key, and must fail
	// closed. The lab's own reads are spared.
	FailKeyRead = "fail-key-read"
	// SlowKeyDelete holds up a statement that deletes rows of the key
	// table (stage 5), before it runs: a claim that read an expired key
	// in a statement of its own deletes the key after another late retry
	// has claimed it again.
	SlowKeyDelete = "slow-key-delete"
	// HeldKeyPurge holds up a statement of the lab's purge that deletes
	// rows of the key table, before it runs, until the fault is disarmed
	// or 30 s have passed (stage 5): on PostgreSQL a late retry of an
	// expired key claims it again meanwhile, and a purge that chose its
	// keys by an earlier read deletes that claim in progress.
	HeldKeyPurge = "held-key-purge"
	// HeldKeyDelete holds up a statement of the stage's own that deletes
	// rows of the key table, before it runs, until the fault is disarmed
	// or 30 s have passed (stage 6): armed while an original that outlived
	// its lease fails, it holds the original's release of its key, and a
	// retry takes the key over meanwhile.
	HeldKeyDelete = "held-key-delete"
	// HeldKeyCommit holds up the COMMIT of a transaction of the stage's
	// that wrote the key table (a claim), after its statements have run,
	// until the fault is disarmed or 30 s have passed (stage 5, on
	// PostgreSQL): a purge that runs meanwhile has read the key as it was
	// before the claim, and waits for the row the claim changed. In stage
	// 6 it holds a retry's takeover in the same way, while an original's
	// release waits for the row.
	HeldKeyCommit = "held-key-commit"
	// SlowKeyDeleteAfterRead holds up a statement that deletes rows of
	// the key table in a request that has read the table before (stage
	// 6), before it runs: a takeover that read the lease expired and
	// deletes the key by its name deletes the claim another retry made
	// meanwhile.
	SlowKeyDeleteAfterRead = "slow-key-delete-after-read"
	// CommitAnswerLost lets a transaction that moved money commit, then
	// tells its caller the COMMIT failed (stage 3): the key was completed
	// with the money, and nothing may give it back.
	CommitAnswerLost = "commit-answer-lost"
	// FailCommit rolls a transaction that moved money back at its COMMIT
	// and tells its caller the COMMIT failed (stage 3): nothing moved, and
	// the key must be given back.
	FailCommit = "fail-commit"
	// PoisonPosting has the core ledger reject for good the transfers of
	// the next postings it receives, 422 posting-rejected however often
	// they are sent (stage 9): a poison message, which a relay sets aside
	// as a dead letter. It arms the core, wherever it runs; a server with
	// no core ledger refuses it.
	PoisonPosting = "poison-posting"
	// CoreTimeout makes a request of postings to the core ledger give up
	// waiting for its answer after core.HurriedTimeout rather than the
	// core client's 5 s (stage 9): a check that has the core keep silent
	// sees the relay's call timed out without waiting 5 s for it.
	CoreTimeout = "core-timeout"
)

// Points lists every fault point.
var Points = []string{CrashInTransfer, CrashAfterCommit, CrashBeforeResponse, CrashAfterPost, FailInTransfer, StoreUnavailable, SlowSettingsWrite, SlowSettingsCommit, SlowSettingsReread, FailOutboxWrite, FailReferenceWrite, FailOutboxSettle, SlowBegin, FailBegin, SlowCommit, SlowKeyUpdate, HeldCommit, HeldKeyUpdate, SlowKeyRead, FailKeyRead, SlowKeyDelete, HeldKeyPurge, HeldKeyDelete, HeldKeyCommit, SlowKeyDeleteAfterRead, CommitAnswerLost, FailCommit, PoisonPosting, CoreTimeout}

// Core is the core ledger whose faults a lab server arms (core.Client):
// in a process of its own under lab serve, in the server's under lab
// check.
type Core interface {
	// ArmPoisonNext has the core reject for good the transfers of the
	// next n postings (0 disarms), and returns how many it now will.
	ArmPoisonNext(ctx context.Context, n int64) (int64, error)
	// PoisonNextLeft is how many of the next postings it still will.
	PoisonNextLeft(ctx context.Context) (int64, error)
}

// coreTimeout bounds a call that arms the core's fault or reads it.
const coreTimeout = 5 * time.Second

// Faults are the armed faults of one lab server. A crash calls Crash, which
// in a real server ends the process at once, with no cleanup.
type Faults struct {
	Bank                *bank.Faults
	db                  *fault.Store
	crashAfterCommit    fault.Countdown
	crashBeforeResponse fault.Countdown
	crashAfterPost      fault.Countdown
	hurryCore           fault.Countdown
	crash               func(point string)
	// Core is the core ledger poison-posting arms; nil on a server that
	// has none (a stage before 9, or one whose stage relays nothing).
	Core Core
}

// NewFaults wires the fault switches of a bank and a database's store to crash.
// A real crash never returns; when crash does (a server simulated in
// process), the request under it is aborted as if its process had died.
func NewFaults(db *fault.Store, crash func(point string)) *Faults {
	abort := func(point string) {
		crash(point)
		panic(http.ErrAbortHandler)
	}
	f := &Faults{Bank: &bank.Faults{Crash: abort}, db: db, crash: abort}
	db.OnBusinessCommit(func() {
		if f.crashAfterCommit.Fire() {
			abort(CrashAfterCommit)
		}
	})
	return f
}

// Arm arms count occurrences of point (0 disarms it). It returns an error
// for an unknown point or a negative count.
func (f *Faults) Arm(point string, count int64) error {
	if count < 0 || count > 1_000_000 {
		return fmt.Errorf("count must be 0..1000000, got %d", count)
	}
	switch point {
	case CrashInTransfer:
		f.Bank.CrashNext.Arm(count)
	case CrashAfterCommit:
		f.crashAfterCommit.Arm(count)
	case CrashBeforeResponse:
		f.crashBeforeResponse.Arm(count)
	case CrashAfterPost:
		f.crashAfterPost.Arm(count)
	case CoreTimeout:
		f.hurryCore.Arm(count)
	case FailInTransfer:
		f.Bank.FailNext.Arm(count)
	case StoreUnavailable:
		f.db.FailKeyStore(count)
	case SlowSettingsWrite:
		f.db.SlowSettingsWrites(count)
	case SlowSettingsCommit:
		f.db.SlowSettingsCommits(count)
	case SlowSettingsReread:
		f.db.SlowSettingsRereads(count)
	case FailOutboxWrite:
		f.db.FailOutboxWrites(count)
	case FailReferenceWrite:
		f.db.FailReferenceWrites(count)
	case FailOutboxSettle:
		f.db.FailOutboxSettles(count)
	case SlowBegin:
		f.db.SlowBegins(count)
	case FailBegin:
		f.db.FailBegins(count)
	case SlowCommit:
		f.db.SlowCommits(count)
	case SlowKeyUpdate:
		f.db.SlowKeyUpdates(count)
	case HeldCommit:
		f.db.HoldCommits(count)
	case HeldKeyUpdate:
		f.db.HoldKeyUpdates(count)
	case SlowKeyRead:
		f.db.SlowKeyReads(count)
	case FailKeyRead:
		f.db.FailKeyReads(count)
	case SlowKeyDelete:
		f.db.SlowKeyDeletes(count)
	case HeldKeyPurge:
		f.db.HoldKeyPurges(count)
	case HeldKeyDelete:
		f.db.HoldKeyDeletes(count)
	case HeldKeyCommit:
		f.db.HoldKeyCommits(count)
	case SlowKeyDeleteAfterRead:
		f.db.SlowKeyDeletesAfterRead(count)
	case CommitAnswerLost:
		f.db.LoseCommitAnswers(count)
	case FailCommit:
		f.db.FailCommits(count)
	case PoisonPosting:
		if f.Core == nil {
			if count == 0 {
				return nil
			}
			return fmt.Errorf("%s arms the core ledger, and this server has none: the core runs from stage 9 on, beside a server whose stage relays its outbox to it", point)
		}
		ctx, cancel := context.WithTimeout(context.Background(), coreTimeout)
		defer cancel()
		if _, err := f.Core.ArmPoisonNext(ctx, count); err != nil {
			return problem.New(problem.Internal, "arm %s on the core ledger: %v", point, err)
		}
	default:
		return fmt.Errorf("unknown fault point %q; the points are %v", point, Points)
	}
	return nil
}

// Armed reports the faults still armed and how many times each will fire.
func (f *Faults) Armed() []ArmedFault {
	counts := map[string]int64{
		CrashInTransfer:        f.Bank.CrashNext.Left(),
		CrashAfterCommit:       f.crashAfterCommit.Left(),
		CrashBeforeResponse:    f.crashBeforeResponse.Left(),
		CrashAfterPost:         f.crashAfterPost.Left(),
		CoreTimeout:            f.hurryCore.Left(),
		FailInTransfer:         f.Bank.FailNext.Left(),
		StoreUnavailable:       f.db.KeyStoreFailuresLeft(),
		SlowSettingsWrite:      f.db.SlowSettingsWritesLeft(),
		SlowSettingsCommit:     f.db.SlowSettingsCommitsLeft(),
		SlowSettingsReread:     f.db.SlowSettingsRereadsLeft(),
		FailOutboxWrite:        f.db.OutboxWriteFailuresLeft(),
		FailReferenceWrite:     f.db.ReferenceWriteFailuresLeft(),
		FailOutboxSettle:       f.db.OutboxSettleFailuresLeft(),
		SlowBegin:              f.db.SlowBeginsLeft(),
		FailBegin:              f.db.FailedBeginsLeft(),
		SlowCommit:             f.db.SlowCommitsLeft(),
		SlowKeyUpdate:          f.db.SlowKeyUpdatesLeft(),
		HeldCommit:             f.db.HeldCommitsLeft(),
		HeldKeyUpdate:          f.db.HeldKeyUpdatesLeft(),
		SlowKeyRead:            f.db.SlowKeyReadsLeft(),
		FailKeyRead:            f.db.FailedKeyReadsLeft(),
		SlowKeyDelete:          f.db.SlowKeyDeletesLeft(),
		HeldKeyPurge:           f.db.HeldKeyPurgesLeft(),
		HeldKeyDelete:          f.db.HeldKeyDeletesLeft(),
		HeldKeyCommit:          f.db.HeldKeyCommitsLeft(),
		SlowKeyDeleteAfterRead: f.db.SlowKeyDeletesAfterReadLeft(),
		CommitAnswerLost:       f.db.CommitAnswersLostLeft(),
		FailCommit:             f.db.FailedCommitsLeft(),
	}
	if f.Core != nil {
		// A core that does not answer (restarting under lab serve) has
		// nothing armed that the server can report.
		ctx, cancel := context.WithTimeout(context.Background(), coreTimeout)
		counts[PoisonPosting], _ = f.Core.PoisonNextLeft(ctx)
		cancel()
	}
	out := []ArmedFault{}
	for p, n := range counts {
		if n > 0 {
			out = append(out, ArmedFault{Point: p, Count: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Point < out[j].Point })
	return out
}

// ArmedFault is one armed fault point.
type ArmedFault struct {
	Point string `json:"point"`
	Count int64  `json:"count"`
}

// BeforeResponse fires crash-before-response if it is armed. The server
// calls it after the handler returned and before a byte is sent.
func (f *Faults) BeforeResponse() {
	if f.crashBeforeResponse.Fire() {
		f.crash(CrashBeforeResponse)
	}
}

// AfterPost fires crash-after-post if it is armed. The core ledger's
// client calls it as the core's answer to a posting arrives.
func (f *Faults) AfterPost() {
	if f.crashAfterPost.Fire() {
		f.crash(CrashAfterPost)
	}
}

// HurryCore fires core-timeout if it is armed. The core ledger's client
// calls it as each request of postings starts: true makes that request
// give up after core.HurriedTimeout.
func (f *Faults) HurryCore() bool {
	return f.hurryCore.Fire()
}

// DisarmAll disarms every fault, the core ledger's poison-posting
// included. It returns an error if the core could not be told: its
// faults may still be armed.
func (f *Faults) DisarmAll() error {
	f.DisarmOwn()
	return f.Arm(PoisonPosting, 0)
}

// DisarmOwn disarms the faults this process keeps: every one but
// poison-posting, which lives in the core ledger that every replica
// posts to. A replica catching up with a reset another made
// (Replica.Sync) disarms only these: the core was disarmed by the reset,
// and may have been armed again since.
func (f *Faults) DisarmOwn() {
	for _, p := range Points {
		if p != PoisonPosting {
			f.Arm(p, 0)
		}
	}
}
