package history

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"idemlab/grader/timeline"
	"idemlab/kit/bank"
	"idemlab/kit/events"
)

func TestDescribe_OneLinePerRequest(t *testing.T) {
	long := strings.Repeat("x", 250)
	// The first four-byte letter spans bytes 118 to 121, across the cut.
	clefs := strings.Repeat("x", 118) + strings.Repeat("𝄞", 30)
	for _, c := range []struct {
		name, method, path string
		keys               []string
		body, want         string
	}{
		{"no key, no body", "GET", "/accounts", nil, "", "GET /accounts"},
		{"key and body", "POST", "/transfers", []string{"k1"}, `{"amount":1}`, `POST /transfers  Idempotency-Key: k1  {"amount":1}`},
		{"two keys", "POST", "/transfers", []string{`"a"`, `"b"`}, "", `POST /transfers  Idempotency-Key: "a"  Idempotency-Key: "b"`},
		{"long body cut", "POST", "/transfers", nil, long, "POST /transfers  " + long[:120] + "… (250 bytes)"},
		{"long body cut before a character, not inside it", "POST", "/transfers", nil, clefs, "POST /transfers  " + clefs[:118] + "… (238 bytes)"},
	} {
		if got := Describe(c.method, c.path, c.keys, c.body); got != c.want {
			t.Errorf("%s: Describe = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestExecuted(t *testing.T) {
	for n, want := range map[int64]string{0: "never executed", 1: "executed once", 2: "executed twice", 5: "executed 5 times"} {
		if got := Executed(n); got != want {
			t.Errorf("Executed(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTimes(t *testing.T) {
	for n, want := range map[int64]string{0: "never", 1: "once", 2: "twice", 5: "5 times"} {
		if got := Times(n); got != want {
			t.Errorf("Times(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCompletedAt_IsWhenTheCommitWasHeard catches a history that places a
// key row's completion when its event was published: the server reads
// the row first, and a retry that read the committed row can be answered
// in between, which S3.retry-during-original would then take for a
// "done" told while the original still ran.
func TestCompletedAt_IsWhenTheCommitWasHeard(t *testing.T) {
	h := NewRecorder("k-1")
	committed := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	published := committed.Add(40 * time.Millisecond)
	row := func(state string, at time.Time) events.Event {
		data, _ := json.Marshal(events.Key{RowID: 7, Row: map[string]any{"key": "k-1", "state": state}, At: at})
		return events.Event{Kind: events.KindKey, Time: published, Data: data}
	}
	h.heard(row("in_progress", committed.Add(-time.Second)))
	h.heard(row("completed", committed))
	if at, ok := h.CompletedAt("k-1"); !ok || !at.Equal(committed) {
		t.Fatalf("CompletedAt = %v, %v; want %v, the commit's, not the event's %v", at, ok, committed, published)
	}
	// A row sent anew (after the stream reconnected) says no commit: it
	// is placed when it was published.
	h = NewRecorder("k-1")
	h.heard(row("completed", time.Time{}))
	if at, ok := h.CompletedAt("k-1"); !ok || !at.Equal(published) {
		t.Fatalf("CompletedAt of a row sent anew = %v, %v; want %v", at, ok, published)
	}
}

// TestExecutedAt_IsTheFirstWriteOfTheOp: an execution is placed at its
// business write, which its event says, and the first of an op's counts.
func TestExecutedAt_IsTheFirstWriteOfTheOp(t *testing.T) {
	h := NewRecorder()
	wrote := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	exec := func(op string, at time.Time) events.Event {
		data, _ := json.Marshal(map[string]any{"op": op, "kind": "transfer", "id": "tr_1", "amount": 5, "count": 1, "at": at})
		return events.Event{Kind: events.KindExecution, Time: at.Add(time.Second), Data: data}
	}
	h.heard(exec("op-1", wrote.Add(time.Minute)))
	h.heard(exec("op-1", wrote))
	h.heard(exec("op-2", wrote.Add(-time.Minute)))
	if at, ok := h.ExecutedAt("op-1"); !ok || !at.Equal(wrote) {
		t.Fatalf("ExecutedAt(op-1) = %v, %v; want %v", at, ok, wrote)
	}
	if _, ok := h.ExecutedAt("op-3"); ok {
		t.Fatal("ExecutedAt of an op never executed says ok")
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int64]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 20: "20th", 21: "21st", 22: "22nd", 32: "32nd", 111: "111th", 101: "101st"} {
		if got := Ordinal(n); got != want {
			t.Errorf("Ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestServerErrors_KeepsTheCausesOfFiveHundreds: a request event with a
// cause is kept for the report, with the attempt and the operation it
// answered (a report lists those of the failing operation's requests
// alone); one without (a 4xx, a 2xx) is not.
func TestServerErrors_KeepsTheCausesOfFiveHundreds(t *testing.T) {
	h := NewRecorder()
	request := func(status int, cause string) events.Event {
		data, _ := json.Marshal(events.Request{Method: "POST", Path: "/transfers", Status: status, Cause: cause, Op: "op-0000000a", Attempt: "a2"})
		return events.Event{Kind: events.KindRequest, Time: time.Now(), Data: data}
	}
	h.heard(request(201, ""))
	h.heard(request(500, "hold reference: current transaction is aborted"))
	h.heard(request(409, ""))
	got := h.History().ServerErrors
	want := timeline.ServerError{Attempt: "a2", Op: "op-0000000a", Line: "POST /transfers → 500: hold reference: current transaction is aborted"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("server errors %+v, want %+v", got, want)
	}
}

// TestHistory_LeavesOutTheFencesMovesByNothing catches a timeline that
// draws "lab clock moved" where the grader only fenced the event stream
// (a move of the clock by nothing), while a real move stays drawn, though
// both fall in the same millisecond of lab time (a recorder that told
// them apart by their time drew both, or none), and a fence that is
// satisfied by the real move's event instead of its own.
func TestHistory_LeavesOutTheFencesMovesByNothing(t *testing.T) {
	h := NewRecorder()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := func(moved bool) events.Event {
		data, _ := json.Marshal(events.Clock{Now: at.Format(time.RFC3339Nano), Moved: moved})
		return events.Event{Kind: events.KindClock, Time: at, Data: data}
	}
	h.heard(clock(true))
	if len(h.fences) != 0 {
		t.Fatal("the real move's clock event would end a fence at its time, before the fence's own was heard")
	}
	h.heard(clock(false))
	h.awaitFence(t.Context(), at)
	var drawn []time.Time
	for _, e := range h.History().Events {
		if e.Kind == timeline.Clock {
			drawn = append(drawn, e.At)
		}
	}
	if len(drawn) != 1 || !drawn[0].Equal(at) {
		t.Fatalf("clock events drawn at %v, want only the real move at %v", drawn, at)
	}
}

// TestHistory_KeepsTheOperatorsRedrive: a redrive event (POST
// /lab/outbox/redrive) becomes a redrive of the transfer its dead letter
// names, placed when it was published, saying the answer it was set
// aside with and the key its row is owed under. A recorder that read no
// redrive left the operator out of S9.redrive's timeline.
func TestHistory_KeepsTheOperatorsRedrive(t *testing.T) {
	h := NewRecorder()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	data, _ := json.Marshal(bank.DeadLetter{TransferID: "tr_a", Key: "tr_a", Status: 400, Answer: `{"type":"/problems/invalid-posting"}`})
	h.heard(events.Event{Kind: events.KindRedrive, Time: at, Data: data})
	got := h.History().Events
	if len(got) != 1 || got[0].Kind != timeline.Redrive || got[0].Ref != "tr_a" || !got[0].At.Equal(at) || got[0].Detail != "tr_a, set aside with 400, under key tr_a" {
		t.Errorf("events %+v, want one redrive of tr_a at %v", got, at)
	}
}
