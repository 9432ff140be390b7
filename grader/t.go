package grader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
	"idemlab/kit/stage"
)

// T is what a check runs with: a target, its seed's random source, and
// the subject.
type T struct {
	ctx      context.Context
	target   *targets.Target
	subject  targets.Subject
	seed     uint64
	rng      *rand.Rand
	cleanups *cleanupList
	// books are every set of books the check kept (NewBooks).
	books []*judging.Books
	// before is the target's lab state when the check began, nil when
	// it could not be read (the server is then taken as fresh): a server
	// every check shares (lab grade --url) still holds what the checks
	// before this one did, and the check is judged only on what it did
	// itself (see moneyFirst).
	before *labctl.State
	// differences are the contract differences the check recorded on its
	// way (Differ), shared by every T of the check (see on).
	differences *[]*judging.Failure
	// core is the core ledger the server posts to (stage 9 on).
	core *core.Core
	// history records what the check's clients sent and what the lab
	// observed, for the timeline of a money finding.
	history *history.Recorder
	// heldReads counts the originals Hold held whose core wait a read of
	// the lab's state waited out (see WhileHeld).
	heldReads *heldReads
	// unread is why the check's last stateSoon gave up, nil if it read
	// the state or was never called: the reads and writes of the lab
	// after the verdict (moneyFirst's, the history's fence) skip the
	// server's database then, which something holds.
	unread error
}

// Rand is the check's random source; draw every input from it.
func (t *T) Rand() *rand.Rand { return t.rng }

// Seed is the check's seed.
func (t *T) Seed() uint64 { return t.seed }

// Subject is what is being graded.
func (t *T) Subject() targets.Subject { return t.subject }

// Target is the server under test.
func (t *T) Target() *targets.Target { return t.target }

// Context is the check's context.
func (t *T) Context() context.Context { return t.ctx }

// Fail returns a failure built from its parts, for a check to return.
// got is a format for args; without args it is used as it is, so that a
// response body holding a % sign reads as it came.
func (t *T) Fail(sent, got, expected string, args ...any) error {
	if len(args) > 0 {
		got = fmt.Sprintf(got, args...)
	}
	return &judging.Failure{Sent: sent, Got: got, Expected: expected}
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Err is set when no response came back at all.
	Err error
}

// Problem is the problem type of the response, if it is a problem.
func (r Response) Problem() string {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), problem.ContentType) {
		return ""
	}
	var p problem.Body
	json.Unmarshal(r.Body, &p)
	return p.Type
}

// String describes the response in one line for a report.
func (r Response) String() string {
	if r.Err != nil {
		return "no response: " + r.Err.Error()
	}
	s := fmt.Sprintf("%d", r.Status)
	if p := r.Problem(); p != "" {
		s += " " + p
	}
	if r.Header.Get("Idempotent-Replayed") != "" {
		s += " (Idempotent-Replayed: " + r.Header.Get("Idempotent-Replayed") + ")"
	}
	body := strings.TrimSpace(string(r.Body))
	if len(body) > 240 {
		body = body[:240] + "…"
	}
	if body != "" {
		s += "  " + body
	}
	return s
}

// Request is one request a check sends.
type Request struct {
	Method string
	Path   string
	// Token authenticates; "" sends no Authorization header.
	Token string
	// Key is sent as Idempotency-Key, as an RFC 8941 sf-string if Quote
	// (quoted, with " and \ escaped); "" sends none.
	Key   string
	Quote bool
	Body  string
	// ContentType defaults to application/json when there is a body.
	ContentType string
	// Header adds or replaces headers.
	Header http.Header
	// Replica picks the server process the request goes to, when the
	// target has replicas (see T.OnReplicas): 0 is the first, which the
	// lab endpoints also reach.
	Replica int
}

// String describes the request in one line for a report.
func (r Request) String() string {
	var keys []string
	if r.Key != "" {
		k := r.Key
		if r.Quote {
			k = quoteKey(k)
		}
		keys = append(keys, k)
	}
	for _, v := range r.Header.Values("Idempotency-Key") {
		keys = append(keys, fmt.Sprintf("%q", v))
	}
	return history.Describe(r.Method, r.Path, keys, r.Body)
}

// Do sends req and reads the whole response.
func (t *T) Do(req Request) Response { return t.send("check", req) }

// send sends req as client and reads the whole response, recording both
// in the check's history.
func (t *T) send(client string, req Request) Response {
	return t.sendWith(t.ctx, client, req)
}

// sendWith is send with ctx: when ctx ends first, the client hangs up.
func (t *T) sendWith(ctx context.Context, client string, req Request) Response {
	n, attempt := t.history.Begin(client, req.Method, req.Path, req.Key, req.Body, req.String())
	r := t.roundTrip(ctx, req, attempt)
	errText := ""
	if r.Err != nil {
		errText = r.Err.Error()
	}
	t.history.Answered(n, r.Status, r.Problem(), r.String(), errText, false)
	return r
}

// roundTrip sends req, named attempt, with ctx, and reads the whole
// response.
func (t *T) roundTrip(ctx context.Context, req Request, attempt string) Response {
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, t.target.ReplicaURL(req.Replica)+req.Path, body)
	if err != nil {
		return Response{Err: err}
	}
	if req.Body != "" {
		// The grader is the client and decides every retry itself. Go's
		// transport silently resends a request carrying Idempotency-Key
		// whose reused connection dropped, if it can rewind the body; that
		// would hide a crash behind a retry the check never sent.
		hr.GetBody = nil
		ct := req.ContentType
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if req.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+req.Token)
	}
	if req.Key != "" {
		k := req.Key
		if req.Quote {
			k = quoteKey(k)
		}
		hr.Header.Set("Idempotency-Key", k)
	}
	hr.Header.Set(events.AttemptHeader, attempt)
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	resp, err := t.target.Client.Do(hr)
	if err != nil {
		return Response{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Err: err}
}

// Simultaneously sends n requests released together behind a barrier, and
// returns the responses in order.
func (t *T) Simultaneously(n int, req func(i int) Request) []Response {
	out := make([]Response, n)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		r := req(i)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			out[i] = t.send(fmt.Sprintf("client %d", i+1), r)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return out
}

// Lab is the target's lab API, with its admin token. The methods below
// are the ones checks use, with the check's context.
func (t *T) Lab() *labclient.Client {
	return &labclient.Client{Base: func() string { return t.target.URL }, Token: t.target.Admin, HTTP: t.target.Client}
}

// Reset gives the target a fresh population drawn from the check's seed,
// with opening balances of opening won.
func (t *T) Reset(customers int, opening int64) ([]bank.Customer, error) {
	p := bank.Params{Seed: t.rng.Uint64() % 1_000_000, Customers: customers, AccountsPerCustomer: 2, OpeningBalance: opening}
	cs, err := t.Lab().Reset(t.ctx, p)
	if err != nil {
		return nil, err
	}
	t.history.Population(cs)
	// A reset keeps the config; a check starts from the defaults, whatever
	// the check before it set on the same server.
	if _, err := t.Lab().Configure(t.ctx, labclient.Whole(stage.DefaultConfig())); err != nil {
		return nil, err
	}
	return cs, nil
}

// State reads the target's lab state.
func (t *T) State() (labctl.State, error) { return t.Lab().State(t.ctx) }

// stateRead is how long stateSoon waits for the lab's state: a server
// that answers at all reads it in milliseconds, and one that has not
// answered by then waits on something of its own (a transaction left
// open holds every read on an in-memory SQLite database, and a
// connection pool spent holds every read on PostgreSQL) that the lab
// client would wait for until its own timeout.
const stateRead = 5 * time.Second

// stateSoon is State given stateRead at most, even once the check's own
// context has ended: for a reading after the verdict is known, or whose
// wait would only delay it. It keeps why it gave up in t.unread.
func (t *T) stateSoon() (labctl.State, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), stateRead)
	defer cancel()
	st, err := t.Lab().State(ctx)
	t.unread = err
	return st, err
}

// Configure changes the members of the target's config that change sets;
// the others stay.
func (t *T) Configure(change labclient.Config) error {
	_, err := t.Lab().Configure(t.ctx, change)
	return err
}

// Arm arms a fault point count times. It refuses to arm a crash on a
// server the grader neither runs in this process nor can restart (lab
// grade --url): the crash would end someone's server for good. A disarm
// (count 0) is sent even once the check has ended (see faultContext).
func (t *T) Arm(point string, count int) error {
	crash := strings.HasPrefix(point, "crash-")
	if crash && count > 0 && t.target.Server == nil && t.target.Child == nil {
		return targets.ErrNoChild
	}
	ctx, cancel := t.faultContext(count)
	defer cancel()
	return t.Lab().Arm(ctx, point, int64(count))
}

// faultContext is the context a fault point is armed with count times:
// the check's, but for a disarm, which lets go the statements and commits
// the point holds and is sent, within 5 s, even once the check's context
// has ended (its time is up, or the run was stopped). The check's
// deferred disarm is what lets a held statement go: without it, the
// statement waits for the fault's own cap (fault.HeldStatementMax), and
// the server's stop waits for its request.
func (t *T) faultContext(count int) (context.Context, context.CancelFunc) {
	if count > 0 {
		return t.ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
}

// ArmEverywhere arms point, as Arm does, in every process of the target:
// a fault is armed in one process, and each replica keeps its own.
func (t *T) ArmEverywhere(point string, count int) error {
	if err := t.Arm(point, count); err != nil {
		return err
	}
	ctx, cancel := t.faultContext(count)
	defer cancel()
	for _, lab := range t.replicaLabs() {
		if err := lab.Arm(ctx, point, int64(count)); err != nil {
			return err
		}
	}
	return nil
}

// armReplica arms point count times, as Arm does, in the target's
// replica i (its process i+2 in the history) alone.
func (t *T) armReplica(i int, point string, count int) error {
	ctx, cancel := t.faultContext(count)
	defer cancel()
	return t.replicaLabs()[i].Arm(ctx, point, int64(count))
}

// replicaLabs are the lab APIs of the target's other processes, its
// replicas, each with the admin token: each process keeps its own armed
// faults and counts its own core calls.
func (t *T) replicaLabs() []*labclient.Client {
	labs := make([]*labclient.Client, 0, len(t.target.Replicas))
	for _, url := range t.target.Replicas {
		labs = append(labs, &labclient.Client{Base: func() string { return url }, Token: t.target.Admin, HTTP: t.target.Client})
	}
	return labs
}

// Fired waits up to within for the one arming of a held fault point, of
// points, to fire, and returns the one that did: its request is then held
// there, until the check disarms it. It stops early, returning "", once
// over() is true (the request the check watches answered without
// reaching a point); over may be nil.
func (t *T) Fired(within time.Duration, over func() bool, points ...string) (string, error) {
	return t.firedOn(t.Lab(), within, over, points...)
}

// firedOn is Fired in the process whose lab API is lab: each process
// keeps its own armed faults.
func (t *T) firedOn(lab *labclient.Client, within time.Duration, over func() bool, points ...string) (string, error) {
	fired := ""
	_, err := t.WaitFor(within, func() (bool, error) {
		left, err := lab.Armed(t.ctx)
		if err != nil {
			return true, err
		}
		for _, point := range points {
			if left[point] == 0 {
				fired = point
			}
		}
		return fired != "" || (over != nil && over()), nil
	})
	return fired, err
}

// storeUntouched is the could-not-observe error of a check that armed the
// store-unavailable fault armed times and saw none of them fire: the
// server ran no statement on idempotency_keys while it was armed, so it
// keeps its keys where the fault cannot reach (in memory, in another
// table), and the check cannot see what follows, what. It returns nil if
// the fault fired, and the lab's error if the faults cannot be read.
func (t *T) storeUntouched(armed int64, what string) error {
	left, err := t.Lab().Armed(t.ctx)
	if err != nil {
		return err
	}
	if left[labctl.StoreUnavailable] < armed {
		return nil
	}
	return t.CouldNotObserve("the key store: the store-unavailable fault fails statements on idempotency_keys, and the server ran none while it was armed (it keeps its keys elsewhere: in memory, or in another table), so the check cannot see %s", what)
}

// Advance moves the target's lab clock on by d.
func (t *T) Advance(d time.Duration) error {
	_, err := t.Lab().Advance(t.ctx, d)
	return t.purgeFailure(fmt.Sprintf(`POST /lab/clock {"advance":%q}`, d.String()), err)
}

// SetClock moves the target's lab clock to at, forward or back.
func (t *T) SetClock(at time.Time) error {
	_, err := t.Lab().Set(t.ctx, at)
	return t.purgeFailure(fmt.Sprintf(`POST /lab/clock {"set":%q}`, at.UTC().Format(time.RFC3339Nano)), err)
}

// LabNow reads the target's lab time.
func (t *T) LabNow() (time.Time, error) { return t.Lab().Now(t.ctx) }

// Purge asks the target to purge expired keys and reports how many went.
func (t *T) Purge() (int64, error) {
	n, err := t.Lab().Purge(t.ctx)
	return n, t.purgeFailure("POST /lab/purge", err)
}

// purgeFailure is err, the lab's answer to sent, as the check's failure
// when it says the stage's Purge failed (labctl.PurgeFailed): the kit
// runs the purge after every move of the lab clock, and a purge that
// fails or never ends is the server's fault, not a lab that cannot be
// driven (could not run). Any other err is returned as it is.
func (t *T) purgeFailure(sent string, err error) error {
	var le *labclient.Error
	if !errors.As(err, &le) || !strings.Contains(le.Body, labctl.PurgeFailed) {
		return err
	}
	return &judging.Failure{Sent: sent, Got: fmt.Sprintf("%d %s", le.Status, le.Body),
		Expected: fmt.Sprintf("200: the stage's Purge returns within %v, the expired completed keys deleted", labctl.PurgeLimit),
		Lesson:   lesson5 + "#purging",
		Why:      "the kit runs the stage's Purge after every move of the lab clock, as a timer would in production; a purge that fails, or that never ends, leaves every expired key in the table and holds the database while it runs"}
}

// Key draws a fresh idempotency key.
func (t *T) Key() string {
	return fmt.Sprintf("k-%08x-%04x", t.rng.Uint32(), t.rng.Uint32()&0xffff)
}

// Op draws a fresh logical-operation name for metadata.op.
func (t *T) Op() string {
	return fmt.Sprintf("op-%08x", t.rng.Uint32())
}

// Amount draws an amount in won between lo and hi.
func (t *T) Amount(lo, hi int64) int64 {
	n := lo + t.rng.Int64N(hi-lo+1)
	if amountsAtTop {
		return hi
	}
	return n
}

// amountsAtTop, when set, makes Amount return the top of its range in
// place of its draw (the draw is still made, so the seed's other inputs
// stay as they were). Only the grader's own tests set it, to run the
// checks at their draws' worst case: a check whose amounts, at their
// tops, outrun what it funded fails a right server at some seed.
var amountsAtTop bool

// TransferBody writes a transfer body with an op, in a fixed member order.
func TransferBody(from, to string, amount int64, op string) string {
	return fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"memo":"rent","metadata":{"op":%q}}`, from, to, amount, op)
}

// DepositBody writes a deposit body with an op.
func DepositBody(account string, amount int64, op string) string {
	return fmt.Sprintf(`{"account":%q,"amount":%d,"metadata":{"op":%q}}`, account, amount, op)
}

// Transfer is the request of a transfer by customer c with key.
func Transfer(c bank.Customer, key, body string) Request {
	return Request{Method: "POST", Path: "/transfers", Token: c.Token, Key: key, Body: body}
}

// Deposit is the request of a deposit by customer c with key.
func Deposit(c bank.Customer, key, body string) Request {
	return Request{Method: "POST", Path: "/deposits", Token: c.Token, Key: key, Body: body}
}
