// Package history records what the grader's clients sent and what came
// back, and what the lab observed meanwhile, on one clock: a check's
// history, or a replayed day's. The checks and the replay record into it;
// grader/timeline draws it. It judges nothing.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"idemlab/grader/timeline"
	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
)

// Recorder keeps a check's history on one clock (the machine's, which the
// grader and every server it runs share): each request a client of the
// check sent, with its answer, and what the lab observed meanwhile, read
// from /lab/events. It is shared by the Ts of one check.
type Recorder struct {
	mu       sync.Mutex
	attempts []timeline.Attempt
	events   []timeline.Event
	// serverErrors are the causes of the server's 5xx answers.
	serverErrors []timeline.ServerError
	// keys are the idempotency keys the check sent: a key row's event is
	// told apart by the value it holds of them. routes are the paths the
	// check sent each key to, and customers the IDs of the lab's
	// population, by each customer's ID, token and Authorization header:
	// the values a key row holds of them are its scope. A path that no
	// request with the row's key went to is not its route: a completed
	// row's location is the path of a later GET of what it made.
	keys      map[string]bool
	routes    map[string]map[string]bool
	customers map[string]string
	// keyRows are the key rows' changes as the servers reported them, and
	// resets when the lab was reset (which drops the key table, and its
	// rows are numbered afresh), on the servers' clock: keyEvents turns
	// them into claims, completions, releases and forgettings.
	keyRows []keyRow
	resets  []time.Time
	// watched are the event streams of the server processes, in the
	// order they were opened.
	watched []*stream
	// streams are the event streams being read.
	streams sync.WaitGroup
	stop    []func()
}

// stream is the event stream of one server process.
type stream struct {
	lab *labclient.Client
	// process is the server process among those on one database, 1 on;
	// 0 for a server alone.
	process int
	// fences carries the time of each clock event that moved nothing,
	// which Fence waits for; a timeline leaves those events out.
	fences chan time.Time
	// ended is closed when the stream ends (a crash ends it).
	ended chan struct{}
}

func newStream(lab *labclient.Client, process int) *stream {
	return &stream{lab: lab, process: process, fences: make(chan time.Time, 64), ended: make(chan struct{})}
}

// keyRow is one report of a key row: the key it holds, its state and its
// scope, or that it was deleted, at the time its commit was heard.
type keyRow struct {
	at      time.Time
	rowID   int64
	deleted bool
	key     string
	state   string
	// customer and route are the row's scope beside its key, when it
	// holds a customer of the population and a path the check sent its
	// key to.
	customer, route string
	// holder is what the row says of who holds the key: each of its
	// columns that holds text and is not a time, by name (a lease
	// owner's token, beside the key, its scope and its fingerprint). The
	// columns are the student's, so no name is looked for: a holder
	// that changes while the row stays in progress, and a later request
	// of the key runs (retried), is a takeover, and a lease renewed (a
	// time moved on) is none.
	holder map[string]string
	// found: the row is what a read of the key table found (Found), not
	// a change its server process reported. What it adds was committed
	// before the read, unheard, and is drawn at the read.
	found bool
}

// NewRecorder returns a recorder with no history yet, which knows keys
// (a replayed day's, sent by its clients) before any request sends them.
func NewRecorder(keys ...string) *Recorder {
	h := &Recorder{keys: map[string]bool{}, routes: map[string]map[string]bool{}, customers: map[string]string{}}
	for _, k := range keys {
		h.keys[k] = true
	}
	return h
}

// Begin notes that client sent a request to method and path with key and
// body (sent is how a report writes it), and returns the attempt's number
// (for Answered) and name (for the Lab-Attempt header). A nil recorder
// notes nothing.
func (h *Recorder) Begin(client, method, path, key, body, sent string) (n int, name string) {
	if h == nil {
		return 0, ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n = len(h.attempts)
	id := fmt.Sprintf("a%d", n+1)
	h.attempts = append(h.attempts, timeline.Attempt{
		ID: id, Client: client, Method: method, Path: path, Key: key,
		Op: opOf(body), Start: time.Now(), Sent: sent,
	})
	if key != "" {
		h.keys[key] = true
		if h.routes[key] == nil {
			h.routes[key] = map[string]bool{}
		}
		h.routes[key][path] = true
	}
	return n, id
}

// Answered notes what attempt n got: a status and problem type, or the
// error the client saw instead (cut says the fault transport made it).
func (h *Recorder) Answered(n, status int, problem, got, errText string, cut bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a := &h.attempts[n]
	a.End, a.Status, a.Problem, a.Got, a.Err, a.Cut = time.Now(), status, problem, got, errText, cut
}

// Lab notes something the grader itself saw happen to the lab: a crash
// or a restart of a server process, or a write its database refused on a
// fault (a count the lab reports going down). A nil recorder notes
// nothing.
func (h *Recorder) Lab(kind, detail string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, timeline.Event{At: time.Now(), Kind: kind, Detail: detail})
}

// Population notes the customers of the lab's population, whose IDs a
// key row holds as its scope: a timeline draws the rows of one key string
// that two customers hold on lanes of their own.
func (h *Recorder) Population(customers []bank.Customer) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range customers {
		// A row may hold the customer as either of its tokens, or as the
		// header that carried one (customerOf), as well as by its ID.
		h.customers[c.ID], h.customers[c.Token] = c.ID, c.ID
		if c.OtherToken != "" {
			h.customers[c.OtherToken] = c.ID
		}
	}
}

// customerOf is the customer of the population that v names: by its ID,
// its token, or an Authorization header that carries the token, however
// spelled ("bearer", "BEARER", spaces around the token), as a server that
// scopes its keys by the header as sent stores it; "" when v names none.
func (h *Recorder) customerOf(v string) string {
	if c := h.customers[v]; c != "" {
		return c
	}
	if f := strings.Fields(v); len(f) == 2 && strings.EqualFold(f[0], "bearer") {
		return h.customers[f[1]]
	}
	return ""
}

// Watch reads the lab's events of the server process at lab until ctx
// ends or the stream breaks (a crash ends it; Restart watches the new
// process). process is the server process among several on one database,
// 1 on, which an execution's event then names; 0 for a server alone. It
// returns once the stream is open, so that every event the server
// publishes from then on is heard.
func (h *Recorder) Watch(ctx context.Context, lab *labclient.Client, process int) error {
	ctx, cancel := context.WithCancel(ctx)
	es, err := lab.OpenEvents(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("watch the lab's events: %w", err)
	}
	s := newStream(lab, process)
	h.mu.Lock()
	h.stop = append(h.stop, cancel)
	h.watched = append(h.watched, s)
	h.mu.Unlock()
	h.streams.Add(1)
	go func() {
		defer h.streams.Done()
		defer close(s.ended)
		defer es.Close()
		es.Read(func(ev events.Event) bool {
			h.heard(s, ev)
			return true
		})
	}()
	return nil
}

// Fence waits until the events every watched server process published
// before now have been heard: it moves the lab clock of each by nothing
// and waits, up to a second each, for the clock event that says so (its
// time is the one the move answered, which no earlier move of the clock
// has). A process whose stream has ended is passed over, and so is one
// whose clock does not move within fenceMove.
func (h *Recorder) Fence(ctx context.Context) {
	h.mu.Lock()
	watched := slices.Clone(h.watched)
	h.mu.Unlock()
	for _, s := range watched {
		select {
		case <-s.ended:
			continue
		default:
		}
		now, err := s.move(ctx)
		if err != nil {
			continue
		}
		s.awaitFence(ctx, now)
	}
}

// fenceMove is how long Fence waits for a process's clock to move: the
// move is a write of the server's database, done in milliseconds, unless
// something of the server's holds the database (a transaction a stage
// left open, which holds every write for as long as it lives); its events
// are then not waited for, and the fence is not held up until the lab
// client gives up.
const fenceMove = 5 * time.Second

// move moves the process's lab clock by nothing, within fenceMove.
func (s *stream) move(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, fenceMove)
	defer cancel()
	return s.lab.Advance(ctx, 0)
}

// awaitFence waits, up to a second, for the clock event of the fence that
// answered now.
func (s *stream) awaitFence(ctx context.Context, now time.Time) {
	wait := time.NewTimer(time.Second)
	defer wait.Stop()
	for {
		select {
		case at := <-s.fences:
			if at.Equal(now) {
				return
			}
		case <-wait.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// ExecutedBy lists the clients whose requests executed op, as the lab's
// execution events name them (each carries the Lab-Attempt it ran in); ok
// is false when no execution of op named its attempt, and the history
// cannot tell. Fence first, so that the events are in.
func (h *Recorder) ExecutedBy(op string) (clients []string, ok bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	client := map[string]string{}
	for _, a := range h.attempts {
		client[a.ID] = a.Client
	}
	for _, e := range h.events {
		if e.Kind == timeline.Execution && e.Op == op && e.Attempt != "" {
			clients, ok = append(clients, client[e.Attempt]), true
		}
	}
	return clients, ok
}

// ExecutedAt is when op's first execution made its business write, as
// its execution event says; ok is false when none has been heard. Fence
// first, so that the events are in.
func (h *Recorder) ExecutedAt(op string) (at time.Time, ok bool) {
	return h.first(func(e timeline.Event) bool { return e.Kind == timeline.Execution && e.Op == op })
}

// CompletedAt is when the lab first heard key's row completed: the
// commit of the change, as its row event says. ok is false when none has
// been heard. Fence first, so that the events are in.
func (h *Recorder) CompletedAt(key string) (at time.Time, ok bool) {
	return h.first(func(e timeline.Event) bool { return e.Kind == timeline.Complete && e.Key == key })
}

// first is the earliest time of the events that match; ok is false when
// none does.
func (h *Recorder) first(match func(timeline.Event) bool) (at time.Time, ok bool) {
	if h == nil {
		return time.Time{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range slices.Concat(h.events, h.keyEvents()) {
		if match(e) && (!ok || e.At.Before(at)) {
			at, ok = e.At, true
		}
	}
	return at, ok
}

// AnsweredAt is when client's last request with key was answered; ok is
// false when it sent none, or none was answered.
func (h *Recorder) AnsweredAt(client, key string) (at time.Time, ok bool) {
	if h == nil {
		return time.Time{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.attempts {
		if a.Client == client && a.Key == key && !a.End.IsZero() {
			at, ok = a.End, true
		}
	}
	return at, ok
}

// Close ends every stream and waits for its reader.
func (h *Recorder) Close() {
	h.mu.Lock()
	stop := h.stop
	h.stop = nil
	h.mu.Unlock()
	for _, cancel := range stop {
		cancel()
	}
	h.streams.Wait()
}

// heard turns one lab event, heard on s, into the history's terms. An
// event is placed when it was read (the stream carries no time), a little
// after it was published, but for an execution, which says when its write
// was made, a key row's change, which says when its commit was heard, and
// a reset, which says when it committed the drop of the key table.
// A reset is not drawn (every check starts with one, before its story):
// it only says that the key rows changed after it are new ones. Its time
// is the server's, as the key rows' are: read off the stream, it can come
// after the claims of the requests the check sent once the reset was
// answered, and those claims would be taken for the old table's rows.
func (h *Recorder) heard(s *stream, ev events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at := ev.Time
	switch ev.Kind {
	case events.KindExecution:
		var e struct {
			Op, Kind, ID  string
			Amount, Count int64
			At            time.Time
			Attempt       string
		}
		if json.Unmarshal(ev.Data, &e) != nil || e.Op == "" {
			return
		}
		if !e.At.IsZero() {
			at = e.At
		}
		detail := fmt.Sprintf("%s %s of %d won, the %s run of its operation", e.Kind, e.ID, e.Amount, Ordinal(e.Count))
		if s.process > 0 {
			detail += ", in the " + timeline.ProcessName(s.process)
		}
		h.events = append(h.events, timeline.Event{At: at, Kind: timeline.Execution, Attempt: e.Attempt, Op: e.Op, Count: e.Count, Ref: e.ID,
			Process: s.process, Detail: detail})
	case events.KindRequest:
		var r events.Request
		if json.Unmarshal(ev.Data, &r) != nil || r.Cause == "" {
			return
		}
		h.serverErrors = append(h.serverErrors, timeline.ServerError{Attempt: r.Attempt, Op: r.Op,
			Line: fmt.Sprintf("%s %s → %d: %s", r.Method, r.Path, r.Status, r.Cause)})
	case events.KindKey:
		var k events.Key
		if json.Unmarshal(ev.Data, &k) != nil {
			return
		}
		if !k.At.IsZero() {
			at = k.At
		}
		h.keyRow(at, k, false)
	case events.KindReset:
		var r struct{ At time.Time }
		if json.Unmarshal(ev.Data, &r) == nil && !r.At.IsZero() {
			at = r.At
		}
		h.resets = append(h.resets, at)
	case events.KindFault:
		var f struct {
			Point string
			Count *int64
		}
		json.Unmarshal(ev.Data, &f)
		detail := f.Point
		if f.Count != nil && *f.Count == 0 {
			detail += " disarmed"
		}
		h.events = append(h.events, timeline.Event{At: at, Kind: timeline.Armed, Detail: detail})
	case events.KindRedrive:
		var d bank.DeadLetter
		if json.Unmarshal(ev.Data, &d) != nil || d.TransferID == "" {
			return
		}
		h.events = append(h.events, timeline.Event{At: at, Kind: timeline.Redrive, Ref: d.TransferID,
			Detail: fmt.Sprintf("%s, set aside with %d, under key %s", d.TransferID, d.Status, d.Key)})
	case events.KindClock:
		var c struct {
			Now   time.Time
			Moved bool
		}
		if json.Unmarshal(ev.Data, &c) != nil || c.Moved {
			h.events = append(h.events, timeline.Event{At: at, Kind: timeline.Clock})
			return
		}
		select {
		case s.fences <- c.Now:
		default:
			// Nobody is fencing: the oldest time makes room.
			select {
			case <-s.fences:
			default:
			}
			s.fences <- c.Now
		}
	}
}

// Found notes key rows as a read of the lab's state found them, at
// asked, when the read was sent: the rows hold every change committed
// before the read, and a change committed after it is heard later than
// asked, so each row takes its place among the reports of its commits. A
// server process started again after a crash reports only the changes it
// hears, and a row its predecessor changed and died before reporting
// would otherwise first show as the next change a retry made to it. What
// a found row adds is drawn at asked, after the restart, though it may
// have been committed before the crash, and its detail says it was found.
func (h *Recorder) Found(asked time.Time, rows []map[string]any) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, row := range rows {
		var id int64
		switch v := row["rowid"].(type) {
		case float64:
			id = int64(v)
		case int64:
			id = v
		default:
			continue
		}
		h.keyRow(asked, events.Key{RowID: id, Row: row}, true)
	}
}

// keyRow notes a key row's report, or what a read found of it (found):
// the key it holds (one the check sent; a row of another key is not the
// history's), its state and its scope, or that it was deleted.
func (h *Recorder) keyRow(at time.Time, k events.Key, found bool) {
	if k.Deleted {
		h.keyRows = append(h.keyRows, keyRow{at: at, rowID: k.RowID, deleted: true})
		return
	}
	r := keyRow{at: at, rowID: k.RowID, found: found}
	for _, v := range k.Row {
		if s, _ := v.(string); h.keys[s] {
			r.key = s
		}
	}
	if r.key == "" {
		return
	}
	for _, v := range k.Row {
		switch s, _ := v.(string); {
		case h.customerOf(s) != "":
			r.customer = h.customerOf(s)
		case h.routes[r.key][s]:
			r.route = s
		}
	}
	r.state, _ = k.Row["state"].(string)
	r.holder = holderOf(k.Row)
	h.keyRows = append(h.keyRows, r)
}

// holderOf is a key row's text columns but its state, each time left
// out (isTime), and NULL as "".
func holderOf(row map[string]any) map[string]string {
	out := map[string]string{}
	for name, v := range row {
		switch s, ok := v.(string); {
		case name == "state":
		case v == nil:
			out[name] = ""
		case ok && !isTime(s):
			out[name] = s
		}
	}
	return out
}

// timeLayouts are the forms a time takes as text in a key row:
// clock.Format's RFC 3339, as most rows write it and a PostgreSQL
// timestamp column is read as; the same with a space for the T, or with
// no zone, as SQLite's datetime and strftime and PostgreSQL's ::text
// write it ("+00" for the zone); and Go's time.Time.String, which the
// SQLite driver writes for a time.Time bound to a TEXT column. A
// fraction of a second is read after the seconds whether or not a layout
// names it.
var timeLayouts = []string{
	time.RFC3339, "2006-01-02T15:04:05Z07", "2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05Z07", "2006-01-02 15:04:05",
	"2006-01-02 15:04:05 -0700 MST",
}

// isTime reports whether s is a time in one of timeLayouts: a lease's
// expiry moved on by a renewal, or by a release that ends the lease in
// place, is no new holder, whichever form the stage stores it in. A
// monotonic clock reading time.Time.String appends (" m=+0.5") is no
// part of the time.
func isTime(s string) bool {
	s, _, _ = strings.Cut(s, " m=")
	for _, layout := range timeLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// handedOver says which of a key row's holder columns changed from last
// to now, each as "name old → new", the values cut to their first
// characters (a token is long and random: its change is what matters);
// "" when none did. A column NULL in one report and a time in the other
// (a lease's expiry, cleared and set) is no holder, and is left out.
func handedOver(last, now map[string]string) string {
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(now)) {
		was, ok := last[name]
		if !ok || was == now[name] || was == "" || now[name] == "" {
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %s → %s", name, short(was), short(now[name])))
	}
	return strings.Join(changed, ", ")
}

// short is s cut to its first 8 characters, "…" after them.
func short(s string) string {
	if r := []rune(s); len(r) > 8 {
		return string(r[:8]) + "…"
	}
	return s
}

// keyEvents turns the key rows' reports into a claim (a row appeared, or
// a completed one went back in progress), a takeover (an in-progress row
// that names a new holder, handedOver, while a later request of its key
// runs, retried), a completion, a release (an
// in-progress row deleted) or a forgetting (a completed row deleted, by a
// purge or by a claim: the row's report does not say which) of the key
// each holds. The reports are taken in the order their commits
// were heard, not the order they arrived in: two server processes on one
// PostgreSQL database each report every change (the database tells them
// all), each on its own stream, and the second report of a change, which
// finds the row as the first left it, adds nothing. After a reset the
// rows are new ones, numbered afresh.
func (h *Recorder) keyEvents() []timeline.Event {
	reports := slices.Clone(h.keyRows)
	slices.SortStableFunc(reports, func(a, b keyRow) int { return a.at.Compare(b.at) })
	resets := slices.Clone(h.resets)
	slices.SortFunc(resets, time.Time.Compare)
	rows := map[int64]keyRow{}
	// held is when each row's holder claimed it or took it over.
	held := map[int64]time.Time{}
	var out []timeline.Event
	event := func(at time.Time, kind string, r keyRow, detail string) {
		if r.found {
			// Drawn at the read, after the restart, though it may have
			// happened before the crash: the hover says so.
			detail = strings.TrimPrefix(detail+"; found by a read of the key table, committed before it and unheard", "; ")
		}
		out = append(out, timeline.Event{At: at, Kind: kind, Key: r.key, Customer: r.customer, Route: r.route, Detail: detail})
	}
	for _, r := range reports {
		for len(resets) > 0 && !resets[0].After(r.at) {
			clear(rows)
			resets = resets[1:]
		}
		last, seen := rows[r.rowID]
		if r.deleted {
			if seen {
				kind := timeline.Release
				if last.state == "completed" {
					kind = timeline.Forget
				}
				event(r.at, kind, last, "")
				delete(rows, r.rowID)
			}
			continue
		}
		switch {
		case !seen:
			held[r.rowID] = r.at
			event(r.at, timeline.Claim, r, r.state)
			if r.state == "completed" {
				event(r.at, timeline.Complete, r, "")
			}
		case r.state == "completed" && last.state != "completed":
			event(r.at, timeline.Complete, r, "")
		case r.state != "completed" && last.state == "completed":
			// A completed row back in progress was claimed again in
			// place: an expired key reused, or a takeover that opened a
			// key its original had just completed.
			held[r.rowID] = r.at
			event(r.at, timeline.Claim, r, r.state+", again, in the completed key's row")
		case r.state == "in_progress" && last.state == "in_progress" && handedOver(last.holder, r.holder) != "" && h.retried(r, held[r.rowID]):
			// Still in progress, held by someone else: a retry took the
			// key over (its lease owner changed). Only the holder tells
			// this apart from nothing at all: the state is the same. A
			// row with no state column (before stage 3, or a middleware
			// lab audit reads) says nothing of a holder: its text columns
			// may change as its request ends.
			held[r.rowID] = r.at
			event(r.at, timeline.Takeover, r, handedOver(last.holder, r.holder))
		}
		rows[r.rowID] = r
	}
	return out
}

// retried reports whether a request of r's key was sent after since, when
// the row's holder claimed the key or took it over, and no later than r,
// and was still waiting for its answer when r was heard: only such a
// request can have taken the key over. A column the holder changes
// itself as it works (a recovery point it reached, an answer written in
// place) changes while no later request of the key runs. A row found by
// a read may have changed before the crash that cut its request, so for
// it the request need only have been sent.
func (h *Recorder) retried(r keyRow, since time.Time) bool {
	return slices.ContainsFunc(h.attempts, func(a timeline.Attempt) bool {
		return a.Key == r.key && a.Start.After(since) && !a.Start.After(r.at) &&
			(r.found || a.End.IsZero() || !a.End.Before(r.at))
	})
}

// History is what was recorded so far.
func (h *Recorder) History() *timeline.History {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := &timeline.History{Attempts: append([]timeline.Attempt(nil), h.attempts...),
		ServerErrors: append([]timeline.ServerError(nil), h.serverErrors...)}
	out.Events = slices.Concat(h.events, h.keyEvents())
	for i := range out.Attempts {
		if out.Attempts[i].End.IsZero() {
			out.Attempts[i].End = time.Now()
			out.Attempts[i].Err = "no answer yet when the check ended"
		}
	}
	return out
}

// opOf is the op a request body names in metadata.op, if any.
func opOf(body string) string {
	var v struct {
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return ""
	}
	op, _ := v.Metadata["op"].(string)
	return op
}

// Executed says how often an operation executed, as a report reads it:
// "never executed", "executed once", "executed twice", "executed n times".
func Executed(n int64) string {
	if n == 0 {
		return "never executed"
	}
	return "executed " + Times(n)
}

// Times says how many times an operation ran: never, once, twice, or n
// times.
func Times(n int64) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// Ordinal is n as a place in order: "1st", "2nd", "3rd", "11th", "22nd".
func Ordinal(n int64) string {
	suffix := "th"
	switch n % 10 {
	case 1:
		suffix = "st"
	case 2:
		suffix = "nd"
	case 3:
		suffix = "rd"
	}
	if n%100 >= 11 && n%100 <= 13 {
		suffix = "th"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Describe writes a request in one line for a report: its method and
// path, each Idempotency-Key header as sent, and its body, cut short past
// 200 bytes. The cut falls between two characters, never inside one: a
// body of letters above U+FFFF (four bytes each) would otherwise end in a
// broken character the student cannot read.
func Describe(method, path string, keys []string, body string) string {
	s := method + " " + path
	for _, k := range keys {
		s += "  Idempotency-Key: " + k
	}
	if len(body) > 200 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = fmt.Sprintf("%s… (%d bytes)", body[:cut], len(body))
	}
	if body != "" {
		s += "  " + body
	}
	return s
}
