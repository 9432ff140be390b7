package grader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"idemlab/kit/labctl"
)

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
	// Unbalanced: the balances differ from the operations that executed.
	Unbalanced Harm = "books do not balance"
	// WrongAnswer: a client was given another operation's result, or a
	// recomputed one instead of its own.
	WrongAnswer Harm = "wrong answer"
	// NoUsableAnswer: a client can never learn the result of an operation
	// that executed: every retry is refused without it.
	NoUsableAnswer Harm = "no usable answer"
	// StuckKey: a key stays in progress for good; its client can neither
	// get its result nor execute it.
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
	case Unbalanced:
		return "the balances do not add up to the operations that executed"
	case WrongAnswer:
		return "a client was given an answer that is not its operation's own"
	case NoUsableAnswer:
		return "an operation executed, and its client can never learn its result"
	case StuckKey:
		return "a key stays in progress for good: its operation can neither finish nor run"
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

// CouldNotObserve returns the error of a check that cannot observe what
// it needs; what completes "could not observe …".
func (t *T) CouldNotObserve(what string, args ...any) error {
	if len(args) > 0 {
		what = fmt.Sprintf(what, args...)
	}
	return &Unobserved{What: what}
}

// Harmful returns a failure that harmed money, built like Fail.
func (t *T) Harmful(harm Harm, sent, got, expected string, args ...any) error {
	err := t.Fail(sent, got, expected, args...)
	err.(*Failure).Harm = harm
	return err
}

// moneyFirst reads the books once the check has run, whatever its
// verdict, and returns err with the money verdict put first: an operation
// that executed more often than every set of books the check kept allows
// is a double, even if the check stopped at a contract difference before
// it reconciled (the contract difference is kept beside it), or passed.
// If the books cannot be read, err is returned unchanged.
func (t *T) moneyFirst(err error) error {
	err = t.withDifferences(err)
	var f *Failure
	if errors.As(err, &f) && f.Harm != "" {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	saved := t.ctx
	t.ctx = ctx
	st, serr := t.State()
	t.ctx = saved
	if serr != nil {
		return err
	}
	if f != nil {
		f.Reconciled = true
	}
	doubles, ops := t.doubles(st)
	if len(doubles) == 0 {
		return err
	}
	found := &Failure{
		Harm:     Double,
		Sent:     "the whole scenario of this check (below: what it was checking when it stopped)",
		Got:      "/lab/state: " + strings.Join(doubles, "; "),
		Expected: "every operation executed at most as often as its client asked",
		Contract: f,
		Excess:   ops,
	}
	if f == nil && err != nil {
		found.Got += "\n(the check itself stopped with: " + err.Error() + ")"
	}
	return found
}

// Differ records a contract difference (a status, a problem type, a header
// other than the contract's) and lets the check go on: a check that finds
// one still runs the probes it exists for, and a contract difference never
// hides a money finding. The report lists every difference after the
// money verdict (see withDifferences).
func (t *T) Differ(sent, got, expected string, args ...any) {
	*t.differences = append(*t.differences, t.Fail(sent, got, expected, args...).(*Failure))
}

// note records err as a contract difference if it is one (a failure
// without harm) and returns nil, so that the check goes on; a money
// finding, or an error that stops the check, it returns as it is.
func (t *T) note(err error) error {
	var f *Failure
	if errors.As(err, &f) && f.Harm == "" {
		*t.differences = append(*t.differences, f)
		return nil
	}
	return err
}

// withDifferences puts the contract differences the check recorded with
// Differ beside its verdict err: after err's own evidence if err is a
// failure; in err's place if the check passed (the first difference names
// the failure, the others follow it); and if the check could not go on,
// the differences are still evidence, and the first says where it
// stopped.
func (t *T) withDifferences(err error) error {
	if len(*t.differences) == 0 {
		return err
	}
	rest := *t.differences
	var f *Failure
	if !errors.As(err, &f) {
		f, rest = rest[0], rest[1:]
		if err != nil {
			f.Got += "\n(the check then could not go on: " + err.Error() + ")"
		}
		err = f
	}
	last := f
	for last.Contract != nil {
		last = last.Contract
	}
	for _, d := range rest {
		last.Contract, last = d, d
	}
	return err
}

// doubles describes the operations of st that executed more often than
// the books the check kept allow (once, for an operation no books
// mention), and lists them.
func (t *T) doubles(st labctl.State) (out, ops []string) {
	for _, op := range sortedKeys(st.Executions) {
		allowed := int64(1)
		for _, b := range t.books {
			if n, ok := b.Executions[op]; ok {
				allowed = max(allowed, n)
			}
		}
		if n := st.Executions[op]; n > allowed {
			out = append(out, fmt.Sprintf("op %s executed %s", op, times(n)))
			ops = append(ops, op)
		}
	}
	return out, ops
}
