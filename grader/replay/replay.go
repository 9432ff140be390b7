// Package replay drives a day plan (grader/dayplan) through the fault
// transport (grader/faultnet) against a lab server, with the published
// retry policy, and reconciles the money from what the clients observed,
// the lab's final state and the core ledger's postings. lab replay,
// lab scoreboard and S6.day-replay-through-faults run on it.
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/faultnet"
	"idemlab/grader/history"
	"idemlab/grader/timeline"
	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
	"idemlab/kit/retry"
)

// RetryPolicy is the client's retry policy of docs/api.md (kit/retry).
type RetryPolicy = retry.Policy

// DefaultRetryPolicy is the policy docs/api.md publishes.
func DefaultRetryPolicy() RetryPolicy { return retry.Published() }

// The submissions of one operation.
const (
	SubmitOriginal    = "original"     // the operation, through its faults
	SubmitDoubleClick = "double-click" // a second identical request, sent with the first
	SubmitEdit        = "edit"         // a clerk's resubmission: same key, edited amount
	SubmitLate        = "late"         // the same request after the retention period
)

// DayLease is the lease a crashed day runs with: a key stranded by a
// crash is taken over within a fraction of a second of real time, so the
// day's clients, who retry for an hour of the plan's clock but a few
// seconds of real time, find it free again.
const DayLease = 150 * time.Millisecond

// Attempt is one HTTP request of a replay and what came of it: a line of
// history.jsonl.
type Attempt struct {
	Op         string `json:"op"`
	Submission string `json:"submission"`
	// N counts the attempts of one submission from 1.
	N int `json:"attempt"`
	// At is when the attempt left, on the plan's clock.
	At  dayplan.Duration `json:"at"`
	Key string           `json:"key"`
	// Method is the request's method when it is not POST: a settings
	// edit's GET and PUT.
	Method   string `json:"method,omitempty"`
	Endpoint string `json:"endpoint"`
	// Respelled marks an attempt whose body is the plan's retry spelling.
	Respelled bool          `json:"respelled,omitempty"`
	Fault     dayplan.Point `json:"fault,omitempty"`
	Status    int           `json:"status,omitempty"`
	Problem   string        `json:"problem,omitempty"`
	Replayed  bool          `json:"replayed,omitempty"`
	// Error is what the client saw instead of a response.
	Error string `json:"error,omitempty"`
	// Response is the response body.
	Response string `json:"response,omitempty"`
	// Final marks the last attempt of a submission: its answer is what the
	// client was told.
	Final bool `json:"final,omitempty"`
	// GaveUp marks a final attempt after which the retry horizon was over.
	GaveUp bool `json:"gave_up,omitempty"`
	// Unseen is the server's answer when the network lost it on the way
	// back (failure points 6 and 7): the answer the client never saw.
	Unseen *ServerAnswer `json:"unseen,omitempty"`
	// heard numbers the server's answer to this attempt among all the
	// answers of the replay, in the order they came back (0: none, or an
	// attempt built by hand): the first answer that names an execution's
	// resource is that execution's own.
	heard uint64
}

// ServerAnswer is a response as the server sent it.
type ServerAnswer struct {
	Status   int    `json:"status"`
	Replayed bool   `json:"replayed,omitempty"`
	Response string `json:"response,omitempty"`
	heard    uint64
}

// served returns the answer the server gave to a, whether or not the
// client saw it; ok is false if the request never got one.
func (a Attempt) served() (ServerAnswer, bool) {
	switch {
	case a.Unseen != nil:
		return *a.Unseen, true
	case a.Error == "" && a.Status != 0:
		return ServerAnswer{Status: a.Status, Replayed: a.Replayed, Response: a.Response, heard: a.heard}, true
	}
	return ServerAnswer{}, false
}

// Succeeded reports whether the client was told the operation happened.
func (a Attempt) Succeeded() bool { return a.Status >= 200 && a.Status < 300 }

// Options say where and how to replay a day.
type Options struct {
	// URL is the lab server's base URL; Admin its admin token (the replay
	// resets the lab and moves its clock).
	URL   string
	Admin string
	// Base carries requests to the server; nil means a fresh http.Transport.
	Base   http.RoundTripper
	Policy RetryPolicy
	// Clients is how many operations run at once; 0 means 1, which makes
	// the day's outcome (who runs out of money when) the same every time.
	Clients int
	// Progress, when set, is called after each operation.
	Progress func(done, total int)
	// Pace, when set, spaces the operations' starts (lab replay --rate);
	// nil starts each as soon as a client is free.
	Pace *Pace
	// DB is where InProcess's server gets a fresh database of its
	// own: ":memory:", or a new database on the PostgreSQL cluster a
	// postgres:// URL names; empty means labdb.TestTarget().
	DB string
	// CoreURL is the core ledger the server posts to (stage 9). When it is
	// set, the replay waits at the end for the server's outbox to drain
	// and reads the core's postings, and the reconciliation holds every
	// executed transfer to one posting; when it is empty, the core is not
	// reconciled.
	CoreURL string
	// History, when set, records the day's history for its timelines:
	// each attempt on the machine's clock, and the lab's events
	// (Result.History).
	History bool
}

// Result is everything a replay saw, for Reconcile.
type Result struct {
	Plan *dayplan.Plan
	// Attempts are grouped by operation, in plan order; the late
	// retries come last.
	Attempts []Attempt
	// Opening is the lab state after the reset; Day after the day's
	// operations; Final after the late retries (the same as Day when the
	// plan has none).
	Opening, Day, Final labctl.State
	// LateSkipped says why the late retries were not sent, if they were not.
	LateSkipped string
	// Transfers and Deposits are the transfers and deposits the bank's
	// books hold at the end, by id, each with the operation that made it
	// and its amount (GET /lab/transfers, GET /lab/deposits): which
	// answers are an execution's, and whether an edit executed, is read
	// from them, never from a header.
	Transfers, Deposits map[string]bank.Executed
	// Core is what the core ledger holds at the end; nil when the replay
	// was not told where it is (Options.CoreURL).
	Core    *CoreBooks
	Elapsed time.Duration
	// History is the day's history, when Options.History asked for
	// it.
	History *timeline.History
}

// replayer runs one replay.
type replayer struct {
	opts   Options
	plan   *dayplan.Plan
	client *http.Client
	lab    *labclient.Client
	tokens map[string]string
	// settingsLocks runs the settings edits of one account one at a time.
	settingsLocks accountLocks
	// history records the attempts and the lab's events, when asked for.
	history *history.Recorder
	// postedBefore counts, by transfer, the core's postings from before
	// the day (Options.CoreURL): a lab reset leaves the core's books
	// alone, and an earlier day's postings are not this day's.
	postedBefore map[string]int
}

// Run resets the lab to the plan's population, sends every operation
// through a FaultTransport with the client retry policy, then moves the
// lab clock past the retention period and sends the late retries. It
// returns an error if the lab cannot be reset or read (a wrong URL or
// admin token) or the server's population is not the plan's.
func Run(ctx context.Context, plan *dayplan.Plan, opts Options) (*Result, error) {
	began := time.Now()
	if opts.Policy == (RetryPolicy{}) {
		opts.Policy = DefaultRetryPolicy()
	}
	if opts.Clients < 1 {
		opts.Clients = 1
	}
	base := opts.Base
	if base == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
		defer tr.CloseIdleConnections()
		base = tr
	}
	r := &replayer{
		opts: opts, plan: plan, tokens: map[string]string{},
		client: &http.Client{
			Transport:     timeLimit{&faultnet.Transport{Base: recorder{base: base, heard: new(atomic.Uint64)}}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	r.lab = labclient.New(opts.URL, opts.Admin, r.client)
	res := &Result{Plan: plan}
	if err := r.reset(ctx); err != nil {
		return nil, err
	}
	if opts.CoreURL != "" {
		before, err := postingsBefore(ctx, opts.CoreURL, r.client)
		if err != nil {
			return nil, fmt.Errorf("read the core ledger before the day: %w", err)
		}
		r.postedBefore = before
	}
	if plan.Crashes() > 0 {
		// A key whose request died stays in progress until its lease
		// ends: a short one, so that the clients, who retry for a few
		// seconds of real time, find it free again (stage 6).
		if _, err := r.lab.Configure(ctx, labclient.Config{Lease: DayLease}); err != nil {
			return nil, fmt.Errorf("set the lease for the day's crashes: %w", err)
		}
	}
	var err error
	if res.Opening, err = r.state(ctx); err != nil {
		return nil, err
	}
	if opts.History {
		keys := make([]string, len(plan.Ops))
		for i, op := range plan.Ops {
			keys[i] = op.Key
		}
		r.history = history.NewRecorder(keys...)
		defer r.history.Close()
		// Without the lab's events the history still has every attempt.
		r.history.Watch(ctx, r.lab, 0)
	}

	perOp := make([][]Attempt, len(plan.Ops))
	var mu sync.Mutex
	done := 0
	var armErr error
	var armOnce sync.Once
	err = r.each(ctx, len(plan.Ops), func(i int) {
		if c := plan.Ops[i].Fate.Crash; c != "" {
			if err := r.lab.Arm(ctx, c, 1); err != nil {
				armOnce.Do(func() { armErr = fmt.Errorf("arm %s before %s: %w", c, plan.Ops[i].Op, err) })
			}
		}
		perOp[i] = r.runOp(ctx, &plan.Ops[i])
		if opts.Progress != nil {
			mu.Lock()
			done++
			opts.Progress(done, len(plan.Ops))
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	if armErr != nil {
		return nil, armErr
	}
	for _, as := range perOp {
		res.Attempts = append(res.Attempts, as...)
	}
	if res.Day, err = r.state(ctx); err != nil {
		return nil, err
	}
	res.Final = res.Day

	var late []*dayplan.Op
	for i := range plan.Ops {
		if plan.Ops[i].Fate.LateRetry {
			late = append(late, &plan.Ops[i])
		}
	}
	if len(late) > 0 {
		after := time.Duration(plan.Header.Params.LateAfter)
		if _, err := r.lab.Advance(ctx, after); err != nil {
			res.LateSkipped = fmt.Sprintf("could not move the lab clock by %s: %v", after, err)
		} else {
			perLate := make([][]Attempt, len(late))
			err := r.each(ctx, len(late), func(i int) {
				op := late[i]
				perLate[i] = r.submit(ctx, op, SubmitLate, time.Duration(op.At)+after, op.RetryBytes(), op.RetryBytes(), nil)
			})
			if err != nil {
				return nil, err
			}
			for _, as := range perLate {
				res.Attempts = append(res.Attempts, as...)
			}
			if res.Final, err = r.state(ctx); err != nil {
				return nil, err
			}
		}
	}
	if res.Transfers, err = readExecuted(ctx, "transfers", bank.MaxListed, r.lab.TransferOps); err != nil {
		return nil, err
	}
	if res.Deposits, err = readExecuted(ctx, "deposits", bank.MaxListed, r.lab.DepositOps); err != nil {
		return nil, err
	}
	if opts.CoreURL != "" {
		if res.Core, err = r.readCore(ctx, opts.CoreURL, res.Transfers); err != nil {
			return nil, fmt.Errorf("read the core ledger: %w", err)
		}
	}
	if r.history != nil {
		r.history.Fence(ctx)
		res.History = r.history.History()
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// each calls do(i) for every i from 0 to n−1, from opts.Clients workers
// at once, starting them as opts.Pace allows, and returns when every call
// has returned. It returns ctx's error if ctx ended first.
func (r *replayer) each(ctx context.Context, n int, do func(i int)) error {
	if r.opts.Pace == nil {
		return eachUnpaced(ctx, n, r.opts.Clients, do)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range r.opts.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := range n {
		if r.opts.Pace.wait(ctx) != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

// eachUnpaced is each with no Pace: a worker done with one call takes the
// next i itself, where handing each i over a channel woke a worker or the
// goroutine handing them out for nearly every call. The calls start in
// the same order.
func eachUnpaced(ctx context.Context, n, clients int, do func(i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// runOp sends one operation: its original submission through its faults,
// with a double click released at the same moment if the plan says so,
// then the clerk's edited resubmission; or a settings edit's clerks.
func (r *replayer) runOp(ctx context.Context, op *dayplan.Op) []Attempt {
	if op.Endpoint == dayplan.Settings {
		return r.editSettings(ctx, op)
	}
	start := time.Duration(op.At)
	var second []Attempt
	var wg sync.WaitGroup
	release := make(chan struct{})
	if op.Fate.DoubleClick {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			second = r.submit(ctx, op, SubmitDoubleClick, start, op.Body, op.Body, nil)
		}()
	}
	close(release)
	out := r.submit(ctx, op, SubmitOriginal, start, op.Body, op.RetryBytes(), op.Fate.Faults)
	wg.Wait()
	out = append(out, second...)
	if op.Fate.EditedAmount != 0 {
		edited, err := op.EditedBody()
		if err != nil {
			return append(out, Attempt{Op: op.Op, Submission: SubmitEdit, N: 1, Error: err.Error(), Final: true})
		}
		last := start
		for _, a := range out {
			last = max(last, time.Duration(a.At))
		}
		out = append(out, r.submit(ctx, op, SubmitEdit, last+time.Minute, edited, edited, nil)...)
	}
	return out
}

// submit sends one submission and retries it by the policy (a
// retry.Client), recording every attempt: attempt n meets faults[n-1], if
// any. The client waits on the plan's clock (planClock), which each wait
// and each withheld response move.
func (r *replayer) submit(ctx context.Context, op *dayplan.Op, kind string, at time.Duration, first, retried []byte, faults []dayplan.Point) []Attempt {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", op.Op, kind)
	clock := &planClock{}
	c := retry.Client{HTTP: r.client, Policy: r.opts.Policy, Clock: clock, Jitter: rand.New(rand.NewPCG(r.plan.Header.Seed, h.Sum64()))}
	var out []Attempt
	var heard *ServerAnswer // what the server answered the attempt under way
	var recorded int        // the attempt under way in the day's history
	newRequest := func(n int) (*http.Request, error) {
		a := Attempt{Op: op.Op, Submission: kind, N: n, At: dayplan.Duration(at + clock.elapsed), Key: op.Key, Endpoint: op.Endpoint}
		body := first
		if n > 1 {
			body = retried
			a.Respelled = !bytes.Equal(retried, first)
		}
		actx := ctx
		if n <= len(faults) {
			a.Fault = faults[n-1]
			actx = faultnet.WithFault(ctx, a.Fault)
		}
		out = append(out, a)
		heard = &ServerAnswer{}
		var name string
		var keys []string
		if op.Key != "" {
			keys = []string{op.Key}
		}
		sent := history.Describe(http.MethodPost, op.Endpoint, keys, string(body))
		recorded, name = r.history.Begin(kind, http.MethodPost, op.Endpoint, op.Key, string(body), sent)
		req, err := r.request(context.WithValue(actx, recordKey{}, heard), op, body)
		if err == nil && name != "" {
			req.Header.Set(events.AttemptHeader, name)
		}
		return req, err
	}
	seen := func(_ int, ans retry.Answer) {
		a := &out[len(out)-1]
		clock.inProgress = ans.Problem == problem.RequestInProgress.URI()
		if ans.Err == nil {
			a.Status, a.Response, a.Replayed, a.Problem = ans.Status, string(ans.Body), ans.Replayed, ans.Problem
			a.heard = heard.heard
			r.history.Answered(recorded, ans.Status, ans.Problem, fmt.Sprintf("%d %s  %s", ans.Status, ans.Problem, ans.Body), "", false)
			return
		}
		var cut *faultnet.Error
		r.history.Answered(recorded, 0, "", "no response: "+ans.Err.Error(), ans.Err.Error(), errors.As(ans.Err, &cut))
		a.Error = ans.Err.Error()
		if ans.Status != 0 {
			a.Error = "read response: " + a.Error
		}
		var fe *faultnet.Error
		if errors.As(ans.Err, &fe) && fe.Reached && heard.Status != 0 {
			a.Unseen = heard
		}
		if errors.As(ans.Err, &fe) && fe.Timeout() {
			clock.elapsed += r.opts.Policy.Timeout // the client waited out its timeout
		}
	}
	res := c.Do(ctx, newRequest, seen)
	last := &out[len(out)-1]
	last.Final, last.GaveUp = true, res.GaveUp
	return out
}

// planClock is a submission's time on the plan's clock: a wait moves it at
// once. The replay really sleeps only while the server says the request
// is in progress, and then a thousandth of the wait, because only then is
// there something real to wait for.
type planClock struct {
	elapsed    time.Duration // since the submission's first attempt
	inProgress bool          // the last answer was 409 request-in-progress
}

func (c *planClock) Now() time.Time { return time.Time{}.Add(c.elapsed) }

func (c *planClock) Sleep(ctx context.Context, d time.Duration) error {
	c.elapsed += d
	if !c.inProgress {
		return ctx.Err()
	}
	return retry.Wall.Sleep(ctx, max(d/1000, time.Millisecond))
}

// request is one attempt's request of op with body.
func (r *replayer) request(ctx context.Context, op *dayplan.Op, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", r.opts.URL+op.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.tokens[op.Customer])
	if op.Key != "" { // a keyless operation sends no header at all
		req.Header.Set("Idempotency-Key", op.Key)
	}
	return req, nil
}

// requestLimit is how long a request of the replay may take, its
// response's body included, before the client gives up on it: a server
// that hangs fails the replay instead of holding it for ever.
const requestLimit = time.Minute

// timeLimit ends each request requestLimit after it left, through its
// context, as http.Client.Timeout would. Over a RoundTripper net/http
// does not know (faultnet's), Client.Timeout turns its deadline into the
// legacy Request.Cancel, which costs every request two more goroutines, a
// second timer and the wake-ups between them; a deadline on the request's
// context costs one timer.
type timeLimit struct{ base http.RoundTripper }

func (t timeLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), requestLimit)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends its request's context once its body is closed: the
// body is read under the request's time limit, and its timer stops then.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// recorder keeps what the server answered in the ServerAnswer its
// request's context carries, before a failure point can throw it away: the
// reconciliation needs the answer a lost response would have given, and
// the order the answers came back in.
type recorder struct {
	base  http.RoundTripper
	heard *atomic.Uint64 // the answers heard so far
}

type recordKey struct{}

func (rt recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	heard, _ := req.Context().Value(recordKey{}).(*ServerAnswer)
	if err != nil || heard == nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	*heard = ServerAnswer{Status: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed") == "true", Response: string(body), heard: rt.heard.Add(1)}
	return resp, nil
}

// reset gives the lab the plan's population and checks that it is the one
// the plan was drawn from. The tokens are the ones the reset hands out: a
// public server draws them at random (server.Options.RandomTokens).
func (r *replayer) reset(ctx context.Context) error {
	customers, err := r.lab.Reset(ctx, r.plan.Header.Params.Reset)
	if err != nil {
		return err
	}
	want := r.plan.Customers()
	if len(customers) != len(want) {
		return fmt.Errorf("the lab reset made %d customers; the plan has %d", len(customers), len(want))
	}
	for i, c := range want {
		got := customers[i]
		if got.ID != c.ID || !slices.Equal(got.Accounts, c.Accounts) {
			return fmt.Errorf("the lab reset made customer %s with accounts %v; the plan expects %s with %v (does the server run another version of the kit?)",
				got.ID, got.Accounts, c.ID, c.Accounts)
		}
		r.tokens[c.ID] = got.Token
	}
	return nil
}

func (r *replayer) state(ctx context.Context) (labctl.State, error) {
	return r.lab.State(ctx)
}
