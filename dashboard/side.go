package dashboard

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// Limits that keep a side's memory bounded however long the demo runs and
// however fast events arrive.
const (
	// FeedSize is how many request lines the feed keeps.
	FeedSize = 64
	// KeyRowsKept is how many rows of the key table are kept, the most
	// recently changed first.
	KeyRowsKept = 256
	// OpWindow is how many operations are remembered for telling a double
	// or a lost transfer apart. A retry that comes back after this many
	// newer operations is judged as if the op were new.
	OpWindow = 1 << 16
	// SparkSeconds is how many seconds of history the sparkline keeps: one
	// a cell, wider than the widest terminal a class is shown.
	SparkSeconds = 512
	// MaxReplicas is how many replicas a side tells apart (lab serve
	// runs up to 16).
	MaxReplicas = 16
	// maxSuspects bounds the successes waiting for the next state poll to
	// say whether their money moved.
	maxSuspects = 4096
	// maxDeposited bounds the deposits heard that wait for a state poll
	// started after them.
	maxDeposited = 4096
	// StoryShown is how long a story's outcome stays at the top of the
	// feed: long enough to explain it to a class.
	StoryShown = time.Minute
	// CrashShown is how long the last crash's note stays pinned at the
	// top of the feed, unless the next crash replaces it: a story's time,
	// where the feed under a class's traffic scrolled it away in under a
	// second.
	CrashShown = time.Minute
)

// Counts are a side's counters. Each is exact for the events received:
// nothing is sampled.
type Counts struct {
	Requests     int64 // responses sent
	Succeeded    int64 // 2xx
	Replays      int64 // answers marked Idempotent-Replayed
	Conflicts    int64 // 409: duplicate or in progress
	Rejected     int64 // other 4xx
	Failed       int64 // 5xx
	Executions   int64 // business writes committed
	Doubles      int64 // executions beyond the first of an operation
	Lost         int64 // a success answered for an operation that never executed
	MovedTwice   int64 // won moved again by doubled transfers
	CreatedTwice int64 // won created again by doubled deposits
	DepositsOnce int64 // won deposited, each operation counted once
	Dropped      int64 // events the server could not deliver to us
	Unseen       int64 // executions the database shows that no event reported (a crash ate them)
	// AfterRetention counts ops executed again after the lab clock moved
	// past the retention period: the key had expired, so the server
	// rightly took the request as new. They are not doubles.
	AfterRetention int64
	// ByReplica counts the responses each replica sent (index 0 is
	// replica 1) when the side watches several; all zero for one server.
	ByReplica [MaxReplicas]int64
}

// FeedLine is one request in the feed.
type FeedLine struct {
	Time    time.Time
	Request events.Request
	// Replica is the replica that answered (1 to N), or 0 for one server.
	Replica int
	// Double marks the request whose execution was a double.
	Double bool
	// Note replaces the request with a marker line (a reset, a restart).
	Note string
}

// KeyRow is one row of the server's idempotency key table, as far as the
// dashboard can tell: the student designs the columns.
type KeyRow struct {
	RowID   int64
	Key     string
	State   string
	Seen    time.Time // when the dashboard first saw the row
	Changed time.Time // when it last changed
	// Before marks a row stored before the dashboard attached, unchanged
	// since: its age is not known.
	Before bool
}

// Money is what the last state poll said about balances.
type Money struct {
	Known    bool
	Accounts []bank.Balance
	Total    int64
	Opening  int64
	// Verdict is the money-conservation check: total = opening + every
	// deposit once. It changes only when two polls in a row agree, so a
	// poll that lands between a commit and its event does not flicker it.
	Verdict Verdict
	// Surplus is total - opening - deposits once: won that appeared (or,
	// if negative, vanished) against what the customers asked for, as of
	// the poll that set Verdict.
	Surplus int64
	// MovedTwice, CreatedTwice and Unseen are the counts of the moment the
	// poll was applied (see Counts), so that the money block never sets a
	// surplus beside doubles counted later.
	MovedTwice, CreatedTwice, Unseen int64
	candidate                        Verdict
}

// Verdict is the result of the money-conservation check.
type Verdict int

// The verdicts.
const (
	Unchecked  Verdict = iota // no poll yet
	Conserved                 // every won accounted for
	Broken                    // money appeared or vanished
	Unverified                // executions happened that no event reported
)

// sparkBucket counts one second.
type sparkBucket struct {
	sec      int64
	requests int64
	doubles  int64
}

type opSeen struct {
	count int64
	// at is the lab clock as the dashboard last knew it when the count
	// was seen (zero if it knew none): the key of that execution expires
	// a retention period after it.
	at time.Time
}

type heardDeposit struct {
	received time.Time
	amount   int64
}

type suspect struct {
	op       string
	received time.Time
}

// Side is what the dashboard knows about one lab server, built from its
// events, a periodic state poll and the outcome of the last story played
// on it. It does no I/O: the root model feeds it. Its memory is bounded by
// the constants above.
type Side struct {
	Counts Counts
	Money  Money
	// Outbox is the server's outbox as the last state poll showed it:
	// the transfers still to tell the core ledger and those told (stage 9).
	Outbox bank.OutboxCounts
	// OldestDead names the oldest dead letter the last state poll listed,
	// the one an operator looks at first: its transfer and the core's
	// answer ("tr_…: 422 posting-rejected"); "" when there is none.
	OldestDead string
	// Engine is the database engine the last state poll named ("sqlite"
	// or "postgres"), "" before one did. A reset keeps it: the server
	// keeps its database.
	Engine string

	told   Told
	toldAt time.Time
	// crash is the marker line of the last crash, pinned (see Crashed).
	crash FeedLine

	feed     [FeedSize]FeedLine
	feedNext int
	feedLen  int

	keys map[int64]*KeyRow

	// ops remembers the highest execution count seen per op, and the lab
	// clock when it was seen, in a FIFO window of OpWindow ops.
	ops      map[string]opSeen
	opOrder  []string
	opNext   int
	doubled  map[string]int64 // per op, the doubles not yet shown in the feed
	suspects []suspect
	lagging  map[string]bool // ops the last state poll showed ahead of the events
	// deposited is the won each deposit event added to DepositsOnce, with
	// when it arrived (the local clock), kept until a poll that started
	// after it: a poll's balances may not hold the deposits heard while
	// it was under way.
	deposited []heardDeposit

	spark [SparkSeconds]sparkBucket

	// labNow and retention come from clock events and polls. clockHeard
	// is when (the local clock) the latest clock event or reset arrived,
	// resetHeard when the latest reset did: a poll that started before
	// them may have been answered before them.
	labNow     time.Time
	retention  time.Duration
	clockHeard time.Time
	resetHeard time.Time

	// Before is what the first state poll showed was there before the
	// dashboard attached (lab dash on a server with a past).
	Before Attach
	// attaching is set until the first poll of a side that attaches to
	// a running server: that poll is its baseline, not news.
	attaching bool
	// base is the surplus the baseline poll found, which the deposits
	// made before attach explain: the money check judges from it.
	base int64
}

// Attach is the history a server had when the dashboard attached to it,
// as its first state poll showed it: shown as such, never counted as new.
type Attach struct {
	// Found is set once the baseline was taken and showed any history.
	Found bool
	// Executions are the executions of ops no event reported, and
	// Doubles those beyond each op's first (or re-runs after a key
	// expired: the poll cannot tell them apart).
	Executions, Doubles int64
	// Keys is how many key rows the poll listed; KeysMore that it listed
	// as many as it lists, so there may be more.
	Keys     int
	KeysMore bool
	// Vanished is the won the balances were short of the opening ones and
	// the deposits heard: deposits only add money and transfers move it,
	// so the books were broken before attach.
	Vanished int64
}

// NewSide returns an empty side.
func NewSide() *Side {
	s := &Side{}
	s.clear()
	return s
}

func (s *Side) clear() {
	s.Counts = Counts{}
	s.Money = Money{}
	s.Outbox, s.OldestDead = bank.OutboxCounts{}, ""
	s.told, s.toldAt = Told{}, time.Time{}
	s.crash = FeedLine{}
	s.keys = map[int64]*KeyRow{}
	s.ops = map[string]opSeen{}
	s.opOrder = make([]string, 0, 1024)
	s.opNext = 0
	s.doubled = map[string]int64{}
	s.suspects = nil
	s.lagging = map[string]bool{}
	s.deposited = nil
	s.spark = [SparkSeconds]sparkBucket{}
	s.retention = 24 * time.Hour
	s.Before, s.attaching, s.base = Attach{}, false, 0
}

// newAttachedSide returns an empty side for a server that may have run
// before the dashboard attached (lab dash): its first state poll is taken
// as the baseline. A reset makes it a fresh server's side.
func newAttachedSide() *Side {
	s := NewSide()
	s.attaching = true
	return s
}

// Ingest takes one event, received at received (the local clock).
// Malformed data is ignored: the stream is the kit's, not the student's.
func (s *Side) Ingest(ev events.Event, received time.Time) {
	switch ev.Kind {
	case events.KindRequest:
		var r events.Request
		if json.Unmarshal(ev.Data, &r) == nil {
			s.request(ev.Time, r, ev.Replica, received)
		}
	case events.KindExecution:
		var e bank.Execution
		if json.Unmarshal(ev.Data, &e) == nil && e.Kind != "" {
			before := s.Counts.DepositsOnce
			s.execution(ev.Time, e)
			if d := s.Counts.DepositsOnce - before; d != 0 {
				if len(s.deposited) == maxDeposited {
					s.deposited = s.deposited[1:]
				}
				s.deposited = append(s.deposited, heardDeposit{received: received, amount: d})
			}
		}
	case events.KindKey:
		var k events.Key
		if json.Unmarshal(ev.Data, &k) == nil {
			s.key(ev.Time, k)
		}
	case events.KindDropped:
		var d events.Dropped
		if json.Unmarshal(ev.Data, &d) == nil {
			s.Counts.Dropped += d.Count
		}
	case events.KindClock:
		var c struct {
			Now time.Time `json:"now"`
		}
		if json.Unmarshal(ev.Data, &c) == nil {
			s.labClock(c.Now)
			s.clockHeard = received
		}
	case events.KindReset:
		s.clear()
		// A reset puts the lab clock back on real time, with no clock
		// event: the server publishes the reset on real time right after.
		s.labNow = ev.Time
		s.clockHeard, s.resetHeard = received, received
		s.Note(ev.Time, "reset: fresh accounts, every count back to zero")
	case events.KindRedrive:
		var d bank.DeadLetter
		if json.Unmarshal(ev.Data, &d) == nil && d.TransferID != "" {
			s.Note(ev.Time, redriven(d))
		}
	case KindStream:
		var st Stream
		switch {
		case json.Unmarshal(ev.Data, &st) != nil || ev.Replica == 0:
		case st.Open:
			s.Note(ev.Time, fmt.Sprintf("r%d is back: its event stream opened again; what it sent while away was missed", ev.Replica))
		default:
			s.Note(ev.Time, fmt.Sprintf("r%d's event stream broke: the process exited, or the network failed; "+
				"its requests go unseen until it is back", ev.Replica))
		}
	case events.KindListen:
		var l events.Listen
		switch {
		case json.Unmarshal(ev.Data, &l) != nil:
		case l.Listening:
			s.Note(ev.Time, "key events flow again: the server listens anew and sends every key row")
		default:
			s.Note(ev.Time, "key events stopped: the server lost its database's LISTEN connection and is reconnecting")
		}
	}
}

// Tell pins a story's outcome at the top of the feed, from t on, for
// StoryShown. A reset of the server takes it away.
func (s *Side) Tell(t time.Time, told Told) { s.told, s.toldAt = told, t }

// Told returns the outcome of the last story, if it is still shown at now.
func (s *Side) Told(now time.Time) (Told, bool) {
	if len(s.told.Lines) == 0 || now.Sub(s.toldAt) >= StoryShown {
		return Told{}, false
	}
	return s.told, true
}

// Crash adds a crash's marker line to the feed, and pins it at the top of
// the feed from t on, until the next crash or for CrashShown: which kind
// of crash a side had is a sentence to read out, not a line that goes by.
// A reset of the server takes it away.
func (s *Side) Crash(t time.Time, text string) {
	s.crash = FeedLine{Time: t, Note: text}
	s.push(s.crash)
}

// Crashed returns the last crash's marker line, if it is still pinned at
// now.
func (s *Side) Crashed(now time.Time) (FeedLine, bool) {
	if s.crash.Note == "" || now.Sub(s.crash.Time) >= CrashShown {
		return FeedLine{}, false
	}
	return s.crash, true
}

// Note adds a marker line to the feed.
func (s *Side) Note(t time.Time, text string) {
	s.push(FeedLine{Time: t, Note: text})
}

func (s *Side) push(l FeedLine) {
	s.feed[s.feedNext] = l
	s.feedNext = (s.feedNext + 1) % FeedSize
	s.feedLen = min(s.feedLen+1, FeedSize)
}

// Feed returns up to n feed lines, newest first.
func (s *Side) Feed(n int) []FeedLine {
	n = min(n, s.feedLen)
	out := make([]FeedLine, n)
	for i := range out {
		out[i] = s.feed[(s.feedNext-1-i+2*FeedSize)%FeedSize]
	}
	return out
}

func (s *Side) request(t time.Time, r events.Request, replica int, received time.Time) {
	c := &s.Counts
	c.Requests++
	if replica > 0 && replica <= MaxReplicas {
		c.ByReplica[replica-1]++
	}
	switch {
	case r.Status >= 200 && r.Status < 300:
		c.Succeeded++
	case r.Status == 409:
		c.Conflicts++
	case r.Status >= 500:
		c.Failed++
	case r.Status >= 400:
		c.Rejected++
	}
	if r.Replayed {
		c.Replays++
	}
	s.bucket(t).requests++
	line := FeedLine{Time: t, Request: r, Replica: replica}
	if r.Op != "" && r.Status >= 200 && r.Status < 300 {
		// Each double badges one success of its op: a burst's fifteen
		// doubles badge fifteen of its sixteen 201s, whichever order
		// their answers arrive in.
		if s.doubled[r.Op] > 0 {
			line.Double = true
			if s.doubled[r.Op]--; s.doubled[r.Op] == 0 {
				delete(s.doubled, r.Op)
			}
		}
		if s.ops[r.Op].count == 0 {
			s.suspect(r.Op, received)
		}
	}
	s.push(line)
}

// suspect notes a success for an op no event showed executing. The kit
// publishes an execution before the request that made it, so this is
// either a lost transfer or an execution whose event a crash ate; the next
// state poll tells which.
func (s *Side) suspect(op string, received time.Time) {
	if len(s.suspects) == maxSuspects {
		s.Counts.Lost++ // too many to check: judged on the events alone
		s.suspects = s.suspects[1:]
	}
	s.suspects = append(s.suspects, suspect{op: op, received: received})
}

func (s *Side) execution(t time.Time, e bank.Execution) {
	c := &s.Counts
	c.Executions++
	if e.Op == "" {
		if e.Kind == "deposit" {
			c.DepositsOnce += e.Amount
		}
		return
	}
	// Events can arrive out of order (the 3rd run's before the 2nd's):
	// the highest count seen is what has happened.
	prev := s.ops[e.Op]
	seen := prev.count
	if e.Count <= seen {
		return
	}
	s.remember(e.Op, e.Count)
	if seen > 0 && s.expired(prev) {
		// The key expired in between: a new request, rightly executed.
		c.AfterRetention += e.Count - seen
		if e.Kind == "deposit" {
			c.DepositsOnce += (e.Count - seen) * e.Amount
		}
		return
	}
	if seen == 0 && e.Kind == "deposit" {
		c.DepositsOnce += e.Amount
	}
	extra := e.Count - max(seen, 1)
	if extra <= 0 {
		return
	}
	c.Doubles += extra
	if e.Kind == "deposit" {
		c.CreatedTwice += extra * e.Amount
	} else {
		c.MovedTwice += extra * e.Amount
	}
	s.bucket(t).doubles += extra
	if _, ok := s.doubled[e.Op]; ok || len(s.doubled) < maxSuspects {
		s.doubled[e.Op] += extra
	}
}

// remember records an op's count, forgetting the oldest op when the
// window is full.
func (s *Side) remember(op string, count int64) {
	if _, ok := s.ops[op]; !ok {
		if len(s.opOrder) < OpWindow {
			s.opOrder = append(s.opOrder, op)
		} else {
			delete(s.ops, s.opOrder[s.opNext])
			delete(s.doubled, s.opOrder[s.opNext])
			s.opOrder[s.opNext] = op
			s.opNext = (s.opNext + 1) % OpWindow
		}
	}
	s.ops[op] = opSeen{count: count, at: s.labNow}
}

// expired reports whether the key of the execution seen has outlived the
// retention period by the lab clock now: a run of its op since is a new
// request, rightly executed, however many steps the clock took to get
// there.
func (s *Side) expired(seen opSeen) bool {
	return !seen.at.IsZero() && !s.labNow.IsZero() && s.labNow.Sub(seen.at) >= s.retention
}

// labClock follows the lab clock.
func (s *Side) labClock(now time.Time) {
	if !now.IsZero() {
		s.labNow = now
	}
}

func (s *Side) key(t time.Time, k events.Key) {
	if k.Deleted {
		delete(s.keys, k.RowID)
		return
	}
	if k.Row == nil {
		return
	}
	row, ok := s.keys[k.RowID]
	if !ok {
		if len(s.keys) >= KeyRowsKept {
			s.evictOldestKey()
		}
		row = &KeyRow{RowID: k.RowID, Seen: t}
		s.keys[k.RowID] = row
	}
	if row.Before {
		row.Seen, row.Before = t, false
	}
	row.Key, row.State, row.Changed = keyColumn(k.Row), stateColumn(k.Row), t
}

func (s *Side) evictOldestKey() {
	var oldest *KeyRow
	for _, r := range s.keys {
		if oldest == nil || r.Changed.Before(oldest.Changed) ||
			(r.Changed.Equal(oldest.Changed) && r.RowID < oldest.RowID) {
			oldest = r
		}
	}
	delete(s.keys, oldest.RowID)
}

// keyColumn finds the key in a row of the student's table: a column named
// like the header, or else the first text column whose name has "key" in it.
func keyColumn(row map[string]any) string {
	for _, name := range []string{"key", "idempotency_key", "idem_key"} {
		if v, ok := row[name].(string); ok {
			return v
		}
	}
	names := make([]string, 0, len(row))
	for n := range row {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if v, ok := row[n].(string); ok && strings.Contains(n, "key") {
			return v
		}
	}
	return "?"
}

// stateColumn reads the state column that stage 3 introduces; before it a
// row's existence is its only state.
func stateColumn(row map[string]any) string {
	if v, ok := row["state"].(string); ok {
		return v
	}
	return "claimed"
}

// Keys returns up to n key rows, the most recently changed first.
func (s *Side) Keys(n int) []KeyRow {
	out := make([]KeyRow, 0, len(s.keys))
	for _, r := range s.keys {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Changed.Equal(out[j].Changed) {
			return out[i].Changed.After(out[j].Changed)
		}
		return out[i].RowID > out[j].RowID
	})
	return out[:min(n, len(out))]
}

// KeyCount is how many key rows the dashboard holds.
func (s *Side) KeyCount() int { return len(s.keys) }

func (s *Side) bucket(t time.Time) *sparkBucket {
	sec := t.Unix()
	b := &s.spark[sec%SparkSeconds]
	if b.sec != sec {
		*b = sparkBucket{sec: sec}
	}
	return b
}

// Series returns the requests and doubles of the n seconds ending at now,
// oldest first.
func (s *Side) Series(now time.Time, n int) (requests, doubles []int64) {
	n = min(n, SparkSeconds)
	requests, doubles = make([]int64, n), make([]int64, n)
	end := now.Unix()
	for i := range n {
		sec := end - int64(n-1-i)
		b := s.spark[(sec%SparkSeconds+SparkSeconds)%SparkSeconds]
		if b.sec == sec {
			requests[i], doubles[i] = b.requests, b.doubles
		}
	}
	return requests, doubles
}

// ApplyState takes a state poll that started at polled (the local clock).
// It settles the suspects the poll can judge, adopts the executions the
// database shows and no event reported (after two polls in a row, since
// an event can trail its commit), and runs the money-conservation check.
// A poll that started before the latest reset arrived is dropped: it may
// show the lab before the reset. One that started before the latest clock
// event arrived is taken without its time: the server may have answered
// it before the clock moved, and taking it would put the clock back, so
// that a retry after the retention period read as a double.
func (s *Side) ApplyState(st labctl.State, polled time.Time) {
	if !s.resetHeard.IsZero() && !polled.After(s.resetHeard) {
		return
	}
	s.Outbox, s.OldestDead = st.Outbox, ""
	if st.Engine != "" {
		s.Engine = string(st.Engine)
	}
	if len(st.DeadLetters) > 0 {
		d := st.DeadLetters[0]
		s.OldestDead = d.TransferID + ": " + deadAnswer(d)
	}
	if d, err := time.ParseDuration(st.Config.Retention); err == nil && d > 0 {
		s.retention = d
	}
	if now, err := time.Parse(time.RFC3339Nano, st.Now); err == nil && polled.After(s.clockHeard) {
		s.labClock(now)
	}
	if s.attaching {
		s.attaching = false
		s.baseline(st)
	}
	next := map[string]bool{}
	consider := func(op string, n int64) {
		seen := s.ops[op].count
		switch {
		case n <= seen:
		case s.lagging[op]:
			s.Counts.Unseen += n - seen
			switch extra := n - max(seen, 1); {
			case seen > 0 && s.expired(s.ops[op]):
				s.Counts.AfterRetention += n - seen
			case extra > 0:
				s.Counts.Doubles += extra
			}
			s.remember(op, n)
		case len(next) < maxSuspects:
			next[op] = true
		}
	}
	// An op the dashboard never heard of executed without an event: a
	// crashed process took it with it (a child process killed with -9
	// loses the events it had not streamed yet). That is only knowable
	// while no op has left the window: after that, an unknown op may be
	// one the dashboard forgot.
	forgotten := len(s.opOrder) == OpWindow
	for op, n := range st.Executions {
		if _, ok := s.ops[op]; ok || s.lagging[op] || !forgotten {
			consider(op, n)
		}
	}
	kept := s.suspects[:0]
	for _, sp := range s.suspects {
		n := st.Executions[sp.op]
		switch {
		case n > 0:
			if _, ok := s.ops[sp.op]; !ok && !s.lagging[sp.op] {
				consider(sp.op, n)
			}
		case sp.received.Before(polled):
			s.Counts.Lost++
		default:
			kept = append(kept, sp)
		}
	}
	s.suspects = kept
	s.lagging = next

	m := &s.Money
	m.Known, m.Accounts = true, st.Accounts
	m.Total, m.Opening = 0, 0
	for _, a := range st.Accounts {
		m.Total += a.Balance
		m.Opening += a.Opening
	}
	surplus := m.Total - m.Opening - s.Counts.DepositsOnce - s.base
	// The deposits heard since the poll started may or may not be in its
	// balances: a shortfall they cover is no money that vanished.
	var late int64
	waiting := s.deposited[:0]
	for _, d := range s.deposited {
		if d.received.After(polled) {
			late += d.amount
			waiting = append(waiting, d)
		}
	}
	s.deposited = waiting
	// The figures shown beside the balances are the counts of this moment,
	// not the live ones: the money block is one picture.
	m.MovedTwice, m.CreatedTwice, m.Unseen = s.Counts.MovedTwice, s.Counts.CreatedTwice, s.Counts.Unseen
	verdict := Conserved
	switch {
	case s.Counts.Unseen > 0:
		verdict = Unverified
	case surplus != 0:
		verdict = Broken
	}
	if verdict == Broken && (len(s.lagging) > 0 || (surplus < 0 && surplus+late >= 0)) {
		// Executions no event has reported yet, or deposits heard while
		// the poll was under way, may explain the surplus: the next poll
		// says whether they are real or just late.
		return
	}
	if verdict == m.candidate || m.Verdict == Unchecked {
		// The surplus shown is the one of the verdict shown: a red ✗ is
		// never set beside the balanced figure of a poll that waits for
		// a second to agree.
		m.Verdict, m.Surplus = verdict, surplus
	}
	m.candidate = verdict
}

// baseline takes the first poll of a server attached to as what was
// there before: the executions and key rows no event reported, and the
// balances' surplus over the opening ones, which the deposits made before
// explain (their amounts are not in the state, so the books of the past
// are judged only where they cannot be right: money short of the opening
// balances). The money check then judges from the baseline.
func (s *Side) baseline(st labctl.State) {
	b := &s.Before
	for op, n := range st.Executions {
		if n <= 0 || s.ops[op].count > 0 {
			continue
		}
		s.remember(op, n)
		b.Executions += n
		b.Doubles += n - 1
	}
	for _, row := range st.Keys {
		id, ok := row["rowid"].(float64)
		if !ok {
			continue
		}
		b.Keys++
		if _, heard := s.keys[int64(id)]; !heard && len(s.keys) < KeyRowsKept {
			s.keys[int64(id)] = &KeyRow{RowID: int64(id), Key: keyColumn(row), State: stateColumn(row), Before: true}
		}
	}
	b.KeysMore = len(st.Keys) >= labctl.MaxStateKeys
	var total, opening int64
	for _, a := range st.Accounts {
		total += a.Balance
		opening += a.Opening
	}
	surplus := total - opening - s.Counts.DepositsOnce
	if surplus < 0 {
		b.Vanished, surplus = -surplus, 0
	}
	s.base = surplus
	b.Found = b.Executions > 0 || b.Keys > 0 || s.base != 0 || b.Vanished > 0
}

// redriven is the feed's note for a dead letter an operator sent again:
// which transfer, the answer it was set aside with, and the key its row
// is owed under, so that the row seen owed again, and then sent or set
// aside again, has its cause beside it, and the key the relay's send of
// it should carry. It says what the lab did, not what the relay will do.
func redriven(d bank.DeadLetter) string {
	return fmt.Sprintf("redrive: an operator sent %s again, set aside with %s; its row is owed again, under key %s", d.TransferID, deadAnswer(d), d.Key)
}

// deadAnswer is the core's answer a dead letter was set aside with, as
// the pane shows it: its status and problem type ("400 invalid-posting").
func deadAnswer(d bank.DeadLetter) string {
	answer := strconv.Itoa(d.Status)
	if name := problemName(d.Answer); name != "" {
		answer += " " + name
	}
	return answer
}

// problemName is the type a problem body names, without its /problems/
// prefix, and "" for a body that is no problem.
func problemName(body string) string {
	var b problem.Body
	if json.Unmarshal([]byte(body), &b) != nil {
		return ""
	}
	return strings.TrimPrefix(b.Type, "/problems/")
}
