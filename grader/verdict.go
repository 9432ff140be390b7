package grader

import (
	"errors"
	"fmt"
	"strings"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/kit/labctl"
)

// CouldNotObserve returns the error of a check that cannot observe what
// it needs; what completes "could not observe …".
func (t *T) CouldNotObserve(what string, args ...any) error {
	if len(args) > 0 {
		what = fmt.Sprintf(what, args...)
	}
	return &judging.Unobserved{What: what}
}

// Harmful returns a failure that harmed money, built like Fail.
func (t *T) Harmful(harm judging.Harm, sent, got, expected string, args ...any) error {
	err := t.Fail(sent, got, expected, args...)
	err.(*judging.Failure).Harm = harm
	return err
}

// because returns err with why in place of the check's why, when err is
// a *judging.Failure: the finding is not the one the check exists for.
// Any other error (the check could not run) is returned as it is.
func because(err error, why string) error {
	var f *judging.Failure
	if errors.As(err, &f) {
		f.Why = why
	}
	return err
}

// toldDuplicate returns the failure of a request refused as one already
// done (409) that the books, read just before, show moved nothing: the
// client, told its request ran, will not send it again, and can never
// learn what became of it. It is the day replay's told_duplicate.
func (t *T) toldDuplicate(sent, got, expected string) error {
	return t.Harmful(judging.ToldDuplicate, sent, got,
		expected+"; told it was already done, the client will not send it again, and the books show this request never ran")
}

// moneyFirst reads the books once the check has run, whatever its
// verdict, and returns err with the money verdict put first: an operation
// that executed, while the check ran, more often than every set of books
// the check kept allows is a double, even if the check stopped at a
// contract difference before it reconciled (the contract difference is
// kept beside it), passed, or failed with a lesser money finding of its
// own, such as a wrong answer (kept beside it as its Lesser: a retry that
// executed again and was answered with its new result is a double first,
// whatever the client was told). A check that found a double itself is
// judged by it, and the books are not read again. If the books cannot be
// read, err is returned unchanged, and so it is, without a read, when the
// check's own last read of the state gave up (t.unread): the check read
// it at its verdict, and a second read would wait stateRead again on what
// holds the database.
func (t *T) moneyFirst(err error) error {
	err = t.withDifferences(err)
	var f *judging.Failure
	if (errors.As(err, &f) && f.Harm == judging.Double) || t.unread != nil {
		return err
	}
	st, serr := t.stateSoon()
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
	found := &judging.Failure{
		Harm:     judging.Double,
		Sent:     "the whole scenario of this check (below: what it was checking when it stopped)",
		Got:      "/lab/state: " + strings.Join(doubles, "; "),
		Expected: "every operation executed at most as often as its client asked",
		Contract: f,
		Excess:   ops,
	}
	switch {
	case f != nil && f.Harm != "":
		// The check's own finding follows the double, and the contract
		// differences it holds follow both. Its why, where it has one of
		// its own, is the one the report gives: it says where the cause
		// lies, which is the double's too.
		found.Sent = "the whole scenario of this check (below: what the check itself found)"
		found.Lesser, found.Contract, f.Contract = f, f.Contract, nil
		found.Why = f.Why
	case f == nil && err != nil:
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
	*t.differences = append(*t.differences, t.Fail(sent, got, expected, args...).(*judging.Failure))
}

// note records err as a contract difference if it is one (a failure
// without harm) and returns nil, so that the check goes on; a money
// finding, or an error that stops the check, it returns as it is.
func (t *T) note(err error) error {
	var f *judging.Failure
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
	var f *judging.Failure
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

// doubles describes the operations of st that executed, since the check
// began, more often than the books the check kept allow (once, for an
// operation no books mention), and lists them. What had executed before
// the check began (t.before) is not counted: on a server the checks share
// it is what the checks before this one did, which their own verdicts
// judged. A check's ops are drawn from its own seed, so none of them is
// one of those.
func (t *T) doubles(st labctl.State) (out, ops []string) {
	var had map[string]int64 // nil (a fresh server) when it was not read
	if t.before != nil {
		had = t.before.Executions
	}
	for _, op := range sortedKeys(st.Executions) {
		allowed := int64(1)
		for _, b := range t.books {
			if n, ok := b.Executions[op]; ok {
				allowed = max(allowed, n)
			}
		}
		if n := st.Executions[op] - had[op]; n > allowed {
			out = append(out, fmt.Sprintf("op %s %s", op, history.Executed(n)))
			ops = append(ops, op)
		}
	}
	return out, ops
}
