package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/kit/bank"
	"idemlab/kit/stage"
	sol0 "idemlab/solutions/stage0"
	sol5 "idemlab/solutions/stage5"
)

// wrongs are what a wrongServer does wrong.
type wrongs struct {
	// unmark sends replays without Idempotent-Replayed; markFresh sends
	// an execution's own answer with it.
	unmark, markFresh bool
	// recompute answers a replay with its balance_after computed anew;
	// others answers it with another operation's result (the day's
	// first, or its second for the first's own replays).
	recompute, others bool
	// respell answers a replay with its stored body decoded and encoded
	// again: the same members and values, in another order.
	respell bool
}

// wrongServer changes a lab server's answers to its customers on their
// way back: with the server under it, it stands for a server that does
// what its wrongs say.
type wrongServer struct {
	wrongs
	base  http.RoundTripper
	mu    sync.Mutex
	fresh []string // the first two executions' answers of the day
}

func (w *wrongServer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || strings.HasPrefix(req.URL.Path, "/lab/") || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		body = w.replay(body)
		if w.unmark {
			resp.Header.Del("Idempotent-Replayed")
		}
	} else {
		w.mu.Lock()
		if len(w.fresh) < 2 {
			w.fresh = append(w.fresh, string(body))
		}
		w.mu.Unlock()
		if w.markFresh {
			resp.Header.Set("Idempotent-Replayed", "true")
		}
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// replay is the body a replay of stored gets.
func (w *wrongServer) replay(stored []byte) []byte {
	var t map[string]any
	if err := json.Unmarshal(stored, &t); err != nil {
		return stored
	}
	if w.others {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, other := range w.fresh {
			var o map[string]any
			if json.Unmarshal([]byte(other), &o) == nil && o["id"] != t["id"] {
				return []byte(other)
			}
		}
	}
	if w.respell {
		if out, err := json.Marshal(t); err == nil {
			return out
		}
	}
	if b, ok := t["balance_after"].(float64); ok && w.recompute {
		t["balance_after"] = b - 1
		out, err := json.Marshal(t)
		if err == nil {
			return out
		}
	}
	return stored
}

// reconcileThrough replays plan against factory's server seen through w
// and reconciles the day.
func reconcileThrough(t *testing.T, factory stage.Factory, plan *dayplan.Plan, wrong wrongs) replay.DayReconciliation {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	w := &wrongServer{wrongs: wrong, base: tr}
	run, err := replay.InProcess(context.Background(), factory, plan, nil, replay.Options{Base: w})
	if err != nil {
		t.Fatal(err)
	}
	return replay.ReconcileDay(run.Result)
}

// TestReplay_VerdictDoesNotReadTheMarker: whether an answer is an
// execution's is read from the books, so Idempotent-Replayed, missing
// from the replays or put on fresh executions, moves no count. It catches
// a reconciliation that takes every unmarked 2xx for an execution's
// answer (a server answering replays with another operation's result
// would pass by leaving the marker off), or an edit marked as replayed
// for one that never executed (the money moved twice would be counted at
// the original amount).
func TestReplay_VerdictDoesNotReadTheMarker(t *testing.T) {
	plan := badDay(t, 4)
	for _, c := range []struct {
		name    string
		factory stage.Factory
		plain   wrongs
		changed wrongs
	}{
		{"replays unmarked", sol5.New, wrongs{}, wrongs{unmark: true}},
		{"another operation's result, unmarked", sol5.New, wrongs{others: true}, wrongs{others: true, unmark: true}},
		{"fresh executions marked as replays", sol0.New, wrongs{}, wrongs{markFresh: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain := reconcileThrough(t, c.factory, plan, c.plain)
			changed := reconcileThrough(t, c.factory, plan, c.changed)
			if plain.Counts != changed.Counts || plain.Valid != changed.Valid {
				t.Errorf("the marker moved the verdict:\nas the server marks: valid %v %+v\nchanged: valid %v %+v", plain.Valid, plain.Counts, changed.Valid, changed.Counts)
			}
			if c.plain.others && plain.Counts.WrongAnswers == 0 {
				t.Errorf("counts %+v: replays of another operation's result are wrong answers", plain.Counts)
			}
		})
	}
}

// TestReplay_RecomputedReplayIsAWrongAnswer: a server that computes a
// replay anew (balance_after is the balance now) and leaves the marker
// off gives its clients an answer that is not their execution's. It
// catches a reconciliation that takes an unmarked 2xx for an execution's
// answer.
func TestReplay_RecomputedReplayIsAWrongAnswer(t *testing.T) {
	rc := reconcileThrough(t, sol5.New, badDay(t, 4), wrongs{recompute: true, unmark: true})
	if rc.Valid || rc.Counts.WrongAnswers == 0 {
		t.Errorf("valid %v, counts %+v: recomputed replays are wrong answers", rc.Valid, rc.Counts)
	}
	if rc.Counts.DoubleApplied != 0 || rc.Counts.BalanceMismatches != 0 {
		t.Errorf("counts %+v: the money itself is right", rc.Counts)
	}
}

// TestReplay_RespelledReplayIsNoWrongAnswer: a server that stores its
// answer decoded and encodes it again for each replay (its members sorted)
// tells every client the result of its own execution, in other bytes. It
// catches a reconciliation that judges the client's knowledge by the
// bytes: the replays are mismatched (a contract difference), and no
// client was given a wrong answer, which is a money finding.
func TestReplay_RespelledReplayIsNoWrongAnswer(t *testing.T) {
	rc := reconcileThrough(t, sol5.New, badDay(t, 4), wrongs{respell: true})
	if rc.Counts.MismatchedReplays == 0 {
		t.Errorf("counts %+v: respelled replays differ from the original answer", rc.Counts)
	}
	if rc.Counts.WrongAnswers != 0 || rc.Counts.NoUsableAnswer != 0 {
		t.Errorf("counts %+v: a respelled replay tells its client its own result", rc.Counts)
	}
}

// editReplayer stands for a server that replays its stored answer to a
// clerk's edit (no fingerprint) and whose answers to the originals of
// edited operations the network loses, below what the replay records: it
// sends an edit on as its original's request, so that the server under it
// replays the original's answer, and throws away every answer to an
// original of keys.
type editReplayer struct {
	base  http.RoundTripper
	keys  map[string]bool // the keys of the edited operations
	mu    sync.Mutex
	first map[string][]byte // the first body sent under each key
}

func (e *editReplayer) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("Idempotency-Key")
	if !e.keys[key] || req.Body == nil {
		return e.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	first, seen := e.first[key]
	if !seen {
		e.first[key], first = body, body
	}
	e.mu.Unlock()
	original := bytes.Equal(body, first)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(first)), int64(len(first))
	resp, err := e.base.RoundTrip(req)
	if err != nil || !original {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset by peer (the answer to the original was lost)")
}

// TestReplay_EditTakenForTheExecutionIsNot: on a day of transfers and on
// one of deposits, each edited operation's original executes and every
// answer to it is lost; the edit, replayed the original's answer, is the
// first to name that execution. The books hold it at the original's
// amount: the original executed once and the edit never did, so the
// balances add up, nothing moved twice, what the deposits brought in is
// their original amounts, and the edit's 201 is a wrong answer. It
// catches a reconciliation that decides from the order of the answers
// that the edit executed (it would expect the edited amount to have moved
// and find every such account off by the difference), and one that takes
// the edit's 201 for its own.
func TestReplay_EditTakenForTheExecutionIsNot(t *testing.T) {
	for _, c := range []struct {
		name        string
		depositRate float64
	}{{"transfers", 0}, {"deposits", 1}} {
		t.Run(c.name, func(t *testing.T) {
			p := dayplan.DefaultParams(11, 60)
			p.FaultRate, p.RespellRate, p.DoubleClickRate, p.LateRetryRate, p.DepositRate, p.EditRate = 0, 0, 0, 0, c.depositRate, 0.3
			plan, err := dayplan.Generate(11, p)
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string]bool{}
			var deposited int64
			for _, op := range plan.Ops {
				if op.Fate.EditedAmount != 0 {
					keys[op.Key] = true
				}
				if op.Endpoint == dayplan.Deposits {
					deposited += op.Amount
				}
			}
			if len(keys) == 0 {
				t.Fatal("the day has no edits")
			}
			tr := &http.Transport{DisableCompression: true}
			defer tr.CloseIdleConnections()
			run, err := replay.InProcess(context.Background(), sol5.New, plan, nil,
				replay.Options{Base: &editReplayer{base: tr, keys: keys, first: map[string][]byte{}}})
			if err != nil {
				t.Fatal(err)
			}
			rc := replay.ReconcileDay(run.Result)
			c := rc.Counts
			if c.BalanceMismatches != 0 || c.DoubleApplied != 0 || c.MoneyMovedTwice != 0 || len(rc.Notes) != 0 {
				t.Errorf("counts %+v, notes %v: each original executed once and no edit did", c, rc.Notes)
			}
			if rc.Money.Deposited != deposited || !rc.Money.Conserved {
				t.Errorf("deposited %s won, conserved %v: the deposits brought in their original amounts, %s won", bank.FormatWon(rc.Money.Deposited), rc.Money.Conserved, bank.FormatWon(deposited))
			}
			if c.ExecutedOnce != len(plan.Ops) || c.NoUsableAnswer != len(keys) || c.WrongAnswers != len(keys) || c.EditsAnsweredWrong != len(keys) {
				t.Errorf("counts %+v: %d operations executed once, %d of them without a usable answer and with an edit given a wrong answer",
					c, len(plan.Ops), len(keys))
			}
			if got := knownCounts(t, rc); got != executedOps(run.Result) {
				t.Errorf("the report's lines of what each client of an executed operation knows add up to %d, for %d operations executed", got, executedOps(run.Result))
			}
		})
	}
}
