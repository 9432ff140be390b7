package grader

import (
	"fmt"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/labctl"
	"idemlab/kit/retry"
)

// inProgressRetries is how many more times a check sends a request that
// was told 409 request-in-progress before it takes that answer as what
// the client finally knows. A retry can arrive just as its key completes
// and be told, rightly, to come back: a client that follows the retry
// policy does, and so does the check, a bounded number of times.
const inProgressRetries = 3

// inProgressPolicy is the retry policy of docs/api.md with a shorter
// backoff: never less than the server's Retry-After, full jitter up to
// 100 ms, 200 ms, 400 ms. A server that answers Retry-After: 1 is waited
// 1s before each retry, as it asked.
var inProgressPolicy = retry.Policy{Base: 100 * time.Millisecond, Cap: time.Second}

// untilAnswered sends req, whose answer after sent was r, again while it
// is told to come back (toldToComeBack), waiting before each retry as the
// retry policy does, inProgressRetries times at most. It returns the last
// answer, and for the story the retries it sent ("" when r told it
// nothing of the kind). A 409 with no problem type (a plain-text 409) is a
// contract difference, the 409 request-in-progress without its type: the
// first the check meets is recorded (expected is what the retry should
// have been told), and the client comes back as after a 409
// request-in-progress; what it is told in the end, the books and the key
// table judge, not the missing type.
func (t *T) untilAnswered(req Request, r Response, sent, expected string) (Response, string) {
	// asked is the story up to the request r answers.
	first, asked, story := r, sent, ""
	for n := 1; ; n++ {
		if untypedConflict(r) {
			t.differUntyped(asked, r, expected)
		}
		if n > inProgressRetries || !toldToComeBack(r) {
			return r, story
		}
		wait := inProgressPolicy.Wait(n, t.Rand(), retry.Answer{RetryAfter: retry.RetryAfter(r.Header)})
		pace := time.NewTimer(wait)
		select {
		case <-pace.C:
		case <-t.ctx.Done():
			pace.Stop()
			return r, story
		}
		again := fmt.Sprintf("\n  told to wait, it retries after %v", wait.Round(time.Millisecond))
		asked = sent + "  →  " + first.Short() + story + again
		r = t.Do(req)
		story += again + "  →  " + r.Short()
	}
}

// toldToComeBack reports whether r tells a client to send its request
// again later: 409 request-in-progress, or a 409 with no problem type,
// which a client cannot tell from one (untilAnswered).
func toldToComeBack(r Response) bool { return waitAnswer(r) || untypedConflict(r) }

// untypedWhy is why a plain-text 409 is a contract difference, after what
// the check expected.
const untypedWhy = "a 409 names its problem type: request-in-progress (with Retry-After) while the key's request is still running, and a client that follows the retry policy stops at a 409 without one, which tells it neither to come back nor what became of its request"

// differUntyped records r, a plain-text 409 answered after sent, as a
// contract difference, once in a check: every retry so answered is the
// same difference, and the check judges what the client is told in the
// end.
func (t *T) differUntyped(sent string, r Response, expected string) {
	for _, d := range *t.differences {
		if strings.HasSuffix(d.Expected, untypedWhy) {
			return
		}
	}
	t.Differ(sent, r.String(), expected+"; "+untypedWhy)
}

// stillInProgress judges a retry of key that is still told to come back
// (toldToComeBack) after untilAnswered, whose operation executed:
// what the client knows when it stops retrying (toldToWait).
func (t *T) stillInProgress(key, sent string, r Response, expected string) error {
	return t.toldToWait(key, sent, r, expected, waitHarms{
		stuck: "its request has ended, and its key still says it is in progress",
		done:  "its request has ended, its key is not in progress, and every retry is still told to wait: the client never learns that its money moved",
	})
}

// waitHarms says why a client told to wait until it stopped was harmed,
// for toldToWait's failure: stuck when its key is still in progress, done
// when it is not. Either may be empty when the check's expectation says
// it all.
type waitHarms struct{ stuck, done string }

// toldToWait judges a client of key that stops retrying after sent, its
// last retry still told to come back (r: 409 request-in-progress, or a
// plain-text 409), whatever its operation did: the books have been reconciled first. expected is what
// the check expected instead. Whether the key is stuck is the key
// table's to say, not the 409's (judging.ToldToWait): a row in progress
// is a stuck key, and why.stuck says why; a row completed, or none in a
// table the lab shows whole, leaves a server that tells every retry to
// wait of its own accord and a client that never learns its outcome (no
// usable answer), and why.done says why. A table the lab does not show
// cannot say which, but either way the client never learned what became
// of its operation: no usable answer, the lesser of the two, which the
// client's answers show alone, and the failure says so.
func (t *T) toldToWait(key, sent string, r Response, expected string, why waitHarms) error {
	st, err := t.State()
	if err != nil {
		return err
	}
	return t.toldToWaitIn(st, key, sent, r.String()+"\nthen /lab/state: ", expected, why)
}

// toldToWaitIn is toldToWait on st, the lab state the check has read
// already: got is what the client was told and what st shows besides the
// key's rows, which follow it.
func (t *T) toldToWaitIn(st labctl.State, key, sent, got, expected string, why waitHarms) error {
	harm, rows, seen := judging.ToldToWait(st, key)
	got += rows
	switch {
	case !seen:
		got += ", so whether the key is also stuck cannot be seen"
		return t.Harmful(harm, sent, got, expected+"; "+unseenWait)
	case harm == judging.StuckKey:
		return t.Harmful(harm, sent, got, joinWhy(expected, why.stuck))
	}
	return t.Harmful(harm, sent, got, joinWhy(expected, why.done))
}

// unseenWait is why a client told to wait until it stopped, whose key the
// lab's key table does not show, is judged no usable answer.
const unseenWait = "instead every retry was told to wait, and the client stopped without ever learning what became of its operation: no usable answer (were its key still in progress, it would be a stuck key besides, which the key table would show)"

// joinWhy is a check's expectation with why it was harmed, if it says.
func joinWhy(expected, why string) string {
	if why == "" {
		return expected
	}
	return expected + "; " + why
}
