package soak

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"idemlab/grader/replay"
	"idemlab/kit/problem"
)

// dupClients is how many clients send at once under duplicate load.
const dupClients = 64

// dupCoreLatency is how long the core banking call takes under duplicate
// load.
const dupCoreLatency = "20ms"

// TestDuplicateLoad_NoServerErrorNoDouble: 64 clients send a day of
// operations against solution 9, and every attempt goes out two to four
// times at once, the way a client that double-submits, a proxy that
// retries on its own and a user who taps again all meet at the server.
// No copy may get a 5xx, every answer that is not "in progress" must be
// the same bytes for every copy of the same key, and every operation must
// execute once at most, and be posted to the core ledger once.
func TestDuplicateLoad_NoServerErrorNoDouble(t *testing.T) {
	soakOnly(t)
	seed := soakSeed(t)
	ctx := soakContext(t)
	plan := plainDay(t, seed)
	// The core banking call takes a moment, outside any transaction, so
	// that the copies of a request meet while the first is in progress.
	coreURL := startCore(ctx, t)
	child, base := startSolution(ctx, t, coreURL, map[string]string{"core_latency": dupCoreLatency})
	dup := &duplicator{base: base, seed: seed, first: map[string]copyAnswer{}}
	res, err := replay.Run(ctx, plan, replay.Options{URL: child.URL, Admin: child.Admin, Base: dup, Clients: dupClients, CoreURL: coreURL})
	if err != nil {
		t.Fatal(err)
	}
	rc := replay.ReconcileDay(res)
	t.Logf("duplicate load: %d operations, %d clients: %s; %s", len(plan.Ops), dupClients, dup.figures(rc), coreFigures(t, res, rc))
	if len(dup.broken) > 0 {
		t.Errorf("%d copies broke the contract; the first:\n%s", len(dup.broken), strings.Join(dup.broken[:min(3, len(dup.broken))], "\n"))
	}
	if !rc.Valid {
		t.Errorf("the day does not reconcile:\n%s", report(rc))
	}
}

// duplicator is an http.RoundTripper that sends every request carrying
// an Idempotency-Key two to four times at once, and hands the client the
// first copy's answer. It checks every copy's answer as it goes.
type duplicator struct {
	base http.RoundTripper
	seed uint64

	mu sync.Mutex
	// first is the first answer heard for each key that is an outcome
	// (not "in progress"); every later one must be the same bytes.
	first                         map[string]copyAnswer
	copies, inProgress, replayed  int
	serverErrors, noAnswer, fresh int
	broken                        []string
}

// copyAnswer is what one copy of a request heard.
type copyAnswer struct {
	status   int
	header   http.Header
	body     []byte
	replayed bool
	err      error
}

// RoundTrip sends req's copies at the same moment and returns the first
// copy's answer.
func (d *duplicator) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get("Idempotency-Key")
	if key == "" {
		return d.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", d.seed, key)
	n := 2 + int(h.Sum64()%3)
	answers := make([]copyAnswer, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			answers[i] = d.send(req, body)
		}()
	}
	close(release)
	wg.Wait()
	for _, a := range answers {
		d.check(key, a)
	}
	first := answers[0]
	if first.err != nil {
		return nil, first.err
	}
	return &http.Response{
		StatusCode: first.status, Status: fmt.Sprintf("%d %s", first.status, http.StatusText(first.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: first.header, Body: io.NopCloser(bytes.NewReader(first.body)), ContentLength: int64(len(first.body)), Request: req,
	}, nil
}

// send makes one copy of req with body, which Go's transport must not
// resend on its own.
func (d *duplicator) send(req *http.Request, body []byte) copyAnswer {
	c := req.Clone(req.Context())
	c.Body, c.ContentLength, c.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	resp, err := d.base.RoundTrip(c)
	if err != nil {
		return copyAnswer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return copyAnswer{err: err}
	}
	return copyAnswer{status: resp.StatusCode, header: resp.Header, body: raw, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
}

// check counts a copy's answer and records how it broke the contract, if
// it did: no answer, a 5xx, or an outcome that differs from the first
// outcome heard for its key.
func (d *duplicator) check(key string, a copyAnswer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.copies++
	switch {
	case a.err != nil:
		d.noAnswer++
		d.broken = append(d.broken, fmt.Sprintf("%s: no answer: %v", key, a.err))
		return
	case a.status >= 500:
		d.serverErrors++
		d.broken = append(d.broken, fmt.Sprintf("%s: %d %s", key, a.status, a.body))
		return
	case a.status == http.StatusConflict && bytes.Contains(a.body, []byte(problem.RequestInProgress.URI())):
		d.inProgress++
		return
	}
	if a.replayed {
		d.replayed++
	} else {
		d.fresh++
	}
	first, seen := d.first[key]
	if !seen {
		d.first[key] = a
		return
	}
	if first.status != a.status || !bytes.Equal(first.body, a.body) {
		d.broken = append(d.broken, fmt.Sprintf("%s: first %d %s, then %d %s", key, first.status, first.body, a.status, a.body))
	}
}

// figures says what the copies heard, and the reconciliation's doubles.
func (d *duplicator) figures(rc replay.DayReconciliation) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("%d copies sent: %d original answers, %d replays, %d in progress, %d server errors, %d without an answer; %d executed twice, %d lost, money conserved %v",
		d.copies, d.fresh, d.replayed, d.inProgress, d.serverErrors, d.noAnswer, rc.Counts.DoubleApplied, rc.Counts.LostTransfers, rc.Money.Conserved)
}
