package grader

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/grader/timeline"
)

// HistoryLine is one line of a results bundle's history.jsonl: an attempt
// a check's client sent and what it got, or, when Event is set, something
// the lab observed meanwhile. The names it shares with the day replay's
// lines (op, key, method, endpoint, status, problem, error, at) mean the
// same there, so that one reader reads both files.
type HistoryLine struct {
	// Check is the ID of the check whose history the line belongs to.
	Check string `json:"check"`
	// Event is the kind of what the lab observed (an execution, a key
	// claimed, completed or released, a fault armed, a crash, a restart,
	// the clock moved); empty for an attempt.
	Event string `json:"event,omitempty"`
	// At is when the attempt left, or the event happened, since the
	// check's history began.
	At dayplan.Duration `json:"at"`
	// AttemptID names an attempt; on an event, the attempt it happened in
	// (the Lab-Attempt header the lab's events repeat), when known.
	AttemptID string `json:"attempt_id,omitempty"`
	// Client is the lane a timeline draws the attempt on ("client 3").
	Client string `json:"client,omitempty"`
	Op     string `json:"op,omitempty"`
	Key    string `json:"key,omitempty"`
	Method string `json:"method,omitempty"`
	// Endpoint is an attempt's path, or the route a key row holds.
	Endpoint string `json:"endpoint,omitempty"`
	// Customer is the customer a key row holds, when it holds one of the
	// lab's population.
	Customer string `json:"customer,omitempty"`
	// Process is, for an execution, the server process it ran in, 1 on,
	// when the check ran several on one database.
	Process int `json:"process,omitempty"`
	// Took is how long the attempt waited for its answer.
	Took    *dayplan.Duration `json:"took,omitempty"`
	Status  int               `json:"status,omitempty"`
	Problem string            `json:"problem,omitempty"`
	// Error is what the client saw instead of a response; Cut says the
	// fault transport broke the exchange on purpose.
	Error string `json:"error,omitempty"`
	Cut   bool   `json:"cut,omitempty"`
	// Sent and Got are the request and its answer, as a report writes
	// them.
	Sent string `json:"sent,omitempty"`
	Got  string `json:"got,omitempty"`
	// Count is, for an execution, which run of its operation it was,
	// and Ref the transfer or deposit it made.
	Count  int64  `json:"count,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// HistoryLines are the lines of r's history in the order they happened,
// attempts before events at the same instant; none when r kept no history
// (RunCheckRecorded keeps it whatever the check found).
func HistoryLines(r Result) []HistoryLine {
	h := r.History
	if h == nil {
		return nil
	}
	began := historyStart(h)
	lines := make([]HistoryLine, 0, len(h.Attempts)+len(h.Events))
	for _, a := range h.Attempts {
		took := dayplan.Duration(a.End.Sub(a.Start))
		lines = append(lines, HistoryLine{Check: r.Check.ID, At: dayplan.Duration(a.Start.Sub(began)), AttemptID: a.ID,
			Client: a.Client, Op: a.Op, Key: a.Key, Method: a.Method, Endpoint: a.Path, Took: &took,
			Status: a.Status, Problem: a.Problem, Error: a.Err, Cut: a.Cut, Sent: a.Sent, Got: a.Got})
	}
	for _, e := range h.Events {
		lines = append(lines, HistoryLine{Check: r.Check.ID, Event: e.Kind, At: dayplan.Duration(e.At.Sub(began)),
			AttemptID: e.Attempt, Op: e.Op, Key: e.Key, Endpoint: e.Route, Customer: e.Customer,
			Process: e.Process, Count: e.Count, Ref: e.Ref, Detail: e.Detail})
	}
	slices.SortStableFunc(lines, func(a, b HistoryLine) int { return cmp.Compare(a.At, b.At) })
	return lines
}

// historyStart is the instant of the history's first attempt or event.
func historyStart(h *timeline.History) time.Time {
	var began time.Time
	early := func(t time.Time) {
		if began.IsZero() || t.Before(began) {
			began = t
		}
	}
	for _, a := range h.Attempts {
		early(a.Start)
	}
	for _, e := range h.Events {
		early(e.At)
	}
	return began
}

// WriteHistory writes the history of every result, check after check, as
// one JSON line each (history.jsonl). It returns the first error writing
// to w.
func WriteHistory(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range results {
		for _, l := range HistoryLines(r) {
			if err := enc.Encode(l); err != nil {
				return fmt.Errorf("write the history of %s: %w", r.Check.ID, err)
			}
		}
	}
	return nil
}

// Counts are a results bundle's named counts, summed from the checks'
// findings under the day replay's names where they mean the same. A
// money finding counts the operations it names (those that executed more
// often than asked, those that never ran, or else those its evidence
// names), or one when it names none, and so does the lesser finding a
// double the books showed leads (judging.Failure's Lesser); each contract
// difference counts one.
// A request told 409 that never ran is told_duplicate alone, as in the
// replay: a money finding, never a contract difference as well.
type Counts struct {
	DoubleApplied      int `json:"double_applied"`
	MovedThoughRefused int `json:"moved_though_refused"`
	LostTransfers      int `json:"lost_transfers"`
	ToldDuplicate      int `json:"told_duplicate"`
	BalanceMismatches  int `json:"balance_mismatches"`
	WrongAnswers       int `json:"wrong_answers"`
	NoUsableAnswer     int `json:"no_usable_answer"`
	StuckInProgress    int `json:"stuck_in_progress"`
	CrossCustomerLeaks int `json:"cross_customer_leaks"`
	LostUpdates        int `json:"lost_updates"`
	NotPosted          int `json:"not_posted"`
	PostedTwice        int `json:"posted_twice"`
	PostedUnexecuted   int `json:"posted_unexecuted"`
	// ContractDifferences counts the differences from the contract the
	// failures found (a status, a problem type, a header), the money
	// still right: the one a failure without a harm gives as its
	// evidence, and each it lists after its evidence.
	ContractDifferences int `json:"contract_differences"`
}

// CountFindings sums the findings of results. A harm it has no count for
// is an error, so that a new harm cannot go uncounted.
func CountFindings(results []Result) (Counts, error) {
	var c Counts
	for _, r := range results {
		var f *judging.Failure
		if !errors.As(r.Err, &f) {
			continue
		}
		for d := f.Contract; d != nil; d = d.Contract {
			c.ContractDifferences++
		}
		if f.Harm == "" {
			c.ContractDifferences++
			continue
		}
		// A double the books showed leads; the check's own finding, which
		// it leads, counts as well.
		for m := f; m != nil; m = m.Lesser {
			n := c.of(m.Harm)
			if n == nil {
				return Counts{}, fmt.Errorf("count the findings of %s: no count for the harm %q", r.Check.ID, m.Harm)
			}
			*n += max(findingCount(m), 1)
		}
	}
	return c, nil
}

// of is the count a harm adds to, or nil.
func (c *Counts) of(h judging.Harm) *int {
	switch h {
	case judging.Double:
		return &c.DoubleApplied
	case judging.MovedThoughRefused:
		return &c.MovedThoughRefused
	case judging.Lost:
		return &c.LostTransfers
	case judging.ToldDuplicate:
		return &c.ToldDuplicate
	case judging.Unbalanced:
		return &c.BalanceMismatches
	case judging.WrongAnswer:
		return &c.WrongAnswers
	case judging.NoUsableAnswer:
		return &c.NoUsableAnswer
	case judging.StuckKey:
		return &c.StuckInProgress
	case judging.Leak:
		return &c.CrossCustomerLeaks
	case judging.LostUpdate:
		return &c.LostUpdates
	case judging.NotPosted:
		return &c.NotPosted
	case judging.PostedTwice:
		return &c.PostedTwice
	case judging.PostedUnexecuted:
		return &c.PostedUnexecuted
	}
	return nil
}

// findingCount is how many things a money finding is about: its Count,
// where it has one, the transfers a core ledger finding counts (Refs),
// where it names them, or else its operations (findingOps).
func findingCount(f *judging.Failure) int {
	if f.Count > 0 {
		return f.Count
	}
	if len(f.Refs) > 0 {
		return len(f.Refs)
	}
	return len(findingOps(f))
}

// findingOps are the operations a money finding is about: those it
// names as executed too often or never, or else those its evidence names.
func findingOps(f *judging.Failure) []string {
	var ops []string
	for _, op := range append(slices.Clone(f.Excess), f.Missing...) {
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return namedOps(f)
	}
	return ops
}
