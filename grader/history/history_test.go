package history

import (
	"encoding/json"
	"slices"
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
	s := newStream(nil, 0)
	committed := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	published := committed.Add(40 * time.Millisecond)
	row := func(state string, at time.Time) events.Event {
		data, _ := json.Marshal(events.Key{RowID: 7, Row: map[string]any{"key": "k-1", "state": state}, At: at})
		return events.Event{Kind: events.KindKey, Time: published, Data: data}
	}
	h.heard(s, row("in_progress", committed.Add(-time.Second)))
	h.heard(s, row("completed", committed))
	if at, ok := h.CompletedAt("k-1"); !ok || !at.Equal(committed) {
		t.Fatalf("CompletedAt = %v, %v; want %v, the commit's, not the event's %v", at, ok, committed, published)
	}
	// A row sent anew (after the stream reconnected) says no commit: it
	// is placed when it was published.
	h = NewRecorder("k-1")
	h.heard(s, row("completed", time.Time{}))
	if at, ok := h.CompletedAt("k-1"); !ok || !at.Equal(published) {
		t.Fatalf("CompletedAt of a row sent anew = %v, %v; want %v", at, ok, published)
	}
}

// TestExecutedAt_IsTheFirstWriteOfTheOp: an execution is placed at its
// business write, which its event says, and the first of an op's counts.
func TestExecutedAt_IsTheFirstWriteOfTheOp(t *testing.T) {
	h := NewRecorder()
	s := newStream(nil, 0)
	wrote := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	exec := func(op string, at time.Time) events.Event {
		data, _ := json.Marshal(map[string]any{"op": op, "kind": "transfer", "id": "tr_1", "amount": 5, "count": 1, "at": at})
		return events.Event{Kind: events.KindExecution, Time: at.Add(time.Second), Data: data}
	}
	h.heard(s, exec("op-1", wrote.Add(time.Minute)))
	h.heard(s, exec("op-1", wrote))
	h.heard(s, exec("op-2", wrote.Add(-time.Minute)))
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
	s := newStream(nil, 0)
	request := func(status int, cause string) events.Event {
		data, _ := json.Marshal(events.Request{Method: "POST", Path: "/transfers", Status: status, Cause: cause, Op: "op-0000000a", Attempt: "a2"})
		return events.Event{Kind: events.KindRequest, Time: time.Now(), Data: data}
	}
	h.heard(s, request(201, ""))
	h.heard(s, request(500, "hold reference: current transaction is aborted"))
	h.heard(s, request(409, ""))
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
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := func(moved bool) events.Event {
		data, _ := json.Marshal(events.Clock{Now: at.Format(time.RFC3339Nano), Moved: moved})
		return events.Event{Kind: events.KindClock, Time: at, Data: data}
	}
	h.heard(s, clock(true))
	if len(s.fences) != 0 {
		t.Fatal("the real move's clock event would end a fence at its time, before the fence's own was heard")
	}
	h.heard(s, clock(false))
	s.awaitFence(t.Context(), at)
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
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	data, _ := json.Marshal(bank.DeadLetter{TransferID: "tr_a", Key: "tr_a", Status: 400, Answer: `{"type":"/problems/invalid-posting"}`})
	h.heard(s, events.Event{Kind: events.KindRedrive, Time: at, Data: data})
	got := h.History().Events
	if len(got) != 1 || got[0].Kind != timeline.Redrive || got[0].Ref != "tr_a" || !got[0].At.Equal(at) || got[0].Detail != "tr_a, set aside with 400, under key tr_a" {
		t.Errorf("events %+v, want one redrive of tr_a at %v", got, at)
	}
}

// TestHistory_AFaultDisarmedSaysSo: the lab publishes a fault's arming
// and its disarming (count 0, which lets held statements go) as one kind
// of event; the mark of a disarming says so, where both read "armed".
func TestHistory_AFaultDisarmedSaysSo(t *testing.T) {
	h := NewRecorder()
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for i, count := range []int64{1, 0} {
		data, _ := json.Marshal(map[string]any{"point": "held-commit", "count": count, "armed": []any{}})
		h.heard(s, events.Event{Kind: events.KindFault, Time: at.Add(time.Duration(i) * time.Millisecond), Data: data})
	}
	got := h.History().Events
	if len(got) != 2 || got[0].Detail != "held-commit" || got[1].Detail != "held-commit disarmed" {
		t.Errorf("events %+v, want held-commit armed, then disarmed", got)
	}
}

// keyRowEvent is a key row's report, as a server publishes it.
func keyRowEvent(rowID int64, row map[string]any, committed, published time.Time) events.Event {
	data, _ := json.Marshal(events.Key{RowID: rowID, Row: row, Deleted: row == nil, At: committed})
	return events.Event{Kind: events.KindKey, Time: published, Data: data}
}

// TestHistory_TwoProcessesOnOneDatabaseTellOneStory: two server
// processes on one PostgreSQL database each report every change of the
// key table, and each its own executions. The history keeps both
// executions, each naming its process, and one claim, one completion and
// one forgetting of the key, though the second process's reports arrive
// late, its first after the first process's completion (a recorder that
// took them in the order they arrived drew the key completed twice).
func TestHistory_TwoProcessesOnOneDatabaseTellOneStory(t *testing.T) {
	h := NewRecorder("k-1")
	first, second := newStream(nil, 1), newStream(nil, 2)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	row := func(state string) map[string]any { return map[string]any{"key": "k-1", "state": state} }
	exec := func(count int64, wrote time.Time) events.Event {
		data, _ := json.Marshal(map[string]any{"op": "op-1", "kind": "transfer", "id": "tr_" + Ordinal(count), "amount": 5, "count": count, "at": wrote, "attempt": "a" + Ordinal(count)})
		return events.Event{Kind: events.KindExecution, Time: wrote.Add(time.Millisecond), Data: data}
	}
	h.heard(first, keyRowEvent(1, row("in_progress"), ms(0), ms(1)))
	h.heard(second, exec(1, ms(5)))
	h.heard(first, keyRowEvent(1, row("completed"), ms(10), ms(11)))
	h.heard(second, keyRowEvent(1, row("in_progress"), ms(0), ms(2)))
	h.heard(second, keyRowEvent(1, row("completed"), ms(10), ms(12)))
	h.heard(first, exec(2, ms(20)))
	h.heard(second, keyRowEvent(1, nil, ms(30), ms(31)))
	h.heard(first, keyRowEvent(1, nil, ms(30), ms(32)))
	var kinds []string
	var processes []int
	for _, e := range h.History().Events {
		kinds = append(kinds, e.Kind)
		if e.Kind == timeline.Execution {
			processes = append(processes, e.Process)
			if want := "in the " + timeline.ProcessName(e.Process); !strings.HasSuffix(e.Detail, want) {
				t.Errorf("execution %q does not end %q", e.Detail, want)
			}
		}
	}
	slices.Sort(kinds)
	want := []string{timeline.Claim, timeline.Complete, timeline.Execution, timeline.Execution, timeline.Forget}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if !slices.Equal(processes, []int{2, 1}) {
		t.Errorf("executions in processes %v, want 2 then 1", processes)
	}
}

// TestHistory_AResetNumbersTheKeyRowsAfresh: a reset drops the key table,
// and the next claim's row may have the number a row before it had. A
// recorder that took it for that row drew no claim, and no completion
// either when the old row had been completed: every round of a check
// after the first lost its key's claim.
func TestHistory_AResetNumbersTheKeyRowsAfresh(t *testing.T) {
	h := NewRecorder("k-1", "k-2")
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	h.heard(s, keyRowEvent(1, map[string]any{"key": "k-1", "state": "completed"}, at, at))
	h.heard(s, events.Event{Kind: events.KindReset, Time: at.Add(time.Second), Data: []byte(`{}`)})
	h.heard(s, keyRowEvent(1, map[string]any{"key": "k-2", "state": "in_progress"}, at.Add(2*time.Second), at.Add(2*time.Second)))
	h.heard(s, keyRowEvent(1, map[string]any{"key": "k-2", "state": "completed"}, at.Add(3*time.Second), at.Add(3*time.Second)))
	var got []string
	for _, e := range h.History().Events {
		got = append(got, strings.TrimSpace(e.Kind+" "+e.Key+" "+e.Detail))
	}
	// A fresh claim: not the old row's, claimed again in place.
	want := []string{"claim k-1 completed", "complete k-1", "claim k-2 in_progress", "complete k-2"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestHistory_AResetIsPlacedWhenItsCommitWasMade: the reset that starts a
// check is read off the stream a little after the server published it,
// and the server publishes it once the stage's tables are made again. A
// reader slowed down (a loaded machine, the race detector) reads it after
// the check's first request has claimed its key. A history that placed
// the reset when it was read took the claim for a row of the dropped
// table, and the retry's takeover of the key for a fresh claim; the
// reset says when it committed the drop, on the clock of the rows'
// commits, and is placed there.
func TestHistory_AResetIsPlacedWhenItsCommitWasMade(t *testing.T) {
	h := NewRecorder("k-1")
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	row := func(owner string) map[string]any {
		return map[string]any{"key": "k-1", "state": "in_progress", "lease_owner": owner}
	}
	reset, _ := json.Marshal(map[string]any{"seed": 1, "at": ms(0)})
	sent(h, "k-1", ms(2), ms(5))
	h.heard(s, events.Event{Kind: events.KindReset, Time: ms(8), Data: reset})
	h.heard(s, keyRowEvent(1, row("ORIGINAL"), ms(3), ms(8)))
	sent(h, "k-1", ms(6), time.Time{})
	h.heard(s, keyRowEvent(1, row("RETRY"), ms(9), ms(10)))
	var got []string
	for _, e := range h.History().Events {
		got = append(got, e.Kind)
	}
	if want := []string{timeline.Claim, timeline.Takeover}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestHistory_AKeyRowsScopeIsItsCustomerAndRoute: a key row's event
// carries the customer it holds (by ID, or by the token or header that
// names the customer) and the path it holds that the check sent to, so
// that a timeline draws two customers' rows of one key string apart; a
// row that holds neither has no scope beside its key. A header is the
// customer's however it is spelled: a server that scopes keys by the
// header as sent (scope-by-authorization-header) stores a retry's
// "bearer" or "Bearer  " as it came, and a recorder that knew only
// "Bearer <token>" drew the retrying customer's row on a lane of "no
// known customer". A customer holds two tokens, and a row that holds the
// other one, alone (scope-by-token) or in its header, is that customer's.
func TestHistory_AKeyRowsScopeIsItsCustomerAndRoute(t *testing.T) {
	h := NewRecorder()
	s := newStream(nil, 0)
	h.Population([]bank.Customer{{ID: "cus_a", Token: "tok-a", OtherToken: "tok-a2"}, {ID: "cus_b", Token: "tok-b", OtherToken: "tok-b2"}})
	h.Begin("check", "POST", "/transfers", "k-1", "", "")
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	rows := []map[string]any{
		{"key": "k-1", "customer": "cus_a", "route": "/transfers", "state": "in_progress", "location": "/transfers/tr_1"},
		{"key": "k-1", "auth": "Bearer tok-b", "route": "/transfers", "state": "in_progress"},
		{"key": "k-1", "state": "in_progress"},
		{"key": "k-1", "auth": "bearer tok-a", "state": "in_progress"},
		{"key": "k-1", "auth": "BEARER  tok-b", "state": "in_progress"},
		{"key": "k-1", "auth": "Basic tok-a", "state": "in_progress"},
		{"key": "k-1", "customer": "tok-b2", "state": "in_progress"},
		{"key": "k-1", "auth": "Bearer tok-a2", "state": "in_progress"},
	}
	for i, r := range rows {
		h.heard(s, keyRowEvent(int64(i+1), r, at, at))
	}
	var got []string
	for _, e := range h.History().Events {
		got = append(got, e.Customer+"|"+e.Route)
	}
	want := []string{"cus_a|/transfers", "cus_b|/transfers", "|", "cus_a|", "cus_b|", "|", "cus_b|", "cus_a|"}
	if !slices.Equal(got, want) {
		t.Errorf("scopes %q, want %q", got, want)
	}
}

// TestHistory_AKeyRowsRouteIsWhereItsKeyWasSent: a completed row holds
// the location of what it made, and a check that then reads it there
// sent a request to that path too. The row's route is the path its key
// was sent to: a recorder that took any path the check sent to read the
// location as the route of about half the reports (a row's columns come
// in no order), and a timeline drew the key's completion on a lane of a
// route of its own.
func TestHistory_AKeyRowsRouteIsWhereItsKeyWasSent(t *testing.T) {
	h := NewRecorder()
	s := newStream(nil, 0)
	h.Begin("check", "POST", "/transfers", "k-1", "", "")
	h.Begin("check", "GET", "/transfers/tr_1", "", "", "")
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	for i := range 20 {
		row := map[string]any{"key": "k-1", "route": "/transfers", "state": "completed", "location": "/transfers/tr_1"}
		h.heard(s, keyRowEvent(int64(i+1), row, at, at))
	}
	for _, e := range h.History().Events {
		if e.Route != "/transfers" {
			t.Errorf("%s of row holding /transfers and the location /transfers/tr_1: route %q, want /transfers", e.Kind, e.Route)
		}
	}
}

// TestHistory_ATakeoverIsANewHolderOfAnInProgressRow: a retry that takes
// an expired key over leaves the row in progress and writes itself in as
// its holder; the history draws that as a takeover, naming the column
// that changed, whatever the student called it. A lease renewed (its
// expiry moved on, the holder the same) is no takeover, nor is the
// report of a second process that finds the row as the first left it, nor
// the completion that clears the holder. A history that read the states
// alone drew a takeover as nothing at all.
func TestHistory_ATakeoverIsANewHolderOfAnInProgressRow(t *testing.T) {
	h := NewRecorder("k-1")
	first, second := newStream(nil, 1), newStream(nil, 2)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	row := func(state string, holder any, expires string) map[string]any {
		return map[string]any{"key": "k-1", "fingerprint": "f1", "state": state, "created_at": "2026-03-03T09:00:00.000Z",
			"held_by": holder, "held_until": expires, "body": nil}
	}
	h.heard(first, keyRowEvent(1, row("in_progress", "ORIGINAL-TOKEN", "2026-03-03T09:00:05.000Z"), ms(0), ms(1)))
	h.heard(first, keyRowEvent(1, row("in_progress", "ORIGINAL-TOKEN", "2026-03-03T09:00:09.000Z"), ms(10), ms(11)))
	sent(h, "k-1", ms(15), ms(40))
	h.heard(first, keyRowEvent(1, row("in_progress", "RETRY-TOKEN", "2026-03-03T09:00:20.000Z"), ms(20), ms(21)))
	h.heard(second, keyRowEvent(1, row("in_progress", "RETRY-TOKEN", "2026-03-03T09:00:20.000Z"), ms(20), ms(22)))
	h.heard(first, keyRowEvent(1, row("completed", nil, ""), ms(30), ms(31)))
	var got []string
	for _, e := range h.History().Events {
		got = append(got, strings.TrimSpace(e.Kind+" "+e.Detail))
	}
	want := []string{"claim in_progress", "takeover held_by ORIGINAL… → RETRY-TO…", "complete"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	// A row with no state column whose text changes (a middleware's
	// "pending" row answered in place) was taken over by nobody.
	h = NewRecorder("k-2")
	h.heard(first, keyRowEvent(2, map[string]any{"key": "k-2", "status": "pending"}, ms(0), ms(1)))
	h.heard(first, keyRowEvent(2, map[string]any{"key": "k-2", "status": "done", "response": "201"}, ms(10), ms(11)))
	for _, e := range h.History().Events {
		if e.Kind == timeline.Takeover {
			t.Errorf("a row with no state drawn taken over: %+v", e)
		}
	}
}

// TestHistory_RowsFoundAfterARestartComeBeforeTheRetrysTakeover: the
// original claims its key and the process dies before it reports the
// claim; the process started again reports only what it hears change.
// The rows a read of the lab's state finds after the restart are noted
// at the read, so that the retry's takeover is drawn as one, not as the
// key's claim, and a row found as the history last heard it adds nothing.
// The claim drawn at the read, after the restart, says it was found
// there, not heard: it was committed before the crash.
func TestHistory_RowsFoundAfterARestartComeBeforeTheRetrysTakeover(t *testing.T) {
	h := NewRecorder("k-1", "k-2")
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	row := func(id int64, key, owner string) map[string]any {
		return map[string]any{"rowid": float64(id), "key": key, "state": "in_progress", "lease_owner": owner}
	}
	h.heard(s, keyRowEvent(1, row(1, "k-2", "OTHER"), ms(0), ms(1)))
	// The original's claim of k-1 (row 2) dies with its process; a read
	// after the restart finds it, and k-2 as it was.
	h.Found(ms(50), []map[string]any{row(2, "k-1", "ORIGINAL"), row(1, "k-2", "OTHER")})
	sent(h, "k-1", ms(55), time.Time{})
	h.heard(s, keyRowEvent(2, row(2, "k-1", "RETRY"), ms(60), ms(61)))
	var got []string
	for _, e := range h.History().Events {
		got = append(got, e.Kind+" "+e.Key)
	}
	want := []string{"claim k-2", "claim k-1", "takeover k-1"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	for _, e := range h.History().Events {
		if found := strings.Contains(e.Detail, "found by a read"); found != (e.Key == "k-1" && e.Kind == "claim") {
			t.Errorf("%s of %s, detail %q: found by the read is %v", e.Kind, e.Key, e.Detail, found)
		}
	}
}

// TestHistory_ALeaseMovedOnInAnyTimeFormIsNoTakeover: a lease's expiry
// moved on while its holder keeps the key (a renewal, or a release that
// ends the lease in place) is no takeover, whichever form of text the
// stage stores the time in: clock.Format's, SQLite's datetime, PostgreSQL's
// ::text, or what the SQLite driver writes for a time.Time. A history
// that knew only RFC 3339 drew the others as a new holder, a takeover
// nobody made; a token that changes beside the time is still drawn.
func TestHistory_ALeaseMovedOnInAnyTimeFormIsNoTakeover(t *testing.T) {
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	for _, expiries := range [][2]string{
		{"2026-03-03T09:00:05.000Z", "2026-03-03T09:00:09.000Z"},
		{"2026-03-03 09:00:05.000", "2026-03-03 09:00:09.000"},
		{"2026-03-03 09:00:05.123+00", "2026-03-03 09:00:09.456+00"},
		{"2026-03-03 09:00:05.123+00:00", "2026-03-03 09:00:09.456+00:00"},
		{"2026-03-03T09:00:05.123", "2026-03-03T09:00:09.456"},
		{"2026-03-03 09:00:05.123 +0000 UTC", "2026-03-03 09:00:09.456 +0000 UTC m=+4.500000001"},
	} {
		for _, owners := range [][2]string{{"TOKEN-A", "TOKEN-A"}, {"TOKEN-A", "TOKEN-B"}} {
			h := NewRecorder("k-1")
			s := newStream(nil, 0)
			sent(h, "k-1", ms(5), time.Time{})
			for i := range 2 {
				row := map[string]any{"key": "k-1", "state": "in_progress", "owner": owners[i], "expires": expiries[i]}
				h.heard(s, keyRowEvent(1, row, ms(10*i), ms(10*i+1)))
			}
			var got []string
			for _, e := range h.History().Events {
				got = append(got, strings.TrimSpace(e.Kind+" "+e.Detail))
			}
			want := []string{"claim in_progress"}
			if owners[0] != owners[1] {
				want = append(want, "takeover owner TOKEN-A → TOKEN-B")
			}
			if !slices.Equal(got, want) {
				t.Errorf("expiry %q then %q, owner %q then %q: events %q, want %q", expiries[0], expiries[1], owners[0], owners[1], got, want)
			}
		}
	}
}

// sent notes a request of key sent at start and answered at end (none
// yet when end is zero).
func sent(h *Recorder, key string, start, end time.Time) {
	h.attempts = append(h.attempts, timeline.Attempt{Key: key, Start: start, End: end})
}

// TestHistory_AColumnTheHolderChangesAsItWorksIsNoTakeover: a stage may
// keep beside its lease owner a column of text that the holder changes
// itself while the key stays in progress (the step its request reached,
// a recovery point). That is no takeover, even while a retry answered 409
// came and went beside it: only a request of the key sent after the
// holder's claim, and still waiting for its answer when the row changed,
// can have taken the key over. A history that drew every new text as a
// new holder drew the original taking its own key over.
func TestHistory_AColumnTheHolderChangesAsItWorksIsNoTakeover(t *testing.T) {
	h := NewRecorder("k-1")
	s := newStream(nil, 0)
	at := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	row := func(owner, step string) map[string]any {
		return map[string]any{"key": "k-1", "state": "in_progress", "owner": owner, "step": step}
	}
	sent(h, "k-1", ms(-1), ms(100))
	h.heard(s, keyRowEvent(1, row("ORIGINAL", "claimed"), ms(0), ms(1)))
	sent(h, "k-1", ms(2), ms(3))
	h.heard(s, keyRowEvent(1, row("ORIGINAL", "core-called"), ms(10), ms(11)))
	sent(h, "k-1", ms(15), time.Time{})
	h.heard(s, keyRowEvent(1, row("RETRY", "claimed"), ms(20), ms(21)))
	h.heard(s, keyRowEvent(1, row("RETRY", "core-called"), ms(30), ms(31)))
	var got []string
	for _, e := range h.History().Events {
		got = append(got, strings.TrimSpace(e.Kind+" "+e.Detail))
	}
	want := []string{"claim in_progress", "takeover owner ORIGINAL → RETRY, step core-cal… → claimed"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
