package soak

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/grader/targets"
	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/labclient"
	"idemlab/kit/labdb"
	"idemlab/kit/retry"
	"idemlab/kit/server"
)

// The delivery check's knobs: make delivery-check passes -delivery.
var (
	deliveryFlag     = flag.Bool("delivery", false, "run the delivery check (make delivery-check)")
	deliveryDuration = flag.Duration("delivery.duration", 30*time.Second, "how long the delivery check's clients send")
	deliveryClients  = flag.Int("delivery.clients", 64, "how many clients the delivery check runs at once")
)

// deliveryLagLimit is the delivery lag that the check's p99 must stay
// under: a transfer's commit to the core's acknowledgement, as the outbox
// records them, less the outages the row waited through (the core down,
// the server dead between its kill and its restart), in which no relay
// could deliver anything. A flapping core is no outage: it takes every
// other posting, and the relay must keep trying.
const deliveryLagLimit = time.Second

// deliveryPolicy is the clients' retry policy: the published one on a
// shorter scale, so that a client that met the kill comes back within a
// fraction of a second, and gives up only long after the load has ended.
var deliveryPolicy = retry.Policy{Base: 20 * time.Millisecond, Cap: 500 * time.Millisecond, Horizon: time.Minute, Timeout: 10 * time.Second}

// TestDeliveryCheck: solution 9 runs in a child process (on a database
// file, or on the PostgreSQL cluster IDEMLAB_DATABASE_URL names) while
// -delivery.clients clients send transfers for -delivery.duration, each
// under a fresh key and retried with it. Meanwhile the core ledger, in
// this process, goes down twice, flaps, and rejects one posting for good;
// and the server is killed with SIGKILL in the middle and started again
// on its database. At the end, once the outbox has drained, it prints
//
//	delivery: E executed, P posted once, 0 twice, 0 unposted, D dead letters, lag p99 L ms (R ms with core down 2× C ms, server dead 1× S ms), outbox peak K
//
// and fails on any transfer executed or posted twice, any executed
// transfer neither posted nor a dead letter the core's rejection names,
// or a lag p99 L over deliveryLagLimit. L leaves out of each row's lag
// the outages it waited through, timed here as the nemesis plays them;
// R is the p99 as the outbox recorded it, outages and all.
func TestDeliveryCheck(t *testing.T) {
	if !*deliveryFlag && os.Getenv("IDEMLAB_DELIVERY") != "1" {
		t.Skip("delivery check skipped: run it with make delivery-check, or go test ./soak -run TestDeliveryCheck -delivery")
	}
	ctx := soakContext(t)
	cr, coreURL, stopCore, err := server.StartCore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopCore)
	// The server opens its connections before it serves, as lab serve's
	// do: 64 clients start together, and come back together after the
	// kill (on PostgreSQL; docs/reliability.md).
	t.Setenv(targets.EnvOpenAhead, "1")
	child, base := startSolution(ctx, t, coreURL, map[string]string{"lease": killLease})
	g := &gate{base: base, up: make(chan struct{})}
	if err := g.open(child.URL); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: g}
	lab := labclient.New(child.URL, child.Admin, &http.Client{Transport: base})
	customers, err := lab.Reset(ctx, bank.Params{Seed: 9, Customers: *deliveryClients, AccountsPerCustomer: 2, OpeningBalance: 1_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}

	load := &deliveryLoad{client: hc, url: child.URL, answered: map[string]string{}}
	loadCtx, stopLoad := context.WithTimeout(ctx, *deliveryDuration)
	defer stopLoad()
	var clients sync.WaitGroup
	for i, c := range customers {
		clients.Add(1)
		go func() {
			defer clients.Done()
			load.run(loadCtx, ctx, c, customers[(i+1)%len(customers)], i)
		}()
	}
	// The peak is read from the database, not from /lab/state, which
	// lists every key and every operation: read ten times a second, it
	// would take the server's CPU from the relay it measures.
	books, err := labdb.Open(ctx, child.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer books.Close()
	peak := &outboxPeak{}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		peak.watch(loadCtx, bank.New(books.DB, nil, nil, nil).Outbox)
	}()
	nemesis := &deliveryNemesis{core: &cr.Faults, kill: func() error {
		g.close()
		child.Kill()
		base.CloseIdleConnections()
		if err := child.Start(ctx); err != nil {
			return fmt.Errorf("restart on %s: %w", child.DB, err)
		}
		if err := configure(ctx, &http.Client{Transport: base}, child.URL, child.Admin, map[string]string{"lease": killLease}); err != nil {
			return err
		}
		return g.open(child.URL)
	}}
	if err := nemesis.run(loadCtx, *deliveryDuration); err != nil {
		t.Fatal(err)
	}
	clients.Wait()
	<-watching
	if load.gaveUp.Load() > 0 {
		t.Errorf("%d clients gave up on a transfer: its outcome is unknown", load.gaveUp.Load())
	}

	st, err := lab.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for drain := time.Now(); st.Outbox.Pending > 0 && time.Since(drain) < time.Minute; <-tick.C {
		if st, err = lab.State(ctx); err != nil {
			t.Fatal(err)
		}
	}
	postings, err := cr.Postings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st, err = lab.State(ctx); err != nil {
		t.Fatal(err)
	}
	// The lab clock of the server against this process's: the outages
	// were timed here, the deliveries there. The clock alone answers
	// fast, so the middle of its request is close to the instant read.
	asked := time.Now()
	labNow, err := lab.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ahead := labNow.Sub(asked.Add(time.Since(asked) / 2))
	deliveries, err := bank.New(books.DB, nil, nil, nil).Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lags := lagsBeside(deliveries, nemesis.outages, ahead)
	v := judgeDelivery(st.Executions, load.answered, postings, st.DeadLetters, cr.Faults.Poisoned(), lags)
	v.peak = peak.max()
	fmt.Println(v.line())
	fmt.Printf("delivery: the slowest 1%% outside the outages committed %s of the run\n", lags.slowest())
	if st.Outbox.Pending > 0 {
		t.Errorf("%d outbox rows still owed a minute after the load", st.Outbox.Pending)
	}
	for _, p := range v.problems {
		t.Error(p)
	}
}

// deliveryLoad is the clients' traffic: each sends transfers one after
// another, each under a fresh key, retried until it has an answer.
type deliveryLoad struct {
	client *http.Client
	url    string
	mu     sync.Mutex
	// answered maps each transfer a client was answered 201 for to the
	// operation that made it.
	answered map[string]string
	gaveUp   atomic.Int64
}

// run sends c's transfers to to's account until loadCtx ends; a transfer
// under way then is still retried to its answer, within ctx.
func (l *deliveryLoad) run(loadCtx, ctx context.Context, c, to bank.Customer, n int) {
	rc := retry.Client{HTTP: &http.Client{Transport: l.client.Transport, Timeout: deliveryPolicy.Timeout}, Policy: deliveryPolicy,
		Jitter: rand.New(rand.NewPCG(uint64(n), 9))}
	for i := 0; loadCtx.Err() == nil; i++ {
		op := fmt.Sprintf("c%d-op%d", n, i)
		body := fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"metadata":{"op":%q}}`, c.Accounts[0], to.Accounts[1], 1+i%1000, op)
		res := rc.Do(ctx, func(int) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url+"/transfers", bytes.NewBufferString(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+c.Token)
			req.Header.Set("Idempotency-Key", op)
			return req, nil
		}, nil)
		if res.GaveUp || res.Answer.Err != nil {
			l.gaveUp.Add(1)
			continue
		}
		var tr struct {
			ID string `json:"id"`
		}
		if res.Answer.Status == http.StatusCreated && json.Unmarshal(res.Answer.Body, &tr) == nil {
			l.mu.Lock()
			l.answered[tr.ID] = op
			l.mu.Unlock()
		}
	}
}

// deliveryNemesis is what goes wrong during the load, at fixed fractions
// of it: the core down, the server killed, the core flapping, a posting
// rejected for good, the core down again. It records its outages.
type deliveryNemesis struct {
	core *core.Faults
	kill func() error
	// outages are the stretches, on this process's clock, in which no
	// relay could deliver anything: the core down, the server dead from
	// its kill until its restart serves.
	outages []outage
	downAt  time.Time
}

// run plays the faults over d, or until ctx ends. The core is down for
// 400 ms each time: twenty relay passes and more.
func (n *deliveryNemesis) run(ctx context.Context, d time.Duration) error {
	steps := []struct {
		at float64
		do func() error
	}{
		{0.15, func() error { n.setDown(true); return nil }},
		{0.15 + 0.4/d.Seconds(), func() error { n.setDown(false); return nil }},
		{0.30, func() error { n.core.Flap(400); return nil }},
		{0.45, func() error { n.core.PoisonNext(); return nil }},
		{0.50, n.killed},
		{0.70, func() error { n.setDown(true); return nil }},
		{0.70 + 0.4/d.Seconds(), func() error { n.setDown(false); return nil }},
	}
	start := time.Now()
	defer n.setDown(false)
	for _, s := range steps {
		t := time.NewTimer(time.Until(start.Add(time.Duration(s.at * float64(d)))))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if err := s.do(); err != nil {
			return err
		}
	}
	return nil
}

// setDown takes the core down or brings it back, and records the outage
// when it ends.
func (n *deliveryNemesis) setDown(down bool) {
	n.core.SetDown(down)
	switch {
	case down:
		n.downAt = time.Now()
	case !n.downAt.IsZero():
		n.outages = append(n.outages, outage{what: "core down", from: n.downAt, to: time.Now()})
		n.downAt = time.Time{}
	}
}

// killed kills the server and starts it again, and records the outage.
func (n *deliveryNemesis) killed() error {
	from := time.Now()
	err := n.kill()
	n.outages = append(n.outages, outage{what: "server dead", from: from, to: time.Now()})
	return err
}

// outage is a stretch of the check in which no relay could deliver.
type outage struct {
	what     string
	from, to time.Time
}

// deliveryLags are a check's delivery lags: each row's as the outbox
// recorded it, and the same with the outages it waited through taken
// out, which is what the relay answers for.
type deliveryLags struct {
	recorded, relayed []time.Duration
	// committed is when each row's transfer committed, on the lab clock.
	committed []time.Time
	outages   []outage
}

// lagsBeside sets each delivery beside the outages, timed on a clock
// that the lab clock is ahead of by ahead.
func lagsBeside(ds []bank.Delivery, outages []outage, ahead time.Duration) deliveryLags {
	l := deliveryLags{outages: outages}
	for _, d := range ds {
		lag := d.Lag()
		l.recorded = append(l.recorded, lag)
		for _, o := range outages {
			from, to := o.from.Add(ahead), o.to.Add(ahead)
			if d.Created.After(from) {
				from = d.Created
			}
			if d.Sent.Before(to) {
				to = d.Sent
			}
			if to.After(from) {
				lag -= to.Sub(from)
			}
		}
		l.relayed = append(l.relayed, lag)
		l.committed = append(l.committed, d.Created)
	}
	return l
}

// slowest says when the rows of the slowest hundredth of relayed lags
// were committed: how many in each second of the run, counted from the
// first row's commit.
func (l deliveryLags) slowest() string {
	if len(l.relayed) == 0 {
		return "no delivery"
	}
	order := make([]int, len(l.relayed))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(l.relayed[b], l.relayed[a]) })
	first := slices.MinFunc(l.committed, func(a, b time.Time) int { return a.Compare(b) })
	perSecond := map[int]int{}
	for _, i := range order[:len(order)/100+1] {
		perSecond[int(l.committed[i].Sub(first)/time.Second)]++
	}
	var parts []string
	for _, sec := range slices.Sorted(maps.Keys(perSecond)) {
		parts = append(parts, fmt.Sprintf("%d in second %d", perSecond[sec], sec))
	}
	return strings.Join(parts, ", ")
}

// summary names the outages: how many of each kind, and how long in all.
func (l deliveryLags) summary() string {
	var kinds []string
	count, total := map[string]int{}, map[string]time.Duration{}
	for _, o := range l.outages {
		if count[o.what] == 0 {
			kinds = append(kinds, o.what)
		}
		count[o.what]++
		total[o.what] += o.to.Sub(o.from)
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d× %d ms", k, count[k], total[k].Milliseconds()))
	}
	if len(parts) == 0 {
		return "no outage"
	}
	return strings.Join(parts, ", ")
}

// outboxPeak is the most rows the outbox held owed at once, as polled.
type outboxPeak struct {
	mu   sync.Mutex
	most int64
}

// watch reads the outbox every 100 ms until ctx ends.
func (p *outboxPeak) watch(ctx context.Context, read func(context.Context) (bank.OutboxCounts, error)) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := read(ctx); err == nil {
			p.mu.Lock()
			p.most = max(p.most, c.Pending)
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *outboxPeak) max() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.most
}

// deliveryVerdict is what the books say at the end of the delivery check.
type deliveryVerdict struct {
	executed, postedOnce, twice, unposted, dead int
	// lagP99 is the p99 of the lags the relay answers for, recordedP99
	// that of the lags as the outbox recorded them, outages included.
	lagP99, recordedP99 time.Duration
	outages             string
	peak                int64
	problems            []string
}

func (v deliveryVerdict) line() string {
	return fmt.Sprintf("delivery: %d executed, %d posted once, %d twice, %d unposted, %d dead letters, lag p99 %d ms (%d ms with %s), outbox peak %d",
		v.executed, v.postedOnce, v.twice, v.unposted, v.dead, v.lagP99.Milliseconds(), v.recordedP99.Milliseconds(), v.outages, v.peak)
}

// p99 is the 99th percentile of ds, 0 for none.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Sorted(slices.Values(ds))
	return ds[int(0.99*float64(len(ds)-1))]
}

// judgeDelivery reconciles the lab's executions and the transfers its
// clients were answered with the core's postings and the outbox's dead
// letters: every executed transfer posted once, or set aside as a dead
// letter of a posting the core rejected, with the core's answer (its
// status and problem, which the operator reads); nothing executed or posted
// twice; nothing posted that no client was answered; and the lag's p99
// within deliveryLagLimit.
func judgeDelivery(executions map[string]int64, answered map[string]string, postings []core.Receipt,
	dead []bank.DeadLetter, poisoned []string, lags deliveryLags) deliveryVerdict {
	var v deliveryVerdict
	for op, n := range executions {
		v.executed += int(n)
		if n > 1 {
			v.problems = append(v.problems, fmt.Sprintf("%s executed %d times", op, n))
		}
	}
	count := map[string]int{}
	for _, p := range postings {
		count[p.TransferID]++
	}
	isDead := map[string]bool{}
	for _, d := range dead {
		isDead[d.TransferID] = true
		switch {
		case !slices.Contains(poisoned, d.TransferID):
			v.problems = append(v.problems, fmt.Sprintf("%s set aside as a dead letter (%d %s), though the core never rejected it for good", d.TransferID, d.Status, d.Answer))
		case d.Status != http.StatusUnprocessableEntity || !strings.Contains(d.Answer, core.Rejected.URI()):
			v.problems = append(v.problems, fmt.Sprintf("%s set aside as a dead letter without the core's answer: status %d, answer %q (the core answered 422 %s)", d.TransferID, d.Status, d.Answer, core.Rejected.URI()))
		}
	}
	v.dead = len(dead)
	for id, n := range count {
		switch {
		case n > 1:
			v.twice++
			v.problems = append(v.problems, fmt.Sprintf("%s posted %d times", id, n))
		case answered[id] == "":
			v.problems = append(v.problems, fmt.Sprintf("%s posted, and no client was answered for it", id))
		default:
			v.postedOnce++
		}
	}
	for id, op := range answered {
		if count[id] == 0 && !isDead[id] {
			v.unposted++
			v.problems = append(v.problems, fmt.Sprintf("%s (%s) executed and never posted, and no dead letter names it", id, op))
		}
	}
	// Executions no client learned of: they are in no posting either.
	if gap := v.executed - len(answered); gap > 0 {
		v.unposted += gap
		v.problems = append(v.problems, fmt.Sprintf("%d executions no client was answered for", gap))
	}
	v.lagP99, v.recordedP99, v.outages = p99(lags.relayed), p99(lags.recorded), lags.summary()
	if v.lagP99 > deliveryLagLimit {
		v.problems = append(v.problems, fmt.Sprintf("delivery lag p99 %v outside the outages (%v with them), over %v", v.lagP99, v.recordedP99, deliveryLagLimit))
	}
	return v
}
