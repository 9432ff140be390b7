// Package timeline draws what a check's clients and the lab did, on one
// clock, so that a student sees the race instead of imagining it: one lane
// per client, a bar from each request's send to its answer, and marks
// where the server claimed a key, took it over, executed an operation and
// completed the key. The executions that made a money finding (the two of
// a double) are highlighted, and so is the execution a client was told of
// and that never happened (a loss).
//
// A History is what a check recorded; Focus picks the part a finding is
// about; Text draws it for a terminal and HTML for a browser.
package timeline

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Attempt is one request a client sent and what came of it.
type Attempt struct {
	// ID names the attempt; the lab's events carry it (the Lab-Attempt
	// header), so that an execution is drawn on the lane that caused it.
	ID string `json:"id"`
	// Client is the lane: the client that sent it ("client 3").
	Client string `json:"client"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Key    string `json:"key,omitempty"`
	// Op is the logical operation the body names (metadata.op).
	Op    string    `json:"op,omitempty"`
	Start time.Time `json:"start"`
	// End is when the answer came, or when the client stopped waiting.
	End     time.Time `json:"end"`
	Status  int       `json:"status,omitempty"`
	Problem string    `json:"problem,omitempty"`
	// Err is what the client saw instead of an answer.
	Err string `json:"error,omitempty"`
	// Cut says the fault transport broke the exchange on purpose.
	Cut bool `json:"cut,omitempty"`
	// Sent and Got describe the request and the answer in one line each.
	Sent string `json:"sent"`
	Got  string `json:"got"`
}

// Answered reports whether the client got a status back.
func (a Attempt) Answered() bool { return a.Err == "" && a.Status != 0 }

// Answer is the attempt's answer in a few words: "201", "409
// duplicate-request", "cut", "no answer".
func (a Attempt) Answer() string {
	switch {
	case a.Cut:
		return "cut"
	case !a.Answered():
		return "no answer"
	}
	s := itoa(a.Status)
	if a.Problem != "" {
		s += " " + shortProblem(a.Problem)
	}
	return s
}

// The kinds of Event.
const (
	// Claim: a key row appeared (the key was claimed).
	Claim = "claim"
	// Complete: a key row reached the state completed.
	Complete = "complete"
	// Takeover: an in-progress key row changed hands: a retry took the
	// key over and wrote itself in as the row's holder (a lease owner, a
	// token), the row still in progress. The row shows the new holder,
	// not whether the old one's lease had run out: a takeover that steals
	// a live lease is drawn alike.
	Takeover = "takeover"
	// Release: an in-progress key row was deleted (its request gave it
	// back).
	Release = "release"
	// Forget: a completed key row was deleted: the key was forgotten. The
	// key table shows the row gone, not what deleted it (a purge, a claim
	// that found it expired, or one that deleted another customer's key
	// of the same string), and the timeline says no more than it shows.
	Forget = "forget"
	// Execution: the server executed an operation (its business write).
	Execution = "execution"
	// Armed: a fault point was armed through the lab API.
	Armed = "armed"
	// Crash: the server process ended.
	Crash = "crash"
	// Restart: the server process was started again.
	Restart = "restart"
	// Clock: the lab clock was moved.
	Clock = "clock"
	// Redrive: an operator sent a dead letter again (stage 9's POST
	// /lab/outbox/redrive): its row is owed again. Ref is its transfer.
	Redrive = "redrive"
	// WriteRefused: the server's database refused a write of the
	// server's, as a fault armed through the lab API has it do (stage 9's
	// fail-outbox-settle, the relay's writes to the outbox). The check
	// notes it when it sees the fault's count go down: at its first look
	// after the refusal, every few milliseconds once its transfers have
	// answered, so that a refusal made while they ran is placed after
	// the last of them, and refusals between two looks share one mark.
	WriteRefused = "write-refused"
)

// Missing is the kind of the mark drawn at an answer that told a client
// its operation ran when it never did: there is no execution to point at.
const Missing = "missing"

// Refused is the kind of the mark drawn at a 409 that told a request it
// was a duplicate of one already done, for a finding that the request
// never ran: its operation may have run (the original of an edited
// resubmission did), the refused request did not.
const Refused = "refused"

// Event is one thing the lab observed.
type Event struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Attempt is the ID of the attempt it happened in, if known.
	Attempt string `json:"attempt,omitempty"`
	Key     string `json:"key,omitempty"`
	Op      string `json:"op,omitempty"`
	// Count is, for an execution, which run of its op it was.
	Count int64 `json:"count,omitempty"`
	// Ref is, for an execution, the resource it made (tr_…, dp_…).
	Ref string `json:"ref,omitempty"`
	// Process is, for an execution, the server process it ran in, 1 on,
	// when several run on one database; 0 for a server alone.
	Process int `json:"process,omitempty"`
	// Customer and Route are, for a key's event, the scope its row holds
	// beside the key, when the history knows them: a customer of the
	// lab's population and a path the check sent its key to.
	Customer string `json:"customer,omitempty"`
	Route    string `json:"route,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// History is everything a check recorded.
type History struct {
	Attempts []Attempt `json:"attempts"`
	Events   []Event   `json:"events"`
	// ServerErrors are the causes the server gave for its 5xx answers
	// (the lab's request events), in the order they came.
	ServerErrors []ServerError `json:"server_errors,omitempty"`
}

// ServerError is the cause the server gave for one of its 5xx answers.
type ServerError struct {
	// Attempt is the ID of the attempt it answered, if the request named
	// one (Lab-Attempt); Op is the operation its body named.
	Attempt string `json:"attempt,omitempty"`
	Op      string `json:"op,omitempty"`
	// Line says it in one line: "POST /transfers → 500: <cause>".
	Line string `json:"line"`
}

// ServerErrorsOf are the causes behind the 5xx answers of the attempts f
// is about (those Focus draws, and those it counts in Hidden), one line
// each, in the order they came: a check of several rounds made 5xx
// answers in each, and those of another round's operation are not what
// the failing operation's requests got. The cause of a request that named
// no operation (a GET of the transfer a story made) is kept: no other
// round's operation made it, and a check that reads an answer fails at
// the read that got a 5xx. A finding that names no operation the history
// holds is about every request, and gets every cause.
func (h History) ServerErrorsOf(f Finding) []string {
	ops, involved := h.involved(f)
	ids := map[string]bool{}
	for _, a := range involved {
		ids[a.ID] = true
	}
	var out []string
	for _, e := range h.ServerErrors {
		if len(involved) == 0 || ids[e.Attempt] || e.Op == "" || e.Attempt == "" && slices.Contains(ops, e.Op) {
			out = append(out, e.Line)
		}
	}
	return out
}

// involved are the operations f is about (those it names, and those that
// made the resources it names) and the attempts of those operations.
func (h History) involved(f Finding) (ops []string, involved []Attempt) {
	ops = f.ops()
	for _, e := range h.Events {
		if e.Kind == Execution && e.Ref != "" && slices.Contains(f.Refs, e.Ref) && !slices.Contains(ops, e.Op) {
			ops = append(ops, e.Op)
		}
	}
	for _, a := range h.Attempts {
		if a.Op != "" && slices.Contains(ops, a.Op) {
			involved = append(involved, a)
		}
	}
	return ops, involved
}

// Finding is the money finding a timeline explains.
type Finding struct {
	Check string `json:"check"`
	Claim string `json:"claim"`
	// Harm names the finding ("double") and Explain says what it means.
	Harm    string `json:"harm"`
	Explain string `json:"explain"`
	// Got is the evidence, as the failure printed it.
	Got       string `json:"got"`
	Reproduce string `json:"reproduce"`
	// Also is the money finding the check made itself, where a double
	// the books showed leads it (a wrong answer, say): the report says it
	// after the lead's evidence, and the page says it too.
	Also *Also `json:"also,omitempty"`
	// Excess are the operations that executed more often than asked:
	// their executions are highlighted.
	Excess []string `json:"excess,omitempty"`
	// Missing are the operations a client was told of that never executed:
	// the answers that claimed them are highlighted.
	Missing []string `json:"missing,omitempty"`
	// Named are operations the evidence names, drawn without a highlight:
	// a failure that harmed no money, or found harm in no one operation.
	Named []string `json:"named,omitempty"`
	// Refs are resources the finding is about (the transfers the core
	// ledger never heard of): the executions that made them are
	// highlighted.
	Refs []string `json:"refs,omitempty"`
	// Clients, when set, are the clients whose answers a finding about
	// answers (a request told it was a duplicate) is about; the others
	// of its operations are drawn without a highlight.
	Clients []string `json:"clients,omitempty"`
	// ToldDuplicate says that, whatever the finding's harm, its evidence
	// holds requests told 409 duplicate-request that never ran (an
	// operation can be both run twice and refused so for its edit):
	// their answers are marked as a told-duplicate finding's are.
	ToldDuplicate bool `json:"told_duplicate,omitempty"`
}

// Also is a lesser money finding beside a timeline's Finding: its harm,
// what it means, and its evidence, as the failure printed them.
type Also struct {
	Harm    string `json:"harm"`
	Explain string `json:"explain"`
	Got     string `json:"got"`
}

// Highlight is how a timeline draws the executions that made a finding:
// its glyph (terminal), its class (HTML), what the legend says of it and
// what each mark's hover text says, all of them the finding's harm.
type Highlight struct {
	Glyph  rune
	Class  string
	Legend string
	Title  string
}

// The highlights, by the harm they show.
var (
	ranTooOften = Highlight{'✗', "excess", "execution of the finding (ran more often than asked)", "executed: its operation ran more often than asked"}
	ranRefused  = Highlight{'✗', "excess", "execution of the finding (ran though its client was told it did not)", "executed though its client was told it did not"}
	notPosted   = Highlight{'⊘', "unposted", "transfer executed, never posted to the core ledger", "executed, and the core ledger never posted it"}
	postedTwice = Highlight{'✗', "posted-twice", "transfer executed once, posted more than once", "executed once, and the core ledger posted it more than once"}
	unexecuted  = Highlight{'◇', "unexecuted", "transfer posted to the core ledger, never executed", "posted to the core ledger, and it never executed"}
	// The words speak of the request, not of its operation: the original
	// of an edited resubmission told duplicate ran, once.
	toldDuplicate = Highlight{'⊗', "refused", "told its request was a duplicate (409); that request never ran",
		"told it was a duplicate of a request already done; this request never ran"}
	named = Highlight{'◆', "named", "execution the finding names", "executed: the finding names it"}
)

// highlights maps a harm, as the grader's checks name it (judging.Harm;
// the package stays clear of the grader's) and as lab replay counts it
// (its findings' kinds), to how its marks are drawn: every name of either
// is here, those that highlight nothing of their own with named, and
// grader's tests hold the names to judging's and the replay's.
var highlights = map[string]Highlight{
	"double": ranTooOften, "double_applied": ranTooOften,
	"moved though refused": ranRefused,
	"not posted":           notPosted, "not_posted": notPosted,
	"posted twice": postedTwice, "posted_twice": postedTwice,
	"posted though not executed": unexecuted, "posted_unexecuted": unexecuted,
	"told duplicate, never ran": toldDuplicate, "told_duplicate": toldDuplicate,
	"lost": named, "lost_transfers": named,
	"books do not balance": named, "balance_mismatches": named, "negative_balances": named,
	"wrong answer": named, "wrong_answers": named,
	"no usable answer": named, "no_usable_answer": named,
	"stuck key": named, "stuck_in_progress": named,
	"cross-customer leak": named,
	"lost update":         named, "lost_updates": named,
	"invoices_paid_twice": named, "mismatched_replays": named, "unexpected_status": named, "edits_not_served": named,
	"key_unobserved": named,
}

// HighlightOf is how the marks of a finding of harm are drawn, and
// whether harm is one the timeline knows by name.
func HighlightOf(harm string) (Highlight, bool) {
	h, ok := highlights[harm]
	return h, ok
}

// Highlight is how the finding's marks are drawn: by its harm, and for a
// harm that highlights no mark of its own (a contract difference, a loss)
// as an execution the evidence names.
func (f Finding) Highlight() Highlight {
	if h, ok := highlights[f.Harm]; ok {
		return h
	}
	return named
}

// markHighlight is how m, a highlighted mark, is drawn: an answer that
// refused a request that never ran as a told duplicate, whatever the
// finding's harm (the mark is about the request, not its operation), and
// an execution by the finding's harm.
func (f Finding) markHighlight(m Mark) Highlight {
	if m.Kind == Refused {
		return toldDuplicate
	}
	return f.Highlight()
}

// refuses reports whether the finding marks the 409s that told a request
// it was a duplicate of one already done.
func (f Finding) refuses() bool { return f.ToldDuplicate || f.Highlight() == toldDuplicate }

// ops is every operation the finding is about.
func (f Finding) ops() []string {
	return append(append(slices.Clone(f.Excess), f.Missing...), f.Named...)
}

// Mark is something drawn on a lane at one moment.
type Mark struct {
	At   time.Time
	Kind string
	// Process is, for an execution, the server process it ran in
	// (Event.Process).
	Process int
	// Highlight marks what made the finding.
	Highlight bool
	Detail    string
}

// Lane is one row of a timeline: a client's attempts, or the lab's own
// row for a key or for faults and crashes.
type Lane struct {
	Label    string
	Attempts []Attempt
	Marks    []Mark
	// Lab says the lane is the lab's, not a client's.
	Lab bool
	// Scope is, for a key lane, the scope that tells its rows apart from
	// those of another lane of the same key string: the customer, the
	// route, or both. It is drawn where a client's lane has its answer.
	Scope string
	// client is the client whose requests the lane holds.
	client string
}

// answer is the lane's last answer, or a key lane's scope.
func (l Lane) answer() string {
	if len(l.Attempts) == 0 {
		return l.Scope
	}
	return l.Attempts[len(l.Attempts)-1].Answer()
}

// highlighted reports whether the lane holds a highlighted mark.
func (l Lane) highlighted() bool {
	return slices.ContainsFunc(l.Marks, func(m Mark) bool { return m.Highlight })
}

// highlighted reports whether m is an execution of the finding, or an
// answer that refused a request the finding says never ran.
func highlighted(m Mark) bool { return (m.Kind == Execution || m.Kind == Refused) && m.Highlight }

// drawnHighlights are how the highlighted marks v draws are drawn, each
// once, in the order the legend names them: the executions' (by the
// finding's harm), then the refused answers'.
func (v View) drawnHighlights() []Highlight {
	var out []Highlight
	for _, kind := range []string{Execution, Refused} {
		if !v.draws(func(m Mark) bool { return m.Kind == kind && highlighted(m) }) {
			continue
		}
		if h := v.Finding.markHighlight(Mark{Kind: kind}); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// missing reports whether m is an answer that told of an execution that
// never happened.
func missing(m Mark) bool { return m.Kind == Missing }

// View is the part of a history a finding is about, ready to draw.
type View struct {
	Finding  Finding
	From, To time.Time
	Lanes    []Lane
	// Hidden counts the client lanes left out, by their last answer.
	Hidden map[string]int
}

// ProcessName names server process n among those on one database, as a
// check's story does: "first process", "second process".
func ProcessName(n int) string {
	words := []string{"", "first", "second", "third", "fourth"}
	if n > 0 && n < len(words) {
		return words[n] + " process"
	}
	return "process " + strconv.Itoa(n)
}

// Processes says on which lanes the executions v draws ran in each
// server process, when they ran in more than one: "executed in the first
// process: in flight #2; in the second: in flight". It is "" when they
// ran in one, or in a server alone: then there is nothing to tell.
func (v View) Processes() string {
	lanes := map[int][]string{}
	for _, l := range v.Lanes {
		for _, m := range l.Marks {
			if m.Kind == Execution && m.Process > 0 && !slices.Contains(lanes[m.Process], l.Label) {
				lanes[m.Process] = append(lanes[m.Process], l.Label)
			}
		}
	}
	if len(lanes) < 2 {
		return ""
	}
	var parts []string
	for i, p := range slices.Sorted(maps.Keys(lanes)) {
		name := ProcessName(p)
		if i > 0 {
			name, _ = strings.CutSuffix(name, " process")
		}
		parts = append(parts, fmt.Sprintf("in the %s: %s", name, strings.Join(lanes[p], ", ")))
	}
	return "executed " + strings.Join(parts, "; ")
}

// Story reports whether the view shows more than one request, or a crash
// or restart: a single request on its own draws nothing worth a picture.
func (v View) Story() bool {
	requests := v.HiddenLanes()
	for _, l := range v.Lanes {
		requests += len(l.Attempts)
		for _, m := range l.Marks {
			if m.Kind == Crash || m.Kind == Restart {
				return true
			}
		}
	}
	return requests > 1
}

// draws reports whether any lane of v holds a mark of which is reports
// true: the legend names only what the picture holds.
func (v View) draws(is func(Mark) bool) bool {
	for _, l := range v.Lanes {
		if slices.ContainsFunc(l.Marks, is) {
			return true
		}
	}
	return false
}

// HiddenLanes is how many client lanes were left out.
func (v View) HiddenLanes() int {
	n := 0
	for _, c := range v.Hidden {
		n += c
	}
	return n
}

// Focus returns the part of h that f is about: the attempts of its
// operations (and of their keys), the lab's events while they ran, and at
// most lanes client lanes, those with a highlighted mark first; the rest
// are counted in Hidden. ok is false when the history holds no attempt of
// the finding's operations.
func (h History) Focus(f Finding, lanes int) (v View, ok bool) {
	ops, involved := h.involved(f)
	keys := map[string]bool{}
	for _, a := range involved {
		if a.Key != "" {
			keys[a.Key] = true
		}
	}
	if len(involved) == 0 {
		return View{}, false
	}
	v = View{Finding: f, From: involved[0].Start, To: involved[0].End, Hidden: map[string]int{}}
	for _, a := range involved {
		v.From = minTime(v.From, a.Start)
		v.To = maxTime(v.To, a.End)
	}
	// A fault armed just before the first request is part of its story
	// (the crash it arms comes later): the view starts there.
	lookBack := v.From.Add(-v.To.Sub(v.From) / 4)
	for _, e := range h.Events {
		if e.Kind == Armed && e.At.Before(v.From) && !e.At.Before(lookBack) {
			v.From = e.At
		}
	}
	// An operator who re-drives the dead letter of a transfer the view
	// draws does it after its request answered, often seconds after: it
	// is part of the transfer's story, and the view runs on to it.
	made := map[string]bool{}
	for _, e := range h.Events {
		if e.Kind == Execution && e.Ref != "" && slices.Contains(ops, e.Op) {
			made[e.Ref] = true
		}
	}
	for _, e := range h.Events {
		if e.Kind == Redrive && made[e.Ref] {
			v.To = maxTime(v.To, e.At)
		}
	}
	// A write refused on a fault the story armed comes after its requests
	// when it is the relay's (it sends what they committed): the view runs
	// on to the last one, so that it shows where the relay was refused.
	for _, e := range h.Events {
		if e.Kind == WriteRefused && e.At.After(v.From) {
			v.To = maxTime(v.To, e.At)
		}
	}
	byID := map[string]int{}
	var clients []Lane
	for _, a := range involved {
		i := laneFor(clients, a)
		if i < 0 {
			i = len(clients)
			clients = append(clients, Lane{Label: a.Client, client: a.Client})
			if n := countClient(clients, a.Client); n > 1 {
				clients[i].Label = fmt.Sprintf("%s #%d", a.Client, n)
			}
		}
		clients[i].Attempts = append(clients[i].Attempts, a)
		byID[a.ID] = i
	}
	// A key is one customer's, on one route: the rows of one key string
	// that two customers (or two routes) hold get a lane each.
	keyLanes := map[scope]*Lane{}
	var keyOrder []scope
	keyLane := func(sc scope) *Lane {
		if keyLanes[sc] == nil {
			keyLanes[sc] = &Lane{Label: "key " + sc.key, Lab: true}
			keyOrder = append(keyOrder, sc)
		}
		return keyLanes[sc]
	}
	// An execution no request's lane holds goes on its key's lane.
	laneOfKey := func(k string) *Lane {
		for _, sc := range keyOrder {
			if sc.key == k {
				return keyLanes[sc]
			}
		}
		return keyLane(scope{key: k})
	}
	lab := &Lane{Label: "lab", Lab: true}
	for _, e := range h.Events {
		if e.At.Before(v.From) || e.At.After(v.To) {
			continue
		}
		switch e.Kind {
		case Execution:
			if !slices.Contains(ops, e.Op) {
				continue
			}
			hot := slices.Contains(f.Excess, e.Op) || e.Ref != "" && slices.Contains(f.Refs, e.Ref)
			m := Mark{At: e.At, Kind: Execution, Process: e.Process, Highlight: hot, Detail: e.Detail}
			if i, ok := byID[e.Attempt]; ok {
				clients[i].Marks = append(clients[i].Marks, m)
			} else if k := opKey(involved, e.Op); k != "" {
				lane := laneOfKey(k)
				lane.Marks = append(lane.Marks, m)
			}
		case Claim, Takeover, Complete, Release, Forget:
			if keys[e.Key] {
				lane := keyLane(scope{e.Key, e.Customer, e.Route})
				lane.Marks = append(lane.Marks, Mark{At: e.At, Kind: e.Kind, Detail: scopeDetail(e)})
			}
		default:
			lab.Marks = append(lab.Marks, Mark{At: e.At, Kind: e.Kind, Detail: e.Detail})
		}
	}
	// A client told its operation ran, when it never did: the answer is
	// the highlight, since there is no execution to point at.
	for i := range clients {
		for _, a := range clients[i].Attempts {
			if slices.Contains(f.Missing, a.Op) && a.Answered() && a.Status < 300 && a.Status >= 200 {
				clients[i].Marks = append(clients[i].Marks, Mark{At: a.End, Kind: Missing, Highlight: true, Detail: "told " + a.Answer() + ", and nothing executed"})
			}
		}
	}
	// A request told it was a duplicate (409), and never ran: the answer
	// is the highlight, whether or not its operation ran for another
	// request.
	if f.refuses() {
		for i := range clients {
			if len(f.Clients) > 0 && !slices.Contains(f.Clients, clients[i].client) {
				continue
			}
			for _, a := range clients[i].Attempts {
				if a.Answered() && a.Status == 409 && a.Problem == duplicateRequest {
					clients[i].Marks = append(clients[i].Marks, Mark{At: a.End, Kind: Refused, Highlight: true, Detail: "told " + a.Answer()})
				}
			}
		}
	}
	v.Lanes = pickLanes(clients, lanes, v.Hidden, v.To.Sub(v.From)/100)
	labelScopes(keyLanes)
	// The scopes of one key string are drawn together, in the order the
	// key strings came.
	first := map[string]int{}
	for i, sc := range keyOrder {
		if _, ok := first[sc.key]; !ok {
			first[sc.key] = i
		}
	}
	slices.SortStableFunc(keyOrder, func(a, b scope) int { return cmp.Compare(first[a.key], first[b.key]) })
	if n := keyStrings(keyOrder); n > maxKeyLanes {
		// Many keys, one per operation: their claims and completions
		// share one lane.
		all := Lane{Label: fmt.Sprintf("%d keys", n), Lab: true}
		for _, k := range keyOrder {
			all.Marks = append(all.Marks, keyLanes[k].Marks...)
		}
		keyLanes, keyOrder = map[scope]*Lane{{}: &all}, []scope{{}}
	}
	for _, k := range keyOrder {
		v.Lanes = append(v.Lanes, *keyLanes[k])
	}
	if len(lab.Marks) > 0 {
		v.Lanes = append(v.Lanes, *lab)
	}
	for i := range v.Lanes {
		sort.SliceStable(v.Lanes[i].Marks, func(a, b int) bool { return v.Lanes[i].Marks[a].At.Before(v.Lanes[i].Marks[b].At) })
	}
	return v, true
}

// scope is what a key lane draws: the rows of one key string, of one
// customer and one route (those the history knows of: empty when a row
// holds none of them).
type scope struct{ key, customer, route string }

// labelScopes gives the lanes of a key string that several scopes hold
// what tells them apart (the customer, the route, or both) as their
// Scope, drawn at the lane's end: a terminal cuts a label short, and two
// lanes of one key string would read as one key twice. A row that holds
// no customer the history knows of is said to.
func labelScopes(lanes map[scope]*Lane) {
	of := map[string][]scope{}
	for sc := range lanes {
		of[sc.key] = append(of[sc.key], sc)
	}
	for _, scs := range of {
		if len(scs) < 2 {
			continue
		}
		customers, routes := map[string]bool{}, map[string]bool{}
		for _, sc := range scs {
			customers[sc.customer], routes[sc.route] = true, true
		}
		for _, sc := range scs {
			var parts []string
			if len(customers) > 1 {
				parts = append(parts, cmp.Or(sc.customer, "no known customer"))
			}
			if len(routes) > 1 {
				parts = append(parts, cmp.Or(sc.route, "no known route"))
			}
			lanes[sc].Scope = strings.Join(parts, " ")
		}
	}
}

// scopeDetail is what a key mark's hover says: its event's detail, and
// the scope its row holds, when the history knows it.
func scopeDetail(e Event) string {
	var parts []string
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	if e.Customer != "" {
		parts = append(parts, "customer "+e.Customer)
	}
	if e.Route != "" {
		parts = append(parts, e.Route)
	}
	return strings.Join(parts, "; ")
}

// duplicateRequest is the problem type of the 409 that tells a request it
// is a duplicate of one already done. The other 409s say something else:
// request-in-progress asks the client to wait, and stage 8's
// duplicate-reference refuses a second payment of an invoice already
// paid, which the day's books judge apart.
const duplicateRequest = "/problems/duplicate-request"

// keyStrings is how many key strings scopes hold.
func keyStrings(scopes []scope) int {
	seen := map[string]bool{}
	for _, sc := range scopes {
		seen[sc.key] = true
	}
	return len(seen)
}

// maxKeyLanes is how many key strings get lanes of their own (one for
// each scope that holds the string); more share one.
const maxKeyLanes = 2

// pickLanes keeps at most n client lanes, by rank (a highlighted mark,
// then any mark, then the earliest send), shown in the order their first
// request left, those that left within one grain of each other (released
// by one barrier) by their client's number; it counts the others in
// hidden by their last answer.
func pickLanes(clients []Lane, n int, hidden map[string]int, grain time.Duration) []Lane {
	rank := func(l Lane) int {
		switch {
		case l.highlighted():
			return 0
		case len(l.Marks) > 0:
			return 1
		}
		return 2
	}
	order := make([]int, len(clients))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rank(clients[order[a]]) < rank(clients[order[b]]) })
	keep := map[int]bool{}
	for j, i := range order {
		if j < n {
			keep[i] = true
		} else {
			hidden[clients[i].answer()]++
		}
	}
	var out []Lane
	for i, l := range clients {
		if keep[i] {
			out = append(out, l)
		}
	}
	// A release is a run of lanes whose first sends follow each other
	// within a grain; a wider gap starts the next. Cutting time into
	// slots of a grain instead would split a release that straddles a
	// slot's edge, and draw clients 12 to 16 above 7 to 11.
	start := func(l Lane) time.Time { return l.Attempts[0].Start }
	sort.SliceStable(out, func(a, b int) bool { return start(out[a]).Before(start(out[b])) })
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && start(out[j]).Sub(start(out[j-1])) <= grain {
			j++
		}
		release := out[i:j]
		sort.SliceStable(release, func(a, b int) bool { return labelLess(release[a].Label, release[b].Label) })
		i = j
	}
	return out
}

// labelLess orders lane labels with their numbers as numbers: client 2
// before client 10.
func labelLess(a, b string) bool {
	pa, na := splitNumber(a)
	pb, nb := splitNumber(b)
	if pa != pb || na < 0 || nb < 0 {
		return a < b
	}
	return na < nb
}

// splitNumber splits "client 12" into "client " and 12; the number is -1
// when the label does not end in one.
func splitNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}

// laneFor is the lane of a's client whose last request was answered
// before a left, or -1: requests of one client that overlap (sent from
// several goroutines) get a lane each, so that no bar hides another.
func laneFor(lanes []Lane, a Attempt) int {
	for i, l := range lanes {
		if l.client == a.Client && !l.Attempts[len(l.Attempts)-1].End.After(a.Start) {
			return i
		}
	}
	return -1
}

func countClient(lanes []Lane, client string) int {
	n := 0
	for _, l := range lanes {
		if l.client == client {
			n++
		}
	}
	return n
}

// opKey is the key the first attempt of op was sent with.
func opKey(as []Attempt, op string) string {
	for _, a := range as {
		if a.Op == op {
			return a.Key
		}
	}
	return ""
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
