package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/faultnet"
	"idemlab/kit/bank"
	"idemlab/kit/idemkey"
	"idemlab/kit/retry"
)

// Rates are the traffic rates the demo steps through, in operations per second.
var Rates = []int{1, 2, 5, 10, 20, 50, 100}

// DefaultRate is the index in Rates the demo starts at.
const DefaultRate = 3

// DemoPolicy is the client's retry policy of docs/api.md (kit/retry) on
// a demo's time scale: the same full jitter and Retry-After, with backoffs
// of tens of milliseconds and a horizon of seconds, so that a retry shows
// on screen while the class watches.
var DemoPolicy = retry.Policy{Base: 40 * time.Millisecond, Cap: 800 * time.Millisecond, Horizon: 4 * time.Second, Timeout: 10 * time.Second}

const (
	// maxInFlight bounds the operations being played at once, so that a
	// stalled server slows the traffic instead of piling up goroutines.
	maxInFlight = 512
	// minInFlight is the fewest operations the traffic keeps under way
	// however slowly the servers answer.
	minInFlight = 4
	// BurstSize is how many identical requests a burst sends at once.
	BurstSize = 16
)

// Traffic plays the same operations, through the same faults, against
// every target at once: the operations come from day plans
// (grader/dayplan), the faults from grader/faultnet. It is the
// client side of the demo; the servers never know it is there.
type Traffic struct {
	targets []func() string // each target's base URL (a restart may move it)
	client  *http.Client
	reset   bank.Params
	people  []bank.Customer   // the population, which the stories draw from
	tokens  map[string]string // customer id → token
	stories atomic.Int64      // stories played: each gets its own names

	rate    atomic.Int64 // index into Rates
	paused  atomic.Bool
	profile atomic.Int64 // index into Profiles
	played  atomic.Int64

	flight  sync.Mutex
	running int           // operations under way
	idle    chan struct{} // closed while running is zero (see Drain)
	// limit is how many operations may be under way (see pace): it
	// falls to half of them when answers come late, and grows back by one
	// for every limit answers in time.
	limit float64
	cut   time.Time // when limit last fell
	held  atomic.Int64

	policy retry.Policy

	mu    sync.Mutex
	plan  []dayplan.Op
	next  int
	chunk int
	shown int64 // profile the plan was drawn for
}

// NewTraffic returns traffic for the targets at these base URLs, drawn for
// the population reset (every target must be reset with it).
func NewTraffic(targets []func() string, reset bank.Params) *Traffic {
	people := bank.Population(reset)
	tokens := map[string]string{}
	for _, c := range people {
		tokens[c.ID] = c.Token
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	t := &Traffic{
		targets: targets, reset: reset, people: people, tokens: tokens,
		client: &http.Client{Transport: &faultnet.Transport{Base: tr}, Timeout: DemoPolicy.Timeout},
		shown:  -1,
		idle:   make(chan struct{}),
		limit:  maxInFlight,
		policy: DemoPolicy,
	}
	close(t.idle)
	t.rate.Store(DefaultRate)
	return t
}

// Reset is the population the targets must be reset with.
func (t *Traffic) Reset() bank.Params { return t.reset }

// SetPaused stops or resumes new operations; those under way finish.
func (t *Traffic) SetPaused(p bool) {
	t.flight.Lock() // so that no operation begins once it returns (see begin)
	defer t.flight.Unlock()
	t.paused.Store(p)
}

// Paused reports whether the traffic is paused.
func (t *Traffic) Paused() bool { return t.paused.Load() }

// StepRate moves the rate up (+1) or down (-1) one step and returns it.
func (t *Traffic) StepRate(delta int) int {
	i := min(max(int(t.rate.Load())+delta, 0), len(Rates)-1)
	t.rate.Store(int64(i))
	return Rates[i]
}

// Rate is the rate in operations per second.
func (t *Traffic) Rate() int { return Rates[t.rate.Load()] }

// SetProfile chooses the fault profile for the operations drawn from now on.
func (t *Traffic) SetProfile(i int) { t.profile.Store(int64(i % len(Profiles))) }

// Profile is the fault profile in force.
func (t *Traffic) Profile() Profile { return Profiles[t.profile.Load()] }

// Played is how many operations have been started.
func (t *Traffic) Played() int64 { return t.played.Load() }

// Drain waits until none of the operations Run started is under way and
// returns nil, or returns ctx's error if ctx ends first. Paused traffic
// starts nothing new, so after SetPaused(true) Drain returns once the
// operations under way have finished their retries. (Burst and Edited
// return only when their operations have finished.)
func (t *Traffic) Drain(ctx context.Context) error {
	t.flight.Lock()
	idle := t.idle
	t.flight.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HeldBack is how many operations the traffic did not start because the
// servers were behind: as many were under way as the limit allows (see
// pace).
func (t *Traffic) HeldBack() int64 { return t.held.Load() }

// begin counts an operation under way, unless the traffic is paused or
// its limit are; it reports whether it did.
func (t *Traffic) begin() bool {
	t.flight.Lock()
	defer t.flight.Unlock()
	if t.paused.Load() {
		return false
	}
	if float64(t.running) >= t.limit {
		t.held.Add(1)
		return false
	}
	if t.running == 0 {
		t.idle = make(chan struct{})
	}
	t.running++
	return true
}

// end counts an operation done.
func (t *Traffic) end() {
	t.flight.Lock()
	defer t.flight.Unlock()
	t.running--
	if t.running == 0 {
		close(t.idle)
	}
}

// pace takes an attempt's answer, and how long it took, into the limit on
// the operations under way. The traffic starts operations at a fixed
// rate, whatever the servers answer: on a machine too slow for the rate,
// requests queue behind the database's writer until the client's timeout
// ends them, their retries join the queue, and nearly nothing is answered
// (on both sides, the safe one too). An answer that took more than half
// the client's timeout, or never came, halves the limit (to half the
// operations under way, at most once in that half: the others of the same
// queue are as late); answers in time raise it back, by one for every
// limit of them, up to maxInFlight. A response a fault withheld is the
// fault's, not the server's pace.
func (t *Traffic) pace(a retry.Answer, took time.Duration) {
	var withheld *faultnet.Error
	if errors.As(a.Err, &withheld) {
		return
	}
	var timeout interface{ Timeout() bool }
	late := took > t.policy.Timeout/2 || errors.As(a.Err, &timeout) && timeout.Timeout()
	t.flight.Lock()
	defer t.flight.Unlock()
	now := time.Now()
	switch {
	case late && now.Sub(t.cut) >= t.policy.Timeout/2:
		t.limit, t.cut = max(float64(t.running)/2, minInFlight), now
	case !late && a.Err == nil:
		t.limit = min(t.limit+1/t.limit, maxInFlight)
	}
}

// Run starts operations at the chosen rate until ctx ends, then waits for
// those under way.
func (t *Traffic) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(time.Second / time.Duration(t.Rate()))
		if !t.begin() {
			continue
		}
		op := t.draw()
		t.played.Add(1)
		wg.Go(func() {
			defer t.end()
			t.everywhere(func(url func() string) { t.play(ctx, url, op) })
		})
	}
}

// everywhere runs fn against every target at once and waits for all.
func (t *Traffic) everywhere(fn func(url func() string)) {
	each(t.targets, func(_ int, url func() string) { fn(url) })
}

// each runs fn for every item at once and waits for all.
func each[T any](items []T, fn func(i int, item T)) {
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() { fn(i, item) })
	}
	wg.Wait()
}

// draw takes the next operation of the plan for the profile in force,
// drawing a new chunk of the day when the profile changes or the chunk
// runs out.
func (t *Traffic) draw() dayplan.Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.profile.Load()
	if p != t.shown || t.next == len(t.plan) {
		t.plan, t.next, t.shown = t.chunkFor(Profiles[p]), 0, p
		t.chunk++
	}
	op := t.plan[t.next]
	t.next++
	return op
}

// drawWhere draws operations until one is what ok asks for, and returns
// it; after a chunk's worth of draws it takes the last one, whatever it is.
func (t *Traffic) drawWhere(ok func(dayplan.Op) bool) dayplan.Op {
	op := t.draw()
	for range chunkOps {
		if ok(op) {
			break
		}
		op = t.draw()
	}
	return op
}

const chunkOps = 500

// chunkFor draws chunkOps operations for profile. Every chunk uses the
// population's seed (so that its customers are the targets'), which makes
// the chunks alike: each is given its own op names and keys.
func (t *Traffic) chunkFor(profile Profile) []dayplan.Op {
	params := dayplan.DefaultParams(t.reset.Seed, chunkOps)
	params.Reset = t.reset
	params.FaultRate, params.DoubleClickRate, params.EditRate = profile.FaultRate, profile.DoubleClickRate, profile.EditRate
	params.RespellRate, params.LateRetryRate = 0, 0
	params.DepositRate = 0.2
	plan, err := dayplan.Generate(t.reset.Seed, params)
	if err != nil {
		panic(fmt.Sprintf("backend: day plan parameters rejected: %v", err)) // the parameters above are valid
	}
	allowed := map[dayplan.Point]bool{}
	for _, p := range profile.Points {
		allowed[p] = true
	}
	ops := plan.Ops
	for i := range ops {
		op := &ops[i]
		name := fmt.Sprintf("c%d.%s", t.chunk, op.Op)
		op.Body = renameOp(op.Body, name)
		op.Op, op.Key = name, fmt.Sprintf("c%d-%s", t.chunk, op.Key)
		kept := op.Fate.Faults[:0]
		for _, p := range op.Fate.Faults {
			if allowed[p] {
				kept = append(kept, p)
			}
		}
		op.Fate.Faults = kept
	}
	return ops
}

// renameOp sets metadata.op in a body.
func renameOp(body []byte, op string) []byte {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return body
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["op"] = op
	m["metadata"] = meta
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// play runs one operation against one target as a retrying client would
// (DemoPolicy): its first attempts through the operation's faults, a
// double click released with the first if the plan has one (retried by
// the same policy, as the replay does), then the clerk's edited
// resubmission if the plan has one.
func (t *Traffic) play(ctx context.Context, url func() string, op dayplan.Op) {
	var click sync.WaitGroup
	if op.Fate.DoubleClick {
		click.Go(func() { t.submit(ctx, url, op, "double-click", op.Body, nil) })
	}
	t.submit(ctx, url, op, "original", op.Body, op.Fate.Faults)
	click.Wait()
	if ctx.Err() != nil {
		return
	}
	if op.Fate.EditedAmount != 0 {
		if edited, err := op.EditedBody(); err == nil {
			t.submit(ctx, url, op, "edit", edited, nil)
		}
	}
}

// submit sends op with body by DemoPolicy: attempt n meets faults[n-1], if
// any. The jitter is drawn from the operation and the submission, so that
// it is the same against every target.
func (t *Traffic) submit(ctx context.Context, url func() string, op dayplan.Op, kind string, body []byte, faults []dayplan.Point) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", op.Op, kind)
	c := retry.Client{HTTP: t.client, Policy: t.policy, Jitter: rand.New(rand.NewPCG(h.Sum64(), 1))}
	var sent time.Time
	c.Do(ctx, func(n int) (*http.Request, error) {
		actx := ctx
		if n <= len(faults) {
			actx = faultnet.WithFault(ctx, faults[n-1])
		}
		sent = time.Now()
		return t.request(actx, url, op, body)
	}, func(_ int, a retry.Answer) { t.pace(a, time.Since(sent)) })
}

// request is one attempt of op with body, under op's key.
func (t *Traffic) request(ctx context.Context, url func() string, op dayplan.Op, body []byte) (*http.Request, error) {
	return newRequest(ctx, http.MethodPost, url()+op.Endpoint, t.tokens[op.Customer], op.Key, body)
}

// newRequest is a customer's request, with the customer's token, under
// key (if any), with a JSON body (if any).
func newRequest(ctx context.Context, method, url, token, key string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set(idemkey.Header, key)
	}
	return req, nil
}

// Burst sends BurstSize copies of a fresh operation to every target at
// the same moment: the race a UNIQUE constraint exists for. Each copy is
// one attempt (retry.Send), not retried, so that the screen shows the
// answers the race itself gets.
//
// Its 16 copies together take at most a quarter of an opening balance,
// so that on the naive side every copy executes (the counter jumps by
// fifteen, as the classroom script says) instead of the account running
// dry and refusing the last ones as insufficient funds.
func (t *Traffic) Burst(ctx context.Context) string {
	op := t.drawWhere(func(op dayplan.Op) bool { return op.Amount*BurstSize <= t.reset.OpeningBalance/4 })
	op.Fate = dayplan.Fate{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, url := range t.targets {
		for range BurstSize {
			wg.Go(func() {
				<-start
				if req, err := t.request(ctx, url, op, op.Body); err == nil {
					retry.Send(t.client, req)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	return fmt.Sprintf("burst: %d × %s at once", BurstSize, op.Op)
}

// Edited sends a fresh transfer and then a clerk's resubmission of it:
// the same key, the amount changed. It is always a transfer, as the help
// page and the classroom script say, whatever the plan holds next.
func (t *Traffic) Edited(ctx context.Context) string {
	op := t.drawWhere(func(op dayplan.Op) bool { return op.Endpoint == dayplan.Transfers })
	op.Fate = dayplan.Fate{EditedAmount: op.Amount + 50_000}
	t.everywhere(func(url func() string) { t.play(ctx, url, op) })
	// Whole amounts: the edit adds ₩50,000, which Short rounded to
	// "₩1.2M → ₩1.3M".
	return fmt.Sprintf("clerk: %s again, ₩%s → ₩%s", op.Op, bank.FormatWon(op.Amount), bank.FormatWon(op.Fate.EditedAmount))
}
