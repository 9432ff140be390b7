package backend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/kit/bank"
	"idemlab/kit/idemkey"
	"idemlab/kit/retry"
)

// TestTraffic_DrainWaitsForTheOperationsUnderWay: paused traffic drains
// only once the operation a server holds has its answer.
func TestTraffic_DrainWaitsForTheOperationsUnderWay(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before srv.Close, which waits for the handlers

	tr := NewTraffic([]func() string{func() string { return srv.URL }}, bank.DefaultParams())
	calm, err := ProfileNamed("calm")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetProfile(calm)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() { defer close(ran); tr.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	select {
	case <-arrived:
	case <-time.After(patience):
		t.Fatal("no operation reached the server")
	}
	tr.SetPaused(true)
	given, giveUp := context.WithCancel(t.Context())
	giveUp()
	if err := tr.Drain(given); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain with an operation held by the server = %v, want context.Canceled", err)
	}
	free()
	if err := tr.Drain(t.Context()); err != nil {
		t.Fatalf("Drain after the server answered: %v", err)
	}
}

// TestTraffic_EverySubmissionRetriesByThePolicy: the demo's client
// retries a 429 after its Retry-After, and retries the clerk's edited
// resubmission too, each with its own key and body on every attempt, and
// stops at an answer that is the outcome. It catches a traffic that sends
// the edit once, unlike the replay's clients, one that gives up on a 429,
// and a client that retries a final answer.
func TestTraffic_EverySubmissionRetriesByThePolicy(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = append(sent, r.Header.Get(idemkey.Header)+" "+string(body))
		n := len(sent)
		mu.Unlock()
		switch n {
		case 1: // the original
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusCreated)
		case 3: // the clerk's edit
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	}))
	defer srv.Close()
	tr := NewTraffic([]func() string{func() string { return srv.URL }}, bank.DefaultParams())
	op := tr.draw()
	op.Fate = dayplan.Fate{EditedAmount: op.Amount + 50_000}
	tr.play(t.Context(), func() string { return srv.URL }, op)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 4 {
		t.Fatalf("%d attempts, want 4: the original's 429 and its retry, the edit's 503 and its retry", len(sent))
	}
	if sent[0] != sent[1] || sent[2] != sent[3] {
		t.Errorf("a retry changed its request:\n%s", strings.Join(sent, "\n"))
	}
	if sent[1] == sent[2] {
		t.Errorf("the edit sent the original's body: %s", sent[2])
	}
}

// TestTraffic_EditedResubmitsATransfer: the e key's clerk edits a
// transfer, every time, as the help page says; the plan it draws from
// holds deposits too. It catches an Edited that resubmits whatever
// operation comes next.
func TestTraffic_EditedResubmitsATransfer(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	tr := NewTraffic([]func() string{func() string { return srv.URL }}, bank.DefaultParams())
	calm, err := ProfileNamed("calm")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetProfile(calm)
	deposits := 0
	for _, op := range tr.chunkFor(Profiles[calm])[:20] {
		if op.Endpoint == dayplan.Deposits {
			deposits++
		}
	}
	if deposits == 0 {
		t.Fatal("the first 20 operations of the plan hold no deposit: this test would prove nothing")
	}
	for range 20 {
		notice := tr.Edited(t.Context())
		// The class compares the two amounts: whole, not rounded.
		if !regexp.MustCompile(`again, ₩[\d,]+ → ₩[\d,]+$`).MatchString(notice) {
			t.Errorf("the clerk's notice %q does not give both amounts whole", notice)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if p != dayplan.Transfers {
			t.Fatalf("the clerk's edit went to %s, want %s: %v", p, dayplan.Transfers, paths)
		}
	}
}

// TestTraffic_ABurstFitsTheAccount: the b key's sixteen copies together
// take at most a quarter of an opening balance, so that the naive server
// executes every one of them. A burst of a ₩800k transfer ran the
// account dry on the naive side, which refused the last copies as
// insufficient funds, and the counter rose by 11, not the 15 the class
// was told to watch for.
func TestTraffic_ABurstFitsTheAccount(t *testing.T) {
	var mu sync.Mutex
	var amounts []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Amount int64 }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("a burst's body: %v", err)
		}
		mu.Lock()
		amounts = append(amounts, body.Amount)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	reset := bank.DefaultParams()
	tr := NewTraffic([]func() string{func() string { return srv.URL }}, reset)
	for range 20 {
		tr.Burst(t.Context())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(amounts) != 20*BurstSize {
		t.Fatalf("%d copies sent, want %d", len(amounts), 20*BurstSize)
	}
	for _, a := range amounts {
		if a*BurstSize > reset.OpeningBalance/4 {
			t.Fatalf("a burst of ₩%d × %d takes more than a quarter of the opening ₩%d", a, BurstSize, reset.OpeningBalance)
		}
	}
}

// TestTraffic_ASlowServerIsNotBuriedInRetries: a server that answers 50
// requests a second, one at a time, under traffic of 100 operations a
// second whose client gives up after 250ms. Started at the rate whatever
// the server answers, the requests queue until each waits longer than the
// client does: the server works through requests whose clients are gone,
// their retries join the queue, and nearly nothing it does reaches anyone
// (the demo on a slow laptop at 50 to 100 ops/s: without the limit, 130
// answers to 1,135 requests here). Held to what the server answers in
// time, most requests that reach it are answered, and the operations not
// started are counted.
func TestTraffic_ASlowServerIsNotBuriedInRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 4s of traffic")
	}
	const service, timeout, played = 20 * time.Millisecond, 250 * time.Millisecond, 4 * time.Second
	var arrived, served, answered atomic.Int64
	desk := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case desk <- struct{}{}:
		case <-r.Context().Done():
			return // the client gave up while its request waited
		}
		time.Sleep(service) // the work: one request at a time
		<-desk
		served.Add(1)
		if r.Context().Err() == nil {
			answered.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	tr := NewTraffic([]func() string{func() string { return srv.URL }}, bank.DefaultParams())
	tr.policy = retry.Policy{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond, Horizon: 2 * time.Second, Timeout: timeout}
	tr.client.Timeout = timeout
	calm, err := ProfileNamed("calm")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetProfile(calm)
	tr.StepRate(len(Rates))
	ctx, cancel := context.WithTimeout(t.Context(), played)
	defer cancel()
	tr.Run(ctx)
	s, a := served.Load(), answered.Load()
	t.Logf("%d operations started, %d held back; %d requests arrived, the server did %d, %d of them for a client still waiting", tr.Played(), tr.HeldBack(), arrived.Load(), s, a)
	if n := arrived.Load(); a < n*3/4 {
		t.Errorf("of the %d requests that reached the server, %d were answered to a client still waiting, want at least three in four", n, a)
	}
	if tr.HeldBack() == 0 {
		t.Errorf("no operation held back at %d ops/s against a server that does %v a request", Rates[len(Rates)-1], service)
	}
}
