package grader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
	"idemlab/solutions/stage3"
	"idemlab/solutions/stage4"
	"idemlab/solutions/stage6"
	"idemlab/solutions/stage8"
)

// inProgressNow is a 409 request-in-progress without Retry-After: the
// check comes back after the retry policy's backoff alone (up to a few
// hundred ms), not after the second a Retry-After asks for.
func inProgressNow(w http.ResponseWriter, _ *http.Request) {
	status, body := problem.Marshal(problem.New(problem.RequestInProgress, "the original is still being processed"))
	w.Header().Set("Content-Type", problem.ContentType)
	w.WriteHeader(status)
	w.Write(body)
}

// behind409 runs check id against the solution newStage builds (of
// stage n), whose retries of POST /transfers are answered 409
// request-in-progress as many times as times says (0: every time), and
// returns its error.
func behind409(t *testing.T, id string, newStage stage.Factory, n, times int) error {
	t.Helper()
	return behind(t, id, newStage, n, times, inProgressNow)
}

// behind is behind409 with the retries answered by answer.
func behind(t *testing.T, id string, newStage stage.Factory, n, times int, answer http.HandlerFunc) error {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	subject := grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: newStage}
	return grader.RunCheck(context.Background(), subject, c, 7, retriesAnsweredBy(t, newStage, times, answer)).Err
}

// harmOf returns err's failure, and fails t unless it is one with harm.
func harmOf(t *testing.T, err error, harm judging.Harm) *judging.Failure {
	t.Helper()
	var f *judging.Failure
	if !errors.As(err, &f) {
		t.Fatalf("every retry told to wait: the check did not fail: %v", err)
	}
	if f.Harm != harm {
		t.Errorf("harm %q, want %q: %s", f.Harm, harm, f.Got)
	}
	return f
}

// A retry told 409 request-in-progress once, as one that arrives just as
// its key completes can be, comes back as the retry policy says and is
// judged on what it is told then: the stored answer, and the check
// passes. Told so on every retry, the client stops without its answer,
// and the key table says which harm that is: the key's row is completed
// (the original executed, or its refusal is stored), so the server tells
// every retry to wait of its own accord: no usable answer. Before, the
// first 409 was the verdict, and then a refused transfer's 409 alone made
// a stuck key.
func TestInProgress_ARetryToldToWaitOnceComesBack(t *testing.T) {
	for _, tc := range []struct {
		id   string
		harm judging.Harm
	}{
		{"S1.sequential-retry", judging.NoUsableAnswer},
		{"S1.key-forms", judging.NoUsableAnswer},
		{"S4.insufficient-funds-replayed", judging.NoUsableAnswer},
	} {
		t.Run(tc.id+"/once", func(t *testing.T) {
			if err := behind409(t, tc.id, stage4.New, 4, 1); err != nil {
				t.Errorf("a retry told to wait once, then answered: %v", err)
			}
		})
		t.Run(tc.id+"/always", func(t *testing.T) {
			f := harmOf(t, behind409(t, tc.id, stage4.New, 4, 0), tc.harm)
			if !strings.Contains(f.Sent, "told to wait, it retries after") {
				t.Errorf("the story does not show the retries after the 409:\n%s", f.Sent)
			}
		})
	}
}

// plainConflict is a 409 without a problem type, as http.Error writes
// one: the 409 request-in-progress a server forgot to type.
func plainConflict(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "conflict", http.StatusConflict)
}

// A retry answered a plain-text 409 is a contract difference (a 409
// names its problem type), recorded once, and every check that retries
// comes back as after a 409 request-in-progress: told so once, then its
// stored answer (or 409 duplicate-request), the client learns what became
// of its operation, a difference of contract alone; told so on every
// retry, it never learns it, and the books and the key table say which
// harm (the key completed: no usable answer). Before, S4 alone retried it:
// S1.sequential-retry judged the first plain 409 no usable answer, and
// S1.key-forms a failure of contract that stopped the check.
func TestPlainConflict_IsRetriedAndJudgedByTheBooks(t *testing.T) {
	const typed = "a 409 names its problem type"
	for _, id := range []string{"S1.sequential-retry", "S1.key-forms", "S4.insufficient-funds-replayed"} {
		for _, tc := range []struct {
			name  string
			times int
			harm  judging.Harm
		}{
			{"once", 1, ""},
			{"always", 0, judging.NoUsableAnswer},
		} {
			t.Run(id+"/"+tc.name, func(t *testing.T) {
				err := behind(t, id, stage4.New, 4, tc.times, plainConflict)
				f := harmOf(t, err, tc.harm)
				if tc.harm == "" && !strings.Contains(f.Expected, typed) {
					t.Errorf("the contract difference does not say what the 409 lacks: %s", f.Expected)
				}
				if tc.harm != "" && !strings.Contains(f.Sent, "told to wait, it retries after") {
					t.Errorf("the story does not show the retries after the plain 409:\n%s", f.Sent)
				}
				n := 0
				for d := f; d != nil; d = d.Contract {
					n += strings.Count(d.Expected, typed)
				}
				if n != 1 {
					t.Errorf("the plain 409 recorded %d times, want once:\n%v", n, err)
				}
			})
		}
	}
}

// S6.outage-mid-request: the original failed with the key store (503),
// and every retry, the lab clock moved past the lease after each, is told
// to wait. The payment never ran, and its key is still in progress: it
// cannot run, a stuck key, as S4.insufficient-funds-replayed judges a
// refused transfer's key held for good, not a contract difference.
func TestOutageMidRequest_EveryRetryToldToWaitIsAStuckKey(t *testing.T) {
	f := harmOf(t, behind409(t, "S6.outage-mid-request", stage6.New, 6, 0), judging.StuckKey)
	if strings.Contains(f.Expected, "five times over") || !strings.Contains(f.Expected, "the fifth retry was still told to wait") {
		t.Errorf("the failure does not say what the retries met:\n%s", f.Expected)
	}
}

// A client that retries a failed claim is told to wait on every retry:
// the check moves the lab clock past the lease after each retry but the
// last, as if the client waited before the next, and not after the last,
// which nothing follows (before, it moved the clock then too, and the
// story ended "then 2s of lab time" with no retry after it).
func TestOutageMidRequest_NoLabTimeAfterTheLastRetry(t *testing.T) {
	c, ok := grader.Lookup("S6.outage-mid-request")
	if !ok {
		t.Fatal("no check S6.outage-mid-request")
	}
	var mu sync.Mutex
	var events []string
	seen := map[string]bool{}
	start := serveWrapped(t, stage6.New, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/transfers":
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				retry := seen[key]
				seen[key] = true
				if retry {
					events = append(events, "retry")
				}
				mu.Unlock()
				if retry {
					inProgressNow(w, r)
					return
				}
			case r.Method == http.MethodPost && r.URL.Path == "/lab/clock":
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var move struct{ Advance string }
				if json.Unmarshal(body, &move) == nil && move.Advance != "" && move.Advance != "0s" {
					mu.Lock()
					events = append(events, "advance "+move.Advance)
					mu.Unlock()
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	subject := grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}
	f := harmOf(t, grader.RunCheck(context.Background(), subject, c, 7, start).Err, judging.StuckKey)
	mu.Lock()
	defer mu.Unlock()
	last := -1
	for i, e := range events {
		if e == "retry" {
			last = i
		}
	}
	if last < 0 || slices.ContainsFunc(events[last+1:], func(e string) bool { return strings.HasPrefix(e, "advance") }) {
		t.Errorf("the lab clock moved after the last retry: %v", events)
	}
	if strings.HasSuffix(f.Sent, "of lab time") {
		t.Errorf("the story ends with lab time no retry followed:\n%s", f.Sent)
	}
}

// behind409Keys is behind409 whose GET /lab/state, once a retry has been
// told to wait, shows the key rows keys makes of the server's: a key
// table the server left otherwise. A key told to wait that the server
// keeps no row of (its claim released) is given one, with no state, for
// keys to make: inProgressKeys shows it in progress. The original and its
// claim are seen as they are.
func behind409Keys(t *testing.T, id string, newStage stage.Factory, n int, keys func([]any) []any) error {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	var told atomic.Bool
	var toldMu sync.Mutex
	var toldKeys []string
	tell := func(w http.ResponseWriter, r *http.Request) {
		toldMu.Lock()
		if k := r.Header.Get("Idempotency-Key"); !slices.Contains(toldKeys, k) {
			toldKeys = append(toldKeys, k)
		}
		toldMu.Unlock()
		told.Store(true)
		inProgressNow(w, r)
	}
	// withTold is rows with a row, of no state, for each key told to
	// wait that has none.
	withTold := func(rows []any) []any {
		toldMu.Lock()
		defer toldMu.Unlock()
		for _, k := range toldKeys {
			if !slices.ContainsFunc(rows, func(row any) bool { m, ok := row.(map[string]any); return ok && m["key"] == k }) {
				rows = append(rows, map[string]any{"key": k})
			}
		}
		return rows
	}
	start := serveWrapped(t, newStage, func(next http.Handler) http.Handler {
		var mu sync.Mutex
		seen := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPost && r.URL.Path == "/transfers":
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				retry := seen[key]
				seen[key] = true
				mu.Unlock()
				if retry {
					tell(w, r)
					return
				}
			case r.Method == http.MethodGet && r.URL.Path == "/lab/state" && told.Load():
				stateWithKeys(t, next, w, r, func(rows []any) []any { return keys(withTold(rows)) })
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	subject := grader.Subject{Stage: n, Name: fmt.Sprintf("solutions/stage%d", n), New: newStage}
	return grader.RunCheck(context.Background(), subject, c, 7, start).Err
}

// stateWithKeys answers GET /lab/state r as next does, with the key
// rows keys makes of next's.
func stateWithKeys(t *testing.T, next http.Handler, w http.ResponseWriter, r *http.Request, keys func([]any) []any) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	var st map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Errorf("GET /lab/state: %v", err)
		return
	}
	rows, _ := st["keys"].([]any)
	st["keys"] = keys(rows)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// noKeys is a key table the lab does not show.
func noKeys([]any) []any { return []any{} }

// inProgressKeys shows every key row in progress.
func inProgressKeys(rows []any) []any {
	for _, row := range rows {
		if m, ok := row.(map[string]any); ok {
			m["state"] = judging.StateInProgress
		}
	}
	return rows
}

// otherKeys is a key table shown whole that holds none of the server's
// keys: one row of another key, completed.
func otherKeys([]any) []any {
	return []any{map[string]any{"key": "someone-else", "state": judging.StateCompleted}}
}

// A client told to wait until it stops is judged by the key table, one
// rule for every check that sends one (toldToWait): a row still in
// progress is a stuck key, whether the operation executed (S1, its 201
// answered) or never ran (S4's refusal, S6's failed claim); a completed
// row, or none in a table shown whole, is no usable answer, and so is a
// key table the lab does not show: whether the key is also stuck cannot
// be seen, but the client never learned its outcome. Before, S4 and S6
// called every such client a stuck key from the 409 alone, and so did
// S3.completed-with-the-money until the key table was read there too (a
// key table not shown, or shown whole without the key, was a stuck key;
// S4.answer-stored-with-the-money reads it the same way, but needs a
// server it can crash), and so did S3.client-gives-up, from whether the
// payment had run: run, no usable answer; never run, a stuck key,
// whatever its row (S6.crash-recovery judges its crashed requests the
// same way: TestUnconverged_TheKeyTableSaysWhichHarm). Whatever the
// table, the failure says what the check itself expected (before, a
// table not shown gave a generic sentence in its place) and why the
// client was harmed, and what the table holds of the key in plain words
// (before, "key row no row").
func TestToldToWait_TheKeyTableSaysWhichHarm(t *testing.T) {
	for _, tc := range []struct {
		id     string
		new    stage.Factory
		n      int
		keys   func([]any) []any
		table  string
		harm   judging.Harm
		expect string
		why    string
	}{
		{"S1.sequential-retry", stage4.New, 4, inProgressKeys, "in progress", judging.StuckKey, "the original executed, and the retry is told so", "its key still says it is in progress"},
		{"S1.sequential-retry", stage4.New, 4, noKeys, "no key table", judging.NoUsableAnswer, "the original executed, and the retry is told so", "no usable answer"},
		{"S1.sequential-retry", stage4.New, 4, otherKeys, "none of the key", judging.NoUsableAnswer, "the original executed, and the retry is told so", "its key is not in progress"},
		{"S4.insufficient-funds-replayed", stage4.New, 4, inProgressKeys, "in progress", judging.StuckKey, "the stored 422 insufficient-funds", "held for good"},
		{"S4.insufficient-funds-replayed", stage4.New, 4, noKeys, "no key table", judging.NoUsableAnswer, "the stored 422 insufficient-funds", "no usable answer"},
		{"S6.outage-mid-request", stage6.New, 6, noKeys, "no key table", judging.NoUsableAnswer, "201 Created: once the lease of the failed claim expires", "no usable answer"},
		{"S3.completed-with-the-money", stage4.New, 4, noKeys, "no key table", judging.NoUsableAnswer, "the retry executes once, or is told the first attempt did", "no usable answer"},
		{"S3.completed-with-the-money", stage4.New, 4, otherKeys, "none of the key", judging.NoUsableAnswer, "the retry executes once, or is told the first attempt did", "its key is not in progress"},
		{"S3.client-gives-up", stage4.New, 4, inProgressKeys, "in progress", judging.StuckKey, "a client that hung up is not a failure of the money", "still in progress with nothing running"},
		{"S3.client-gives-up", stage4.New, 4, noKeys, "no key table", judging.NoUsableAnswer, "a client that hung up is not a failure of the money", "no usable answer"},
		{"S3.client-gives-up", stage4.New, 4, otherKeys, "none of the key", judging.NoUsableAnswer, "a client that hung up is not a failure of the money", "its key is not in progress"},
	} {
		t.Run(tc.id+"/"+tc.table, func(t *testing.T) {
			f := harmOf(t, behind409Keys(t, tc.id, tc.new, tc.n, tc.keys), tc.harm)
			if !strings.Contains(f.Expected, tc.expect) || !strings.Contains(f.Expected, tc.why) {
				t.Errorf("expected %q, want it to say %q and %q", f.Expected, tc.expect, tc.why)
			}
			if strings.Contains(f.Got, "key row no row") {
				t.Errorf("got %q, want what the key table holds said plainly", f.Got)
			}
		})
	}
}

// The other retry loops that are a client's retry policy judge a retry
// answered a plain-text 409 as untilAnswered does: a contract difference,
// recorded once, and the client comes back as after a 409
// request-in-progress. Told so once, the check passes with the
// difference; told so on every retry, the client stops told to come back,
// judged as a 409 request-in-progress would be, by the key table: here a
// completed row, no usable answer. Before, each loop stopped
// at the first plain 409: S3.release-after-failure's refusal recorded a
// difference and passed however long it was told so,
// S3.completed-with-the-money passed without a word (and, told to wait
// on every retry, called the key stuck without reading it; its loop,
// retryUntilAnswered, is S4.answer-stored-with-the-money's too, which
// needs a server it can crash) and S6.outage-mid-request judged it a
// failure of contract that stopped the check; S1.fail-closed and
// S8.reference-write-fails (their loop, retryUntilDone, is the crash
// checks' of stages 6 and 9 and S8.refusal-replayed's and
// S8.refused-leaves-payable's too) took the first plain 409 for the
// final answer and recorded nothing; S3.client-gives-up waited on a plain
// 409 and recorded nothing (and, told so on every retry, judged it by
// whether the payment had run, not by the key table). So did the other
// rounds of S3.release-after-failure: after a failed business write the
// first plain 409 was told duplicate, a payment that never ran; sent at
// once, the retries' plain 409s stopped the check on a failure of
// contract before anyone came back; and the retry that met the release
// took it for its final answer. S3.retry-during-original's retries once
// the original had answered passed at stage 3 on the first plain 409
// (from stage 4 they came back, recording nothing), and
// S1.retry-after-failure's retries of an original about to fail stopped
// at it on a failure of contract.
func TestPlainConflict_RetryLoopsComeBack(t *testing.T) {
	const typed = "a 409 names its problem type"
	// marked answers the requests of the keys that the marks made for
	// each run mark.
	marked := func(newStage stage.Factory, m func() marks) func(t *testing.T, times int) targets.Start {
		return func(t *testing.T, times int) targets.Start {
			return markedRetriesAnsweredBy(t, newStage, times, plainConflict, m())
		}
	}
	// failed marks the key of the nth 5xx.
	failed := func(nth int) func() marks { return func() marks { return marks{status: failure(nth)} } }
	for _, tc := range []struct {
		id       string
		round    string
		newStage stage.Factory
		n        int
		harm     judging.Harm
		start    func(t *testing.T, times int) targets.Start
		// once is how many plain 409s "once" answers: every request sent
		// at once, for a round that sends them together (default 1).
		once int
	}{
		{"S3.release-after-failure", "refusal", stage4.New, 4, judging.NoUsableAnswer, func(t *testing.T, times int) targets.Start {
			return refusalRetriesAnsweredBy(t, stage4.New, times, plainConflict)
		}, 0},
		// The retries after a failed business write (retryAfterFailed),
		// those sent at once after one (retriesAtOnceAfterFailure) and
		// the retry that meets the release (patientRetries).
		{"S3.release-after-failure", "failed-write", stage4.New, 4, judging.NoUsableAnswer, marked(stage4.New, failed(1)), 0},
		{"S3.release-after-failure", "at-once", stage4.New, 4, judging.NoUsableAnswer, marked(stage4.New, failed(2)), 8},
		{"S3.release-after-failure", "meets-the-release", stage4.New, 4, judging.NoUsableAnswer, marked(stage4.New, func() marks { return marks{armed: "slow-key-read"} }), 0},
		// The retries once the original has answered (afterTheOriginal).
		{"S3.retry-during-original", "after-the-original", stage3.New, 3, judging.NoUsableAnswer, marked(stage3.New, func() marks { return marks{status: success} }), 0},
		// The retries of a payment whose original failed while the retry
		// was on its way (retryWhileTheOriginalFails).
		{"S1.retry-after-failure", "while-the-original-fails", stage4.New, 4, judging.NoUsableAnswer, marked(stage4.New, failed(2)), 0},
		{"S3.completed-with-the-money", "", stage4.New, 4, judging.NoUsableAnswer, nil, 0},
		{"S6.outage-mid-request", "", stage6.New, 6, judging.StuckKey, nil, 0},
		{"S1.fail-closed", "", stage4.New, 4, "", nil, 0},
		{"S8.reference-write-fails", "", stage8.New, 8, "", nil, 0},
		// Its rounds leave the key released or completed: whether the
		// payment ran, the key table says no usable answer.
		{"S3.client-gives-up", "", stage4.New, 4, judging.NoUsableAnswer, nil, 0},
	} {
		for _, times := range []int{max(tc.once, 1), 0} {
			name := "always"
			if times > 0 {
				name = "once"
			}
			if tc.round != "" {
				name = tc.round + "/" + name
			}
			t.Run(tc.id+"/"+name, func(t *testing.T) {
				c, ok := grader.Lookup(tc.id)
				if !ok {
					t.Fatalf("no check %s", tc.id)
				}
				start := retriesAnsweredBy(t, tc.newStage, times, plainConflict)
				if tc.start != nil {
					start = tc.start(t, times)
				}
				subject := grader.Subject{Stage: tc.n, Name: fmt.Sprintf("solutions/stage%d", tc.n), New: tc.newStage}
				err := grader.RunCheck(context.Background(), subject, c, 7, start).Err
				want := tc.harm
				if times > 0 {
					want = ""
				}
				f := harmOf(t, err, want)
				n := 0
				for d := f; d != nil; d = d.Contract {
					n += strings.Count(d.Expected, typed)
				}
				if n != 1 {
					t.Errorf("the plain 409 recorded %d times, want once:\n%v", n, err)
				}
			})
		}
	}
}

// refusalRetriesAnsweredBy is retriesAnsweredBy for the retries of a
// transfer whose first answer was 422 insufficient-funds alone: the other
// retries S3.release-after-failure sends before its refusal are the
// server's to answer.
func refusalRetriesAnsweredBy(t *testing.T, newStage stage.Factory, times int, answer http.HandlerFunc) targets.Start {
	return markedRetriesAnsweredBy(t, newStage, times, answer, marks{status: func(code int) bool { return code == http.StatusUnprocessableEntity }})
}

// marks says which keys markedRetriesAnsweredBy answers itself: those
// of a request the server answered with a status that status accepts
// (called once for each answer, under a lock), or, if armed names a fault
// point, the key of the first retry (a request of a key sent before) once
// that point is armed.
type marks struct {
	status func(code int) bool
	armed  string
}

// failure accepts the nth 5xx the server answers, and no other status.
func failure(nth int) func(int) bool {
	seen := 0
	return func(code int) bool {
		if code/100 != 5 {
			return false
		}
		seen++
		return seen == nth
	}
}

// success accepts a 2xx.
func success(code int) bool { return code/100 == 2 }

// markedRetriesAnsweredBy is retriesAnsweredBy for the requests of the
// keys m marks, from the one after the answer that marked the key (or
// from the one that did, for m.armed): the others are the server's to
// answer.
func markedRetriesAnsweredBy(t *testing.T, newStage stage.Factory, times int, answer http.HandlerFunc, m marks) targets.Start {
	var mu sync.Mutex
	marked, sent, answered, armed := map[string]bool{}, map[string]bool{}, 0, false
	return serveWrapped(t, newStage, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if m.armed != "" && r.Method == http.MethodPost && r.URL.Path == "/lab/faults" {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var arm struct {
					Point string
					Count int64
				}
				if json.Unmarshal(body, &arm) == nil && arm.Point == m.armed && arm.Count > 0 {
					mu.Lock()
					armed = true
					mu.Unlock()
				}
			}
			if r.Method != http.MethodPost || r.URL.Path != "/transfers" {
				next.ServeHTTP(w, r)
				return
			}
			key := r.Header.Get("Idempotency-Key")
			mu.Lock()
			if armed && sent[key] {
				marked[key], armed = true, false
			}
			sent[key] = true
			retry := marked[key] && (times == 0 || answered < times)
			if retry {
				answered++
			}
			mu.Unlock()
			if retry {
				answer(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			if m.status != nil {
				mu.Lock()
				if m.status(rec.Code) {
					marked[key] = true
				}
				mu.Unlock()
			}
			relay(w, rec, rec.Code, rec.Body.Bytes())
		})
	})
}
