package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/grader/targets"
)

// killClients is how many clients send the day at once while the server
// is killed.
const killClients = 32

// killLease is the lease the killed server runs with: a key stranded in
// progress by a kill is taken over within a fraction of a second, well
// inside the retry horizon of the clients, who wait a thousandth of each
// backoff (see replay.Run).
const killLease = "150ms"

// TestKill9UnderLoad_NothingLostNothingDoubled: solution 9 runs in a
// child process on a database file while 32 clients send a day of
// transfers and deposits, each with a fresh key, retrying with the same
// key and body by the published policy; it posts every transfer to a core
// ledger in this process, which outlives it. The process is killed with
// SIGKILL at drawn moments (its relay with it, perhaps between a post
// and its mark) and started again on the same file. At the end
// every operation has executed at most once, every operation a client was
// told succeeded has executed exactly once, every balance is the opening
// balance plus the executions the server counted, the outbox has drained,
// and the core holds exactly one posting of each executed transfer and
// none of a transfer that never executed.
func TestKill9UnderLoad_NothingLostNothingDoubled(t *testing.T) {
	soakOnly(t)
	seed := soakSeed(t)
	ctx, abort := context.WithCancelCause(soakContext(t))
	defer abort(nil)

	plan := plainDay(t, seed)
	// The day's reset keeps the config, so its very first claim has the
	// short lease.
	coreURL := startCore(ctx, t)
	child, base := startSolution(ctx, t, coreURL, map[string]string{"lease": killLease})

	k := &killer{child: child, base: base, gate: &gate{base: base, up: make(chan struct{})}, at: killPoints(seed, len(plan.Ops), *killFlag)}
	k.due = make(chan int, len(k.at))
	if err := k.gate.open(child.URL); err != nil {
		t.Fatal(err)
	}
	killed := make(chan error, 1)
	go func() {
		err := k.run(ctx)
		if err != nil {
			abort(err)
		}
		killed <- err
	}()
	res, err := replay.Run(ctx, plan, replay.Options{
		URL: child.URL, Admin: child.Admin, Base: k.gate, Clients: killClients, Progress: k.progress, CoreURL: coreURL,
	})
	close(k.due)
	if kerr := <-killed; kerr != nil {
		t.Fatalf("after %d kills: %v", k.kills, kerr)
	}
	if err != nil {
		t.Fatalf("after %d kills: %v", k.kills, err)
	}

	rc := replay.ReconcileDay(res)
	f := killFigures(res, rc, k.kills)
	t.Logf("kill -9 under load: %d operations, %d clients, %d kills: %s; %s", len(plan.Ops), killClients, k.kills, f, coreFigures(t, res, rc))
	if !rc.Valid || k.kills != len(k.at) {
		t.Errorf("%d of %d kills; the day does not reconcile:\n%s", k.kills, len(k.at), report(rc))
	}
}

// killPoints draws n distinct counts of finished operations, between a
// twentieth and nineteen twentieths of the day, after which the server is
// killed.
func killPoints(seed uint64, ops, n int) []int {
	r := rand.New(rand.NewPCG(seed, 0x6b11))
	lo, hi := ops/20, ops*19/20
	var at []int
	for len(at) < n && len(at) < hi-lo {
		if p := lo + r.IntN(hi-lo); !slices.Contains(at, p) {
			at = append(at, p)
		}
	}
	slices.Sort(at)
	return at
}

// killer kills the child once for each of its points and starts it again
// on the same database.
type killer struct {
	child *targets.Child
	base  *http.Transport
	gate  *gate
	at    []int
	due   chan int
	kills int
}

// progress is the replay's progress callback. When a kill point is
// reached it holds the day's new requests at the gate, so that nothing
// (the day's final reading of the books included) slips past the kill,
// and hands the kill to run; the requests already in flight are what the
// kill cuts.
func (k *killer) progress(done, _ int) {
	if slices.Contains(k.at, done) {
		k.gate.close()
		k.due <- done
	}
}

// run kills and restarts the child for each point progress hands it,
// until progress is done. It returns the first restart that failed.
func (k *killer) run(ctx context.Context) error {
	for range k.due {
		k.child.Kill()
		k.kills++
		k.base.CloseIdleConnections()
		if err := k.child.Start(ctx); err != nil {
			return fmt.Errorf("restart on %s: %w", k.child.DB, err)
		}
		// The config does not survive a restart.
		admin := &http.Client{Transport: k.base}
		if err := configure(ctx, admin, k.child.URL, k.child.Admin, map[string]string{"lease": killLease}); err != nil {
			return err
		}
		if err := k.gate.open(k.child.URL); err != nil {
			return err
		}
	}
	return nil
}

// gate carries the day's requests to the child process, holds them while
// it is down, and sends them to the address it listens on after a
// restart (the same one, unless another process took its port). It is
// closed until the first open. Requests to another host (the core
// ledger, which is never down) go straight through.
type gate struct {
	base http.RoundTripper
	mu   sync.Mutex
	up   chan struct{}
	// addressed is the host the day's requests name: the child's first.
	addressed, host string
}

// RoundTrip sends req once the gate is open.
func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.mu.Lock()
	up, addressed := g.up, g.addressed
	g.mu.Unlock()
	if req.URL.Host != addressed {
		return g.base.RoundTrip(req)
	}
	select {
	case <-up:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	g.mu.Lock()
	host := g.host
	g.mu.Unlock()
	if req.URL.Host != host {
		req = req.Clone(req.Context())
		req.URL.Host = host
	}
	return g.base.RoundTrip(req)
}

// close holds new requests until open.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.up:
		g.up = make(chan struct{})
	default:
	}
}

// open lets held and new requests through, to the server at serverURL.
func (g *gate) open(serverURL string) error {
	u, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	if u.Host == "" {
		return errors.New("gate: no host in " + serverURL)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addressed == "" {
		g.addressed = u.Host
	}
	g.host = u.Host
	select {
	case <-g.up:
	default:
		close(g.up)
	}
	return nil
}

// killFigures says what the day did: how many operations were
// acknowledged, how many attempts the kills cut, and the reconciliation's
// doubles and losses.
func killFigures(res *replay.Result, rc replay.DayReconciliation, kills int) string {
	endpoint := map[string]string{}
	for _, op := range res.Plan.Ops {
		endpoint[op.Op] = op.Endpoint
	}
	acked := map[string]int{}
	cut := 0
	for _, a := range res.Attempts {
		if a.Error != "" {
			cut++
		}
		if a.Final && a.Succeeded() {
			acked[endpoint[a.Op]]++
		}
	}
	return fmt.Sprintf("%d acknowledged transfers and %d deposits, %d attempts cut by the kills, %d executed twice, %d lost, money conserved %v",
		acked[dayplan.Transfers], acked[dayplan.Deposits], cut, rc.Counts.DoubleApplied, rc.Counts.LostTransfers, rc.Money.Conserved)
}
