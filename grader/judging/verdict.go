// Package judging holds what the grader concludes from what it observed:
// the harms a failure did to money, a check's evidence (Failure), what
// a check expects of the bank (Books) and the lab state's key rows and
// snapshots it reads. It reads what the clients saw and what the lab's
// state shows, never what a server says of itself, and starts nothing.
package judging

import "fmt"

// Harm is what a failure did to money. A failure without one is a
// contract difference: a status, a problem type or a header other than
// the contract's, with every balance still right.
type Harm string

// The harms, in the order a report names them.
const (
	// Double: an operation executed more often than its client asked.
	Double Harm = "double"
	// MovedThoughRefused: an operation executed although its client was
	// told it did not (it will send the money again under a new key).
	MovedThoughRefused Harm = "moved though refused"
	// Lost: a client was told its operation executed, and it did not.
	Lost Harm = "lost"
	// ToldDuplicate: a client was refused as a duplicate of a request
	// already done (409), and the books show its request never ran: it
	// will not send it again, and can never learn what became of it.
	ToldDuplicate Harm = "told duplicate, never ran"
	// Unbalanced: the balances differ from the operations that executed.
	Unbalanced Harm = "books do not balance"
	// WrongAnswer: a client was given another operation's result, or a
	// recomputed one instead of its own.
	WrongAnswer Harm = "wrong answer"
	// NoUsableAnswer: a client can never learn what became of its
	// operation, which executed (or was refused, or never ran): every
	// retry is refused without it, or told to wait for a key that is not
	// in progress (ToldToWait).
	NoUsableAnswer Harm = "no usable answer"
	// StuckKey: a key stays in progress for good, or replays a failure
	// it kept for good; its client can neither get its result nor
	// execute it.
	StuckKey Harm = "stuck key"
	// Leak: one customer was shown another customer's data.
	Leak Harm = "cross-customer leak"
	// LostUpdate: a change a clerk was told was saved was overwritten by
	// one made from an older copy, or was never saved; the daily limit
	// that guards the money may be the change that went missing.
	LostUpdate Harm = "lost update"
	// NotPosted: a transfer moved money and the core ledger never heard
	// of it (stage 9).
	NotPosted Harm = "not posted"
	// PostedTwice: the core ledger posted one transfer more than once.
	PostedTwice Harm = "posted twice"
	// PostedUnexecuted: the core ledger posted a transfer that never
	// executed.
	PostedUnexecuted Harm = "posted though not executed"
)

// Explain says in a few words what the harm means for a customer.
func (h Harm) Explain() string {
	switch h {
	case Double:
		return "an operation executed more often than its client asked: money sent twice"
	case MovedThoughRefused:
		return "money moved although the client was told it did not; it will send it again"
	case Lost:
		return "the client was told its money moved, and it did not"
	case ToldDuplicate:
		return "the client was refused as a duplicate of a request already done, and its own never ran: it will not send it again"
	case Unbalanced:
		return "the balances do not add up to the operations that executed"
	case WrongAnswer:
		return "a client was given an answer that is not its operation's own"
	case NoUsableAnswer:
		return "a client can never learn what became of its operation (it executed, or was refused, or never ran): every retry is refused without it, or told to wait for a key that is not in progress"
	case StuckKey:
		return "a key is held for good (in progress, or replaying a failure it kept): its operation can neither finish nor run"
	case Leak:
		return "one customer was shown another customer's data"
	case LostUpdate:
		return "a saved change went missing: a clerk's edit of a stale copy put back what another clerk had changed"
	case NotPosted:
		return "money moved and the core ledger never heard of it: the bank's two books disagree"
	case PostedTwice:
		return "the core ledger posted one transfer twice: its books count the money twice"
	case PostedUnexecuted:
		return "the core ledger posted a transfer whose money never moved"
	}
	return string(h)
}

// Unobserved is the error of a check that could not observe what it
// needs (a key table it cannot read, a server it may not crash, a run
// that timed out). It is neither a pass nor a failure: the check could
// not run, and says why.
type Unobserved struct {
	What string
}

func (u *Unobserved) Error() string { return "could not observe " + u.What }

// Failure is a check's evidence against the server.
type Failure struct {
	Sent     string
	Got      string
	Expected string
	// Harm is what the failure did to money; empty for a contract
	// difference found while the books still balanced.
	Harm Harm
	// Contract is the next contract difference the check found, beside
	// this failure (a money finding, or a first contract difference):
	// reported with it, never in its place. Each one may name the next.
	Contract *Failure
	// Lesser is the money finding the check made itself (a wrong answer,
	// a lost operation), when the books, read after the check, show a
	// double that leads in its place: reported with it, never hidden by
	// it, as the double is never hidden behind it.
	Lesser *Failure
	// Reconciled says the books were read after the check and no
	// operation had executed more often than asked.
	Reconciled bool
	// Excess are the operations that executed more often than asked, and
	// Missing those a client was told of that never executed: the
	// timeline highlights their executions, or the answers that promised
	// them.
	Excess, Missing []string
	// Refs are the resources a finding is about, every one, where Got
	// names a few (the transfers a core ledger finding counts): the
	// timeline draws their requests.
	Refs []string
	// Count, when set, is how many operations or accounts the finding is
	// about where its evidence does not name them as a check's operations
	// (a generated day's findings).
	Count int
	// Why, when set, says why this finding matters, in place of the
	// check's own why: a finding any check of delivery may make (rows
	// marked sent before the core took them) is not the one the check
	// exists for, and its why would send the student after another bug.
	Why string
	// Lesson, when set, is the lesson section for this finding, in place
	// of the check's: the one that explains the cause the server logged
	// (a statement PostgreSQL refused after a failed one), where the
	// check's section would explain a bug the server does not have.
	Lesson string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("sent %s; got %s; expected %s", f.Sent, f.Got, f.Expected)
}
