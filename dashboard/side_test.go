package dashboard

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labctl"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func event(kind string, at time.Time, data any) events.Event {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return events.Event{Kind: kind, Time: at, Data: raw}
}

func execution(op, kind string, amount, count int64) events.Event {
	return event(events.KindExecution, t0, bank.Execution{Op: op, Kind: kind, Amount: amount, Count: count, ID: "tr_" + op})
}

func request(op string, status int, replayed bool) events.Event {
	return event(events.KindRequest, t0, events.Request{Method: "POST", Path: "/transfers", Status: status, Op: op, Replayed: replayed, Key: "k-" + op})
}

func TestSide_CountsEachExecutionBeyondTheFirstOnce(t *testing.T) {
	s := NewSide()
	for _, ev := range []events.Event{
		execution("a", "transfer", 1000, 1), request("a", 201, false),
		// a retry of a executed again: one double
		execution("a", "transfer", 1000, 2), request("a", 201, false),
		// b ran twice at once and both read the count after both commits
		execution("b", "deposit", 500, 2), execution("b", "deposit", 500, 2),
		request("b", 201, false), request("b", 201, false),
		// c: once, then a replay
		execution("c", "transfer", 70, 1), request("c", 201, false), request("c", 201, true),
	} {
		s.Ingest(ev, t0)
	}
	c := s.Counts
	want := Counts{Requests: 6, Succeeded: 6, Replays: 1, Executions: 5, Doubles: 2,
		MovedTwice: 1000, CreatedTwice: 500, DepositsOnce: 500}
	if c != want {
		t.Fatalf("counts = %+v\nwant     %+v", c, want)
	}
	doubles := 0
	for _, l := range s.Feed(FeedSize) {
		if l.Double {
			doubles++
		}
	}
	if doubles != 2 {
		t.Errorf("%d feed lines marked DOUBLE, want 2 (a's retry and one of b's)", doubles)
	}
}

// TestSide_EveryDoubleOfABurstIsBadged: the b key's sixteen copies of
// one operation run at once on stage 0, and their sixteen executions are
// heard before their answers. The feed must badge fifteen of the sixteen
// 201s DOUBLE, as the counter counts fifteen; a badge per op, not per
// double, marked one and left fourteen doubles looking like first runs.
func TestSide_EveryDoubleOfABurstIsBadged(t *testing.T) {
	s := NewSide()
	for n := range int64(16) {
		s.Ingest(execution("burst", "transfer", 1000, n+1), t0)
	}
	for range 16 {
		s.Ingest(request("burst", 201, false), t0)
	}
	badged := 0
	for _, l := range s.Feed(FeedSize) {
		if l.Double {
			badged++
		}
	}
	if s.Counts.Doubles != 15 || badged != 15 {
		t.Errorf("%d doubles counted, %d feed lines marked DOUBLE; want 15 and 15", s.Counts.Doubles, badged)
	}
}

func TestSide_LostIsASuccessForAnOpTheDatabaseNeverRan(t *testing.T) {
	s := NewSide()
	s.Ingest(request("ghost", 201, true), t0)                 // told success, no execution seen
	s.Ingest(request("crashed", 201, true), t0)               // executed, but a crash ate its event
	s.Ingest(request("late", 201, true), t0.Add(time.Second)) // arrives after the poll started
	if s.Counts.Lost != 0 {
		t.Fatalf("lost = %d before any poll, want 0: only the database can say", s.Counts.Lost)
	}
	st := labctl.State{Executions: map[string]int64{"crashed": 1}}
	s.ApplyState(st, t0.Add(time.Millisecond))
	if s.Counts.Lost != 1 {
		t.Fatalf("lost = %d after the poll, want 1 (ghost)", s.Counts.Lost)
	}
	s.ApplyState(st, t0.Add(2*time.Second))
	if s.Counts.Lost != 2 {
		t.Fatalf("lost = %d after a later poll, want 2 (ghost, late)", s.Counts.Lost)
	}
	if s.Counts.Unseen != 1 {
		t.Errorf("unseen = %d, want 1: the crashed op's execution was never reported", s.Counts.Unseen)
	}
}

func TestSide_AdoptsExecutionsTheStreamMissedOnlyWhenTwoPollsAgree(t *testing.T) {
	s := NewSide()
	s.Ingest(execution("a", "transfer", 100, 1), t0)
	ahead := labctl.State{Executions: map[string]int64{"a": 2}}
	s.ApplyState(ahead, t0)
	if s.Counts.Doubles != 0 {
		t.Fatalf("doubles = %d after one poll, want 0: the event may be on its way", s.Counts.Doubles)
	}
	s.ApplyState(ahead, t0)
	if s.Counts.Doubles != 1 || s.Counts.Unseen != 1 {
		t.Fatalf("doubles = %d, unseen = %d after two polls, want 1, 1", s.Counts.Doubles, s.Counts.Unseen)
	}
	s.Ingest(execution("a", "transfer", 100, 2), t0) // the event, late after all
	if s.Counts.Doubles != 1 {
		t.Errorf("doubles = %d, want 1: one double, however it was learnt", s.Counts.Doubles)
	}
}

func TestSide_ConservationVerdictChangesWhenTwoPollsAgree(t *testing.T) {
	s := NewSide()
	s.Ingest(execution("d", "deposit", 300, 1), t0)
	balances := func(total int64) labctl.State {
		return labctl.State{Accounts: []bank.Balance{{ID: "acc_a", Balance: total - 1000, Opening: 1000}, {ID: "acc_b", Balance: 1000, Opening: 1000}}}
	}
	s.ApplyState(balances(2300), t0)
	if s.Money.Verdict != Conserved {
		t.Fatalf("verdict = %v, want conserved: 2000 opening + 300 deposited", s.Money.Verdict)
	}
	s.ApplyState(balances(2600), t0) // a double deposit whose event is late, or real
	if s.Money.Verdict != Conserved {
		t.Fatalf("verdict changed on one poll")
	}
	s.ApplyState(balances(2600), t0)
	if s.Money.Verdict != Broken || s.Money.Surplus != 300 {
		t.Fatalf("verdict = %v surplus %d, want broken by 300", s.Money.Verdict, s.Money.Surplus)
	}
}

func TestSide_ResetStartsFromZero(t *testing.T) {
	s := NewSide()
	s.Ingest(execution("a", "transfer", 1, 1), t0)
	s.Ingest(execution("a", "transfer", 1, 2), t0)
	s.Ingest(event(events.KindReset, t0, map[string]any{"seed": 1}), t0)
	if s.Counts != (Counts{}) {
		t.Fatalf("counts after reset = %+v", s.Counts)
	}
	s.Ingest(execution("a", "transfer", 1, 1), t0)
	if s.Counts.Doubles != 0 {
		t.Errorf("op a after reset counted as a double")
	}
}

// TestSide_SaysWhenKeyEventsStopAndFlowAgain: the feed tells the
// instructor why the key table stood still, and that it moves again. A
// dashboard that ignored the listen events said nothing.
func TestSide_SaysWhenKeyEventsStopAndFlowAgain(t *testing.T) {
	s := NewSide()
	s.Ingest(event(events.KindListen, t0, events.Listen{Error: "lost the connection"}), t0)
	s.Ingest(event(events.KindListen, t0.Add(time.Second), events.Listen{Listening: true}), t0)
	feed := s.Feed(2)
	if len(feed) != 2 || !strings.Contains(feed[0].Note, "flow again") || !strings.Contains(feed[1].Note, "stopped") {
		t.Fatalf("feed %+v, want the stop and then the reconnection", feed)
	}
}

// TestSide_SaysWhenAnOperatorRedrives: a "redrive" event puts a line in
// the feed naming the transfer, the answer its dead letter was set aside
// with and the key its row is owed under. A dashboard that ignored it
// showed the row owed again and then sent, with no word of the operator;
// one that left the key out, or told the relay's send as done, gave no
// way to see a send under another key.
func TestSide_SaysWhenAnOperatorRedrives(t *testing.T) {
	s := NewSide()
	s.Ingest(event(events.KindRedrive, t0, bank.DeadLetter{TransferID: "tr_abc", Key: "key-abc", Status: 400, Answer: `{"type":"/problems/invalid-posting","status":400}`}), t0)
	feed := s.Feed(1)
	if len(feed) != 1 || !strings.Contains(feed[0].Note, "redrive") || !strings.Contains(feed[0].Note, "tr_abc") ||
		!strings.Contains(feed[0].Note, "400 invalid-posting") || !strings.Contains(feed[0].Note, "under key key-abc") || strings.Contains(feed[0].Note, "relay sends") {
		t.Fatalf("feed %+v, want a note of the redrive of tr_abc, set aside with 400 invalid-posting, owed again under key key-abc", feed)
	}
}

func TestSide_KeyTableFollowsTheRows(t *testing.T) {
	s := NewSide()
	key := func(id int64, state string, at time.Time) events.Event {
		return event(events.KindKey, at, events.Key{RowID: id, Row: map[string]any{"idempotency_key": "k" + strconv.FormatInt(id, 10), "state": state}})
	}
	s.Ingest(key(1, "in_progress", t0), t0)
	s.Ingest(key(2, "in_progress", t0.Add(time.Second)), t0)
	s.Ingest(key(1, "completed", t0.Add(2*time.Second)), t0)
	s.Ingest(event(events.KindKey, t0, events.Key{RowID: 2, Deleted: true}), t0)
	rows := s.Keys(10)
	if len(rows) != 1 || rows[0].Key != "k1" || rows[0].State != "completed" || !rows[0].Seen.Equal(t0) {
		t.Fatalf("keys = %+v, want k1 completed, seen at t0", rows)
	}
}

// flood writes the events of n operations starting at op i: each is
// claimed, executed, completed and answered; every 5th is retried and
// executed again (a double), every 7th retried and replayed, and every
// 11th answered 201 without any execution (lost). It appends without
// encoding/json so that a benchmark measures the dashboard, not this.
func flood(dst []events.Event, i, n int) []events.Event {
	for op := i; op < i+n; op++ {
		id := strconv.Itoa(op)
		name := "op-" + id
		keyRow := func(state string) events.Event {
			return events.Event{Kind: events.KindKey, Time: t0, Data: []byte(`{"rowid":` + id + `,"row":{"key":"k-` + id + `","state":"` + state + `"}}`)}
		}
		exec := func(count string) events.Event {
			return events.Event{Kind: events.KindExecution, Time: t0, Data: []byte(`{"op":"` + name + `","kind":"transfer","id":"tr_` + id + `","amount":1000,"count":` + count + `}`)}
		}
		answer := func(op string, replayed string) events.Event {
			return events.Event{Kind: events.KindRequest, Time: t0, Data: []byte(`{"method":"POST","path":"/transfers","key":"k-` + id + `","status":201,"replayed":` + replayed + `,"duration_ms":1.25,"op":"` + op + `"}`)}
		}
		if op%11 == 0 {
			dst = append(dst, answer("lost-"+id, "false"))
			continue
		}
		dst = append(dst, keyRow("in_progress"), exec("1"), keyRow("completed"), answer(name, "false"))
		if op%5 == 0 {
			dst = append(dst, exec("2"), answer(name, "false"))
		}
		if op%7 == 0 {
			dst = append(dst, answer(name, "true"))
		}
	}
	return dst
}

// floodWant is what flood's first n operations must count.
func floodWant(n int) (requests, executions, doubles, lost int64) {
	for op := range n {
		if op%11 == 0 {
			requests++
			lost++
			continue
		}
		requests++
		executions++
		if op%5 == 0 {
			requests++
			executions++
			doubles++
		}
		if op%7 == 0 {
			requests++
		}
	}
	return
}

func TestSide_StaysExactAndBoundedUnderAFlood(t *testing.T) {
	s := NewSide()
	const ops = 100_000
	var batch []events.Event
	for i := 0; i < ops; i += 500 {
		batch = flood(batch[:0], i, 500)
		for _, ev := range batch {
			s.Ingest(ev, t0)
		}
	}
	s.ApplyState(labctl.State{Executions: map[string]int64{}}, t0.Add(time.Second))
	requests, executions, doubles, lost := floodWant(ops)
	c := s.Counts
	if c.Requests != requests || c.Executions != executions || c.Doubles != doubles || c.Lost != lost {
		t.Fatalf("requests %d executions %d doubles %d lost %d\nwant     %d            %d         %d      %d",
			c.Requests, c.Executions, c.Doubles, c.Lost, requests, executions, doubles, lost)
	}
	if len(s.ops) > OpWindow || len(s.opOrder) > OpWindow || len(s.keys) > KeyRowsKept ||
		len(s.suspects) > maxSuspects || len(s.doubled) > maxSuspects || s.feedLen > FeedSize {
		t.Errorf("unbounded: %d ops, %d keys, %d suspects, %d doubled, %d feed lines",
			len(s.ops), len(s.keys), len(s.suspects), len(s.doubled), s.feedLen)
	}
}

func TestSide_ARunAfterTheKeyExpiredIsNotADouble(t *testing.T) {
	s := NewSide()
	s.ApplyState(labctl.State{Now: "2026-03-02T09:00:00Z", Config: labctl.ConfigJSON{Retention: "24h"}}, t0)
	s.Ingest(execution("a", "deposit", 100, 1), t0)
	s.Ingest(execution("b", "transfer", 100, 1), t0)
	s.Ingest(event(events.KindClock, t0, map[string]string{"now": "2026-03-03T10:00:00Z"}), t0)
	s.Ingest(execution("a", "deposit", 100, 2), t0) // the late retry: a new request now
	s.Ingest(execution("c", "transfer", 100, 1), t0)
	s.Ingest(execution("c", "transfer", 100, 2), t0) // a real double, after the jump
	c := s.Counts
	if c.Doubles != 1 || c.AfterRetention != 1 || c.DepositsOnce != 200 {
		t.Errorf("doubles %d, after retention %d, deposits %d; want 1, 1, 200", c.Doubles, c.AfterRetention, c.DepositsOnce)
	}
}

// TestSide_AKeyExpiresInManySteps: the retention period set to 3h, the
// clock moved 2h59m58s, then 4s: the run after the second step is a new
// request, not a double; a key whose retention has not passed by then is
// still a double. A dashboard that only counted one jump of the whole
// period, or that counted from the last step, fails.
func TestSide_AKeyExpiresInManySteps(t *testing.T) {
	s := NewSide()
	s.ApplyState(labctl.State{Now: "2026-03-02T09:00:00Z", Config: labctl.ConfigJSON{Retention: "3h"}}, t0)
	s.Ingest(execution("a", "transfer", 100, 1), t0)
	s.Ingest(event(events.KindClock, t0, map[string]string{"now": "2026-03-02T11:59:58Z"}), t0)
	s.Ingest(execution("b", "transfer", 100, 1), t0)
	s.Ingest(event(events.KindClock, t0, map[string]string{"now": "2026-03-02T12:00:02Z"}), t0)
	s.Ingest(execution("a", "transfer", 100, 2), t0) // its key expired at 12:00:00
	s.Ingest(execution("b", "transfer", 100, 2), t0) // its key lives until 14:59:58
	c := s.Counts
	if c.Doubles != 1 || c.AfterRetention != 1 {
		t.Errorf("doubles %d, after retention %d; want 1 (b), 1 (a)", c.Doubles, c.AfterRetention)
	}
}

// TestSide_MoneyBlockIsOnePicture catches a money block that sets the
// poll's surplus beside doubles counted after it: the moved-twice figure
// shown with Σ is the one of the poll's moment.
func TestSide_MoneyBlockIsOnePicture(t *testing.T) {
	s := NewSide()
	s.Ingest(execution("a", "transfer", 100, 1), t0)
	s.ApplyState(labctl.State{Executions: map[string]int64{"a": 1}}, t0)
	s.Ingest(execution("a", "transfer", 100, 2), t0)
	if s.Counts.MovedTwice != 100 || s.Money.MovedTwice != 0 {
		t.Fatalf("live %d, shown with Σ %d; want 100 and 0 until the next poll", s.Counts.MovedTwice, s.Money.MovedTwice)
	}
	s.ApplyState(labctl.State{Executions: map[string]int64{"a": 2}}, t0)
	if s.Money.MovedTwice != 100 {
		t.Fatalf("after the poll, shown with Σ %d, want 100", s.Money.MovedTwice)
	}
}

// TestSide_AnExecutionNoEventReportedIsUnverifiedNotAppeared catches a
// money check that judges only the ops it heard of: a deposit a killed
// process executed without an event would read as money that appeared.
func TestSide_AnExecutionNoEventReportedIsUnverifiedNotAppeared(t *testing.T) {
	s := NewSide()
	st := labctl.State{
		Accounts:   []bank.Balance{{ID: "acc_a", Balance: 1500, Opening: 1000}},
		Executions: map[string]int64{"lost-deposit": 1},
	}
	s.ApplyState(st, t0)
	s.ApplyState(st, t0)
	if s.Money.Verdict != Unverified || s.Money.Unseen != 1 {
		t.Fatalf("verdict %v with %d unreported; want Unverified with 1", s.Money.Verdict, s.Money.Unseen)
	}
}

// On a projector's wide terminal the sparkline runs to the pane's border:
// the side keeps a second for every cell of it, the oldest too.
func TestSide_SparklineKeepsASecondForEveryCellOfAWideTerminal(t *testing.T) {
	s := NewSide()
	const cells = 200 - 6
	oldest := t0.Add(-(cells - 1) * time.Second)
	ev := request("op-1", 201, false)
	ev.Time = oldest
	s.Ingest(ev, oldest)
	req, _ := s.Series(t0, cells)
	if len(req) != cells {
		t.Fatalf("%d seconds of history for a sparkline %d cells wide", len(req), cells)
	}
	if req[0] != 1 {
		t.Errorf("the oldest cell holds %d requests, want the 1 made %v earlier", req[0], t0.Sub(oldest))
	}
}

// TestSide_APollAnsweredBeforeTheClockMovedKeepsTheClock: a poll the
// server answered just before the lab clock moved 25h is applied after the
// clock event. Taken with its time, it put the dashboard's clock back, and
// the late retry, rightly executed again after the retention period, read
// as a DOUBLE on a correct solution (make replay-demo STAGE=9).
func TestSide_APollAnsweredBeforeTheClockMovedKeepsTheClock(t *testing.T) {
	s := NewSide()
	s.ApplyState(labctl.State{Now: t0.Format(time.RFC3339Nano), Executions: map[string]int64{}}, t0)
	s.Ingest(execution("a", "transfer", 1000, 1), t0)
	s.Ingest(event(events.KindClock, t0, map[string]string{"now": t0.Add(25 * time.Hour).Format(time.RFC3339Nano)}), t0.Add(time.Second))
	// started before the clock event arrived, answered before the move
	s.ApplyState(labctl.State{Now: t0.Add(time.Second).Format(time.RFC3339Nano), Executions: map[string]int64{"a": 1}}, t0.Add(time.Second/2))
	s.Ingest(execution("a", "transfer", 1000, 2), t0.Add(2*time.Second))
	if c := s.Counts; c.Doubles != 0 || c.AfterRetention != 1 {
		t.Errorf("doubles %d, after retention %d; want 0, 1: a poll older than the clock event put the clock back", c.Doubles, c.AfterRetention)
	}
	// A poll that started after the clock event tells the time, even one
	// earlier than the event's (the clock was set back since).
	s.ApplyState(labctl.State{Now: t0.Format(time.RFC3339Nano)}, t0.Add(3*time.Second))
	if !s.labNow.Equal(t0) {
		t.Errorf("lab clock %v after a fresh poll, want %v", s.labNow, t0)
	}
}

// TestSide_AResetPutsTheClockBack: a reset puts the lab clock back on
// real time without a clock event. A side that kept the clock of before
// the reset, or took it from a poll answered before the reset, judged a
// retry 25h after the reset by a clock 25h ahead: a DOUBLE.
func TestSide_AResetPutsTheClockBack(t *testing.T) {
	later := t0.Add(time.Minute)
	ahead := labctl.State{Now: t0.Add(25 * time.Hour).Format(time.RFC3339Nano),
		Accounts: []bank.Balance{{ID: "acc_a", Balance: 900, Opening: 1000}}}
	for _, stalePoll := range []bool{false, true} {
		s := NewSide()
		s.ApplyState(labctl.State{Now: t0.Format(time.RFC3339Nano)}, t0)
		s.Ingest(event(events.KindClock, t0, map[string]string{"now": ahead.Now}), t0)
		s.ApplyState(ahead, t0.Add(time.Second))
		s.Ingest(event(events.KindReset, later, map[string]any{"seed": 1}), later)
		if stalePoll {
			// started before the reset arrived: the lab as it was
			s.ApplyState(ahead, later.Add(-time.Millisecond))
			if s.Money.Known {
				t.Errorf("a poll started before the reset shows money after it: %+v", s.Money)
			}
		}
		s.Ingest(execution("a", "transfer", 100, 1), later)
		s.Ingest(event(events.KindClock, later, map[string]string{"now": later.Add(25 * time.Hour).Format(time.RFC3339Nano)}), later.Add(time.Second))
		s.Ingest(execution("a", "transfer", 100, 2), later.Add(2*time.Second))
		if c := s.Counts; c.Doubles != 0 || c.AfterRetention != 1 {
			t.Errorf("stale poll %v: doubles %d, after retention %d; want 0, 1", stalePoll, c.Doubles, c.AfterRetention)
		}
	}
}

// TestSide_APollOlderThanTheDepositsHeardIsNoVanishedMoney catches a money
// check that sets a poll's balances beside deposits whose events arrived
// while the poll was under way: its balances may predate those commits,
// and on a fast replay two polls in a row can each read as money that
// vanished from a server that lost nothing.
func TestSide_APollOlderThanTheDepositsHeardIsNoVanishedMoney(t *testing.T) {
	s := NewSide()
	balances := func(total int64) labctl.State {
		return labctl.State{
			Accounts:   []bank.Balance{{ID: "acc_a", Balance: total, Opening: 1000}},
			Executions: map[string]int64{"d1": 1},
		}
	}
	s.Ingest(execution("d1", "deposit", 300, 1), t0)
	s.ApplyState(balances(1300), t0.Add(time.Millisecond))
	// Two polls in a row start, then each hears a deposit its balances do
	// not hold yet.
	for i, op := range []string{"d2", "d3"} {
		polled := t0.Add(time.Duration(i+1) * time.Second)
		s.Ingest(execution(op, "deposit", 200, 1), polled.Add(time.Millisecond))
		s.ApplyState(balances(1300+int64(i)*200), polled)
	}
	if s.Money.Verdict != Conserved {
		t.Fatalf("verdict %v, surplus %d: balances older than the deposits heard read as money that vanished", s.Money.Verdict, s.Money.Surplus)
	}
	// Money that vanished for good is still seen: two polls that started
	// after every deposit was heard.
	for i := range 2 {
		s.ApplyState(balances(1500), t0.Add(time.Duration(3+i)*time.Second))
	}
	if s.Money.Verdict != Broken || s.Money.Surplus != -200 {
		t.Fatalf("verdict %v, surplus %d; want broken, 200 vanished", s.Money.Verdict, s.Money.Surplus)
	}
}

// TestSide_TheSurplusShownIsTheVerdicts catches a money block that shows
// the red verdict of earlier polls beside the surplus of the latest one
// ("✗ ₩0 appeared") while a change of verdict waits for a second poll.
func TestSide_TheSurplusShownIsTheVerdicts(t *testing.T) {
	s := NewSide()
	st := func(total int64) labctl.State {
		return labctl.State{Accounts: []bank.Balance{{ID: "acc_a", Balance: total, Opening: 1000}}}
	}
	s.ApplyState(st(1000), t0)
	s.ApplyState(st(1400), t0)
	s.ApplyState(st(1400), t0)
	if s.Money.Verdict != Broken || s.Money.Surplus != 400 {
		t.Fatalf("verdict %v, surplus %d; want broken by 400", s.Money.Verdict, s.Money.Surplus)
	}
	s.ApplyState(st(1000), t0) // one poll: the verdict waits for a second
	if s.Money.Verdict == Broken && s.Money.Surplus == 0 {
		t.Fatalf("broken shown with a surplus of 0")
	}
	s.ApplyState(st(1000), t0)
	if s.Money.Verdict != Conserved {
		t.Fatalf("verdict %v after two polls that balance, want conserved", s.Money.Verdict)
	}
}

// history is a server's state as lab dash finds it after a replayed day:
// four executions of three ops (c ran twice), three key rows, and ₩500
// deposited, all before the dashboard attached.
func history(extra int64) labctl.State {
	return labctl.State{
		Accounts:   []bank.Balance{{ID: "acc_a", Balance: 1500 + extra, Opening: 1000}, {ID: "acc_b", Balance: 1000, Opening: 1000}},
		Executions: map[string]int64{"a": 1, "b": 1, "c": 2},
		Keys: []map[string]any{
			{"rowid": float64(3), "key": "k-c", "state": "completed"},
			{"rowid": float64(2), "key": "k-b", "state": "completed"},
			{"rowid": float64(1), "key": "k-a", "state": "completed"},
		},
	}
}

// TestSide_AttachedToAServerWithHistory catches a lab dash that reads what
// a server did before it attached as news: executions no event reported
// (a killed server's), keys it never heard of, and deposits that appeared.
func TestSide_AttachedToAServerWithHistory(t *testing.T) {
	s := newAttachedSide()
	s.ApplyState(history(0), t0)
	s.ApplyState(history(0), t0)
	if s.Counts.Unseen != 0 || s.Counts.Doubles != 0 || s.Money.Verdict != Conserved {
		t.Fatalf("unseen %d, doubles %d, verdict %v; want 0, 0, conserved: all of it was before attach",
			s.Counts.Unseen, s.Counts.Doubles, s.Money.Verdict)
	}
	want := Attach{Found: true, Executions: 4, Doubles: 1, Keys: 3}
	if s.Before != want {
		t.Fatalf("before attach = %+v, want %+v", s.Before, want)
	}
	if s.KeyCount() != 3 {
		t.Fatalf("key table holds %d rows, want the 3 stored", s.KeyCount())
	}
	// From the baseline on, the books are judged as on a fresh server.
	s.Ingest(execution("d", "deposit", 200, 1), t0)
	s.ApplyState(history(200), t0.Add(time.Second))
	s.ApplyState(history(200), t0.Add(time.Second))
	if s.Money.Verdict != Conserved {
		t.Fatalf("verdict %v after a deposit once, want conserved", s.Money.Verdict)
	}
	s.Ingest(execution("d", "deposit", 200, 2), t0)
	s.Ingest(execution("c", "transfer", 70, 3), t0) // a late retry of an op of the history, run again
	s.ApplyState(history(400), t0.Add(2*time.Second))
	s.ApplyState(history(400), t0.Add(2*time.Second))
	if s.Money.Verdict != Broken || s.Money.Surplus != 200 || s.Counts.Doubles != 2 {
		t.Fatalf("verdict %v surplus %d doubles %d, want broken by 200 with 2 doubles", s.Money.Verdict, s.Money.Surplus, s.Counts.Doubles)
	}
}

// TestSide_BooksBrokenBeforeAttachDoNotReadClean: money that vanished
// before the dashboard attached is found at attach and stays said.
func TestSide_BooksBrokenBeforeAttachDoNotReadClean(t *testing.T) {
	s := newAttachedSide()
	st := history(-800) // 300 short of the opening balances
	s.ApplyState(st, t0)
	s.ApplyState(st, t0)
	if s.Before.Vanished != 300 {
		t.Fatalf("vanished before attach = %d, want 300", s.Before.Vanished)
	}
	p := pane{side: s, title: "lab server", status: "running", now: t0, st: DefaultStyles()}
	p.SetSize(80, 24)
	if got := ansi.Strip(p.Render()); !strings.Contains(got, "✗ ₩300 vanished · ✗ at attach: 1 doubled, ₩300 short") {
		t.Fatalf("the pane does not say the books were broken at attach:\n%s", got)
	}
}

// A fresh server's first poll is no history: the demo judges it as ever.
func TestSide_AFreshSideTakesNoBaseline(t *testing.T) {
	s := NewSide()
	s.ApplyState(history(0), t0)
	s.ApplyState(history(0), t0)
	if s.Before.Found || s.Counts.Unseen != 4 {
		t.Fatalf("before %+v, unseen %d; want no baseline and 4 unreported", s.Before, s.Counts.Unseen)
	}
}

// TestSide_SaysWhenAReplicaGoesAndComesBack: a replica's stream breaking
// and opening again (backend.Remote's KindStream events) are lines of the
// feed that name the replica.
func TestSide_SaysWhenAReplicaGoesAndComesBack(t *testing.T) {
	s := NewSide()
	for _, open := range []bool{false, true} {
		ev := event(KindStream, t0, Stream{Open: open})
		ev.Replica = 2
		s.Ingest(ev, t0)
	}
	feed := s.Feed(2)
	if len(feed) != 2 || !strings.HasPrefix(feed[1].Note, "r2's event stream broke") || !strings.HasPrefix(feed[0].Note, "r2 is back") {
		t.Errorf("the feed after replica 2 went and came back: %+v", feed)
	}
}
