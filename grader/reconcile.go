package grader

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/kit/labctl"
)

// NewBooks returns books for accounts that all opened with opening won
// and ops that have not run yet. The check keeps them: once it has run,
// whatever its verdict, an op that executed more often than its books
// allow is reported as a double (see moneyFirst).
func (t *T) NewBooks(opening int64, accounts ...string) *judging.Books {
	b := judging.NewBooks(opening, accounts...)
	t.books = append(t.books, b)
	return b
}

// Reconcile compares the target's lab state with the books. It returns a
// failure that shows what was sent and answered (the story so far) and
// every difference, or nil when they agree. An op run twice is named
// first: that is the double transfer.
func (t *T) Reconcile(sent, answers string, want *judging.Books) error {
	st, err := t.State()
	if err != nil {
		return err
	}
	return reconcileState(t, st, sent, answers, want)
}

func reconcileState(t *T, st labctl.State, sent, answers string, want *judging.Books) error {
	var got, expected, excess, missing []string
	var harm judging.Harm
	// The worst harm names the failure: a double before money that moved
	// though refused, before a lost operation, before books that differ.
	worse := func(h judging.Harm) {
		rank := map[judging.Harm]int{judging.Double: 4, judging.MovedThoughRefused: 3, judging.Lost: 2, judging.Unbalanced: 1}
		if rank[h] > rank[harm] {
			harm = h
		}
	}
	ops := sortedKeys(want.Executions)
	for _, op := range ops {
		if n, w := st.Executions[op], want.Executions[op]; n != w {
			got = append(got, fmt.Sprintf("op %s %s", op, history.Executed(n)))
			expected = append(expected, fmt.Sprintf("op %s %s", op, history.Executed(w)))
			switch {
			case n > w && w > 0:
				worse(judging.Double)
			case n > w:
				worse(judging.MovedThoughRefused)
			default:
				worse(judging.Lost)
			}
			if n > w {
				excess = append(excess, op)
			} else {
				missing = append(missing, op)
			}
		}
	}
	balances := map[string]int64{}
	for _, a := range st.Accounts {
		balances[a.ID] = a.Balance
	}
	for _, id := range sortedKeys(want.Balances) {
		if balances[id] != want.Balances[id] {
			got = append(got, fmt.Sprintf("balance of %s is %d", id, balances[id]))
			expected = append(expected, fmt.Sprintf("balance of %s is %d", id, want.Balances[id]))
			worse(judging.Unbalanced)
		}
	}
	if len(got) == 0 {
		return nil
	}
	if answers != "" {
		answers += "\n"
	}
	err := t.Harmful(harm, sent, "%sthen /lab/state: %s", strings.Join(expected, "; "), answers, strings.Join(got, "; "))
	err.(*judging.Failure).Excess, err.(*judging.Failure).Missing = excess, missing
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Summarize describes many answers in one line, most frequent first:
// "1× 201, 31× 409 /problems/duplicate-request".
func Summarize(rs []Response) string {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Short()]++
	}
	names := sortedKeys(counts)
	sort.SliceStable(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d× %s", counts[n], n)
	}
	return strings.Join(parts, ", ")
}

// Short describes a response by its status, problem type and replay
// marker, without the body.
func (r Response) Short() string {
	if r.Err != nil {
		return "no response (" + r.Err.Error() + ")"
	}
	s := fmt.Sprintf("%d", r.Status)
	if p := r.Problem(); p != "" {
		s += " " + p
	}
	if r.Replayed() {
		s += " (replayed)"
	}
	return s
}

// Replayed reports whether the response carries Idempotent-Replayed: true.
func (r Response) Replayed() bool {
	return r.Err == nil && r.Header.Get("Idempotent-Replayed") == "true"
}

// ServerFailed reports whether no answer came back or the answer is a 5xx:
// the client cannot tell whether its money moved.
func (r Response) ServerFailed() bool { return r.Err != nil || r.Status >= 500 }

// Is reports whether the response has the status and, when ptype is not
// empty, the problem type.
func (r Response) Is(status int, ptype string) bool {
	return r.Err == nil && r.Status == status && (ptype == "" || r.Problem() == ptype)
}

// pollEvery is how often WaitFor looks again.
const pollEvery = 3 * time.Millisecond

// WaitFor polls cond until it holds or d has passed, and reports whether
// it held. A check waits for an event this way, never by sleeping a
// guessed duration.
func (t *T) WaitFor(d time.Duration, cond func() (bool, error)) (bool, error) {
	return judging.WaitFor(t.ctx, d, pollEvery, cond)
}
