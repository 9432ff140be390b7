package replay

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/grader/dayplan"
	"idemlab/kit/bank"
	"idemlab/kit/canonical"
	"idemlab/kit/problem"
)

func finalAttempt(as []Attempt) *Attempt {
	if len(as) == 0 {
		return nil
	}
	return &as[len(as)-1]
}

// What a client finally knows of its operation.
const (
	knowsNothing  = iota // no usable answer
	knowsOriginal        // the original answer
	knowsWrong           // a 2xx that is not the execution's
	knowsStuck           // the key was in progress when it gave up
)

// resourceOf is the id of the transfer or deposit a response body names
// ("" for none).
func resourceOf(body string) string {
	var named struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(body), &named) != nil {
		return ""
	}
	return named.ID
}

// resources remembers the resource each response body names, so that
// the questions asked of one operation's answers (firstAnswers, twice,
// then mismatchedReplay) decode each body once: in the reconciliation,
// which runs after the day's last answer, decoding them was most of the
// time it took. ReconcileDay empties it for each operation.
type resources map[string]string

// of is resourceOf(body), decoded once.
func (r resources) of(body string) string {
	id, ok := r[body]
	if !ok {
		id = resourceOf(body)
		r[body] = id
	}
	return id
}

// firstAnswers returns, for each resource the books hold for an operation
// (holds) that a 2xx names, the attempt whose answer named it first: the
// answer its execution produced, seen by the client or lost on the way
// back. When the server crashed before it answered, the first replay it
// sent stands for the stored answer. Idempotent-Replayed plays no part:
// a replay is whatever names a resource after its first answer, and it
// must repeat that answer byte for byte.
func firstAnswers(ids resources, holds func(id string) bool, subs ...[]Attempt) map[string]Attempt {
	first := map[string]Attempt{}
	for _, as := range subs {
		for _, a := range as {
			s, ok := a.served()
			if !ok || s.Status < 200 || s.Status >= 300 {
				continue
			}
			id := ids.of(s.Response)
			if id == "" || !holds(id) {
				continue
			}
			// Attempts built by hand are heard in the order given.
			if f, seen := first[id]; !seen || s.heard < f.heardOf() {
				a.Response, a.heard = s.Response, s.heard
				first[id] = a
			}
		}
	}
	return first
}

// heardOf is when the server's answer to a came back, among the replay's.
func (a Attempt) heardOf() uint64 {
	if a.Unseen != nil {
		return a.Unseen.heard
	}
	return a.heard
}

// clientKnows says what the client of an executed operation ends up
// knowing from its submissions (the original and the double click, one
// person's two requests), and the final answer that says so. The
// executions' answers are the first answers that named each execution
// the books hold for the operation (firstAnswers); a final 2xx that says
// anything else is a wrong answer (another operation's result, a
// recomputed one), whatever else the client holds. What an answer says is
// its JSON value (its RFC 8785 form): a replay whose members come in
// another order, or whose numbers are spelled otherwise, tells its client
// the same result, and differs from the original only in its bytes, which
// mismatched_replays counts.
func clientKnows(ids resources, holds func(id string) bool, subs ...[]Attempt) (int, Attempt) {
	executed := map[string]bool{}
	for _, a := range firstAnswers(ids, holds, subs...) {
		executed[saying(a.Response)] = true
	}
	knows, why := knowsNothing, Attempt{}
	for _, as := range subs {
		a := finalAttempt(as)
		switch {
		case a == nil:
		case a.Succeeded() && !executed[saying(a.Response)]:
			return knowsWrong, *a
		case a.Succeeded():
			knows, why = knowsOriginal, *a
		case knows == knowsNothing && a.GaveUp && a.Problem == problem.RequestInProgress.URI():
			knows, why = knowsStuck, *a
		case knows == knowsNothing && why.Op == "":
			why = *a
		}
	}
	return knows, why
}

// saying is what a response body says (canonical.Form): its RFC 8785
// form if it is JSON, its bytes otherwise.
func saying(body string) string { return string(canonical.Form([]byte(body))) }

// opAmount names the executions of one operation that moved one amount.
type opAmount struct {
	op     string
	amount int64
}

// movedByAmount counts the books' transfers and deposits by operation and
// amount, once for the whole day: an edit's executions are looked up in
// it.
func movedByAmount(res *Result) map[opAmount]int64 {
	moved := make(map[opAmount]int64, len(res.Transfers)+len(res.Deposits))
	for _, books := range []map[string]bank.Executed{res.Transfers, res.Deposits} {
		for _, x := range books {
			moved[opAmount{x.Op, x.Amount}]++
		}
	}
	return moved
}

// editExecutions counts the executions of op's edited resubmission (the
// same key, an edited amount) in the books (moved, from movedByAmount):
// the transfers or deposits of op that moved the edited amount, whatever
// the answers said and in whichever order they were heard (an original
// whose answer was lost, then replayed to the edit, is still the
// original's).
func editExecutions(op *dayplan.Op, moved map[opAmount]int64) int64 {
	if op.Fate.EditedAmount == 0 {
		return 0
	}
	return moved[opAmount{op.Op, op.Fate.EditedAmount}]
}

// stuck reports whether a submission ended its retry horizon told its key
// was in progress, and none ended with an answer.
func stuck(subs ...[]Attempt) bool {
	in := false
	for _, as := range subs {
		a := finalAttempt(as)
		switch {
		case a == nil:
		case a.GaveUp && a.Problem == problem.RequestInProgress.URI():
			in = true
		case a.Status != 0:
			return false
		}
	}
	return in
}

// allowedFinal reports whether the contract allows a as the answer that
// ends a submission of this kind, at some stage.
func allowedFinal(kind string, a Attempt) bool {
	switch {
	case a.Succeeded():
		return true
	case a.Problem == problem.InsufficientFunds.URI(), a.Problem == problem.DailyLimitExceeded.URI():
		return true
	case a.Problem == problem.DuplicateRequest.URI():
		// An edit is another request under the same key: telling the
		// clerk it is a duplicate says the edited amount was sent.
		return kind != SubmitEdit
	case a.Problem == problem.IdempotencyKeyReused.URI():
		return kind == SubmitEdit
	}
	return false
}

// mismatchedReplay reports whether a replay differs from the answer it
// replays: a 2xx naming an execution the books hold for the operation,
// with other bytes than that execution's first answer (firstAnswers); or
// a 422 marked as a replay with other bytes than the first answer the
// client saw. A refusal names no execution: only its marker says it is a
// replay, and a server that leaves the marker off answers anew.
func mismatchedReplay(ids resources, holds func(id string) bool, subs ...[]Attempt) bool {
	executions := firstAnswers(ids, holds, subs...)
	var first string
	seen := false
	for _, as := range subs {
		for _, a := range as {
			if a.Error != "" || !(a.Succeeded() || a.Status == 422) {
				continue
			}
			if e, ok := executions[ids.of(a.Response)]; ok && a.Succeeded() && a.Response != e.Response {
				return true
			}
			if !seen {
				first, seen = a.Response, true
				continue
			}
			if a.Status == 422 && a.Replayed && a.Response != first {
				return true
			}
		}
	}
	return false
}

// answer says in a few words what came back.
func (a Attempt) answer() string {
	switch {
	case a.Error != "" && a.GaveUp:
		return "no answer, and the retry horizon was over (" + a.Error + ")"
	case a.Error != "":
		return "no answer (" + a.Error + ")"
	}
	s := fmt.Sprint(a.Status)
	if a.Problem != "" {
		s += " " + a.Problem
	}
	if a.Replayed {
		s += " (replayed)"
	}
	if a.GaveUp {
		s += ", and the retry horizon was over"
	}
	return s
}

// short is an attempt's answer in a story: its failure point if it met
// one, and whether it was respelled.
func (a Attempt) short() string {
	s := a.answer()
	if a.Fault != "" {
		s = string(a.Fault)
	}
	if a.Respelled {
		s += " (respelled)"
	}
	return s
}

// opStory tells an operation's attempts in one line.
func opStory(op *dayplan.Op, subs map[string][]Attempt) string {
	var b strings.Builder
	if op.Endpoint == dayplan.Deposits {
		fmt.Fprintf(&b, "deposit of %s won", bank.FormatWon(op.Amount))
	} else {
		fmt.Fprintf(&b, "transfer of %s won", bank.FormatWon(op.Amount))
	}
	for _, kind := range []string{SubmitOriginal, SubmitDoubleClick, SubmitEdit, SubmitLate} {
		as := subs[kind]
		if len(as) == 0 {
			continue
		}
		fmt.Fprintf(&b, "; %s:", kind)
		// A run of attempts with the same answer is told once:
		// "#2-#247 409 /problems/request-in-progress".
		for i := 0; i < len(as); {
			s := as[i].short()
			j := i + 1
			for j < len(as) && as[j].short() == s {
				j++
			}
			if j-i > 2 {
				fmt.Fprintf(&b, " #%d-#%d %s", as[i].N, as[j-1].N, s)
			} else {
				for k := i; k < j; k++ {
					fmt.Fprintf(&b, " #%d %s", as[k].N, s)
				}
			}
			i = j
		}
	}
	return b.String()
}

// WriteReport writes the reconciliation for a person: the counts in plain
// words, then up to examples findings of each kind. Where a kind has
// more, the line that says how many more adds all, which says where the
// whole list is (a results.json written, or how to have one written).
