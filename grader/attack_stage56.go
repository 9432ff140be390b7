package grader

import (
	"fmt"
	"slices"
	"time"
)

// drawLease draws a lease period of lo to hi whole seconds from the
// check's seed, so that a server which assumes one fixed lease (the
// default's 30s, say) meets another.
func (t *T) drawLease(lo, hi int) time.Duration {
	return time.Duration(lo+t.Rand().IntN(hi-lo+1)) * time.Second
}

// noKeyRows is the could-not-observe error of a check that needs to see
// key rows when GET /lab/state shows none at all: the server keeps its
// keys somewhere the lab cannot read (in memory, in Redis), and the check
// cannot tell a missing row from a row it cannot see.
func (t *T) noKeyRows(what string) error {
	return t.CouldNotObserve("the key table: GET /lab/state shows no row of idempotency_keys, so the check cannot see %s", what)
}

// keyRowsVisible reads the lab state and reports whether it shows any key
// row at all.
func (t *T) keyRowsVisible() (bool, error) {
	st, err := t.State()
	if err != nil {
		return false, err
	}
	return len(st.Keys) > 0, nil
}

// unheld is what a check says when Hold never saw the original's key in
// progress: once the original has answered, a key table without a single
// row cannot be observed (nil is returned otherwise, and the check tries
// again with a longer core wait).
func (t *T) unheld(h *Held, what string) error {
	h.Wait()
	visible, err := t.keyRowsVisible()
	switch {
	case err != nil:
		return err
	case !visible:
		return t.noKeyRows(what)
	}
	return nil
}

// executedOps counts the operations the 201s among rs name, each once: a
// replay names the operation it replays, marked as a replay or not, and
// adds none. Every 201 tells its client that an operation executed; the
// books then say whether it did, and how often.
func executedOps(rs ...Response) int {
	ids := map[string]bool{}
	for _, r := range rs {
		if r.Is(201, "") {
			ids[answerID(r)] = true
		}
	}
	return len(ids)
}

// toldItRan reports whether r, a 2xx other than 201 (a replay answered
// 200, say), names the operation orig, a 201, answered: its client is told
// that its operation ran and what it was, in another status than the
// contract's, a contract difference and no money finding.
func toldItRan(orig, r Response) bool {
	return orig.Is(201, "") && success(r) && r.Status != 201 && answerID(r) != "" && answerID(r) == answerID(orig)
}

// toldRan reports whether r tells its client that the operation op ran:
// a 201, or another 2xx whose body names op (an execution answered 200,
// say). The books expect what the client was told, whatever the status:
// a 2xx that names op and a 201 are both a payment its client will not
// send again.
func toldRan(r Response, op string) bool {
	return r.Is(201, "") || (success(r) && answerOp(r) == op)
}

// toldAnyRan reports whether any of rs tells its client that op ran
// (toldRan): the books then expect op once, whatever the status.
func toldAnyRan(op string, rs ...Response) bool {
	return slices.ContainsFunc(rs, func(r Response) bool { return toldRan(r, op) })
}

// toldOps counts the operations the answers among rs that tell their
// client op ran (toldRan: a 201, or another 2xx naming op) name, each
// once, as executedOps does for the 201s: a replay names the operation
// it replays and adds none. A 2xx naming another op is a wrong answer,
// and no run.
func toldOps(op string, rs ...Response) int {
	ids := map[string]bool{}
	for _, r := range rs {
		if toldRan(r, op) {
			ids[answerID(r)] = true
		}
	}
	return len(ids)
}

// createdOrDiffers judges r, the answer to req, a request the contract
// wants 201 Created for (the first with its key, or one whose key has
// expired): told it ran in another 2xx (toldSentRan), a contract
// difference, recorded (Differ), and nil, so that the check goes on to
// the retries, edits and money probes it exists for; told nothing of the
// kind, the failure, returned.
func (t *T) createdOrDiffers(r Response, req Request, sent, got, expected string) error {
	if !toldSentRan(r, req) {
		return t.Fail(sent, got, expected)
	}
	if !r.Is(201, "") {
		t.Differ(sent, got, expected)
	}
	return nil
}

// replayOfAnother2xx judges r, a replay of first, an answer that told its
// client its payment ran in another 2xx than 201 (a contract difference
// the check recorded where it met it): against what the server first
// said, not a 201. The same status, Content-Type and JSON value is a
// faithful replay, nil; any other difference is judged by replayHarm: one
// without harm (a 200 replayed as 201, the same value) is recorded as a
// difference of the contract (note), and nil, so that the check goes on;
// a harm, or no answer, is the failure, returned. whose names first in
// the difference ("the original"). first may be a 201 as well: a later
// retry compared with what an earlier one was told, whatever its 2xx, is
// this one question (S6.late-original-fenced's last retry, after the
// retry that took the key over), a value that differs a wrong answer. A
// verdict that cannot record returns such a difference for its caller to
// record (S8's lateRefusalVerdict); where the question is only whether a
// retry is a replay at all, replayed.
func (t *T) replayOfAnother2xx(sent string, first, r Response, whose, expected string) error {
	d := ownAnswerMismatch(first, r, whose)
	if d == "" {
		return nil
	}
	err := t.Harmful(replayHarm(first, r), sent, r.String()+"\n"+d, expected)
	if r.Err != nil {
		return err
	}
	return t.note(err)
}

// firstGiven says what a replay of first, an answer told its payment ran
// in another 2xx than 201, must be: that answer again.
func firstGiven(first Response) string {
	return fmt.Sprintf("stored answer as it was first given (%d, the same JSON value)", first.Status)
}

// sameTold reports whether a and b both tell their clients that op ran
// (toldRan) and name one operation: the second replays the first, in
// whichever 2xx each was told. sameOp is the same question for checks
// that count 201s alone (stages 1 and 6's claims).
func sameTold(op string, a, b Response) bool {
	return toldRan(a, op) && toldRan(b, op) && answerID(a) == answerID(b)
}

// sentOp is the op req's body names in its metadata, "" if none: the
// operation whose run an answer to req can tell of.
func sentOp(req Request) string { return answerOp(Response{Body: []byte(req.Body)}) }

// toldSentRan reports whether r tells req's client that req ran: toldRan
// with the op req's body names; for a body that names none, a 201 or
// another 2xx naming an operation that has no op either.
func toldSentRan(r Response, req Request) bool {
	if op := sentOp(req); op != "" {
		return toldRan(r, op)
	}
	return r.Is(201, "") || (success(r) && answerID(r) != "" && answerOp(r) == "")
}

// sameOp reports whether a and b are both 201s naming one operation: the
// second replays the first, faithfully or not.
func sameOp(a, b Response) bool {
	return a.Is(201, "") && b.Is(201, "") && answerID(a) == answerID(b)
}

// replayed reports whether r replays first, the answer that told its
// client the operation ran: both 2xx naming one operation. A replay is
// the first answer again, status included (stage 4 on); one whose status
// is not the one the server first gave (a 201 replaying an execution
// answered 200, or the reverse) is a contract difference, gathered in
// statuses with sent and expected, and still counts as the replay it is:
// the client is told its own operation ran, and the books judge the
// money. Unlike replayOfAnother2xx it compares no body: stage 2's checks
// ask whether the key still names the first request (a 409 duplicate or
// a replay of it), and a replay's value is stage 4's question.
func replayed(statuses *otherStatuses, sent string, first, r Response, expected string) bool {
	if !success(first) || !success(r) || answerID(first) == "" || answerID(r) != answerID(first) {
		return false
	}
	if r.Status != first.Status {
		statuses.n++
		if statuses.n == 1 {
			statuses.sent, statuses.got = sent, r.String()
			statuses.expected = fmt.Sprintf("%s: the first answer was %d, and a replay is that answer again, status included", expected, first.Status)
		}
	}
	return true
}

// otherStatuses gathers the replays of one round answered in another
// status than the first answer (replayed): the first of them, and how
// many there were.
type otherStatuses struct {
	sent, got, expected string
	n                   int
	// retries is how many retries the round has sent so far: the
	// caller counts each one it sends.
	retries int
}

// differ records the round's replays in another status as one contract
// difference: the first of them, exactly, and how many of the retries
// sent were answered so (a round that stopped early counts the retries
// it sent, not those it would have). It records them once, however
// often it is called.
func (o *otherStatuses) differ(t *T) {
	if o.n == 0 {
		return
	}
	defer func() { o.n = 0 }()
	were := "were"
	if o.n == 1 {
		were = "was"
	}
	t.Differ(o.sent, o.got+fmt.Sprintf("\n(%d of the %d retries sent %s replayed in another status than the first answer's)", o.n, o.retries, were), o.expected)
}
