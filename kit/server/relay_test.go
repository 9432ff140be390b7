package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/kit/server"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
)

// firstPass is solution 0 with a relay that says when it is first called.
type firstPass struct {
	stage.Handlers
	once   sync.Once
	called chan struct{}
}

func (f *firstPass) Relay(context.Context) (int, error) {
	f.once.Do(func() { close(f.called) })
	return 0, nil
}

// TestRelay_FirstPassAtOnce: a server's relay runs its first pass as the
// server starts, not an interval later: a server started again after a
// crash owes what the one before it left, and its clients' retries are
// about to queue for the database. With the interval an hour long, a relay
// that waited for it first does not run within the test.
func TestRelay_FirstPassAtOnce(t *testing.T) {
	f := &firstPass{called: make(chan struct{})}
	startWith(t, server.Options{RelayInterval: time.Hour, Stage: func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage0.New(ctx, env)
		f.Handlers = h
		return f, err
	}})
	select {
	case <-f.called:
	case <-time.After(time.Minute):
		t.Fatal("no relay pass within a minute of the server's start, with the interval an hour")
	}
}

// passCounter is solution 0 with a relay that counts its passes, each
// settling nothing, and says on passed when it has made as many as want.
type passCounter struct {
	stage.Handlers
	want   int
	passed chan struct{}
	mu     sync.Mutex
	passes int
}

func (p *passCounter) Relay(context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.passes++
	if p.passes == p.want {
		close(p.passed)
	}
	return 0, nil
}

func (p *passCounter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passes
}

// startCounting starts a server whose relay is p, with interval.
func startCounting(t *testing.T, p *passCounter, interval time.Duration) {
	startWith(t, server.Options{RelayInterval: interval, Stage: func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage0.New(ctx, env)
		p.Handlers = h
		return p, err
	}})
}

// TestRelay_EachServerWaitsItsOwnInterval: two servers at once, one
// relaying every microsecond, one every hour. While the first makes
// fifty passes, the second makes its first one only: a relay that waits
// a shared interval (or the default) instead of its server's makes more.
func TestRelay_EachServerWaitsItsOwnInterval(t *testing.T) {
	slow := &passCounter{want: 1, passed: make(chan struct{})}
	fast := &passCounter{want: 50, passed: make(chan struct{})}
	startCounting(t, slow, time.Hour)
	startCounting(t, fast, time.Microsecond)
	for _, p := range []*passCounter{slow, fast} {
		select {
		case <-p.passed:
		case <-time.After(time.Minute):
			t.Fatalf("%d relay passes within a minute, want %d", p.count(), p.want)
		}
	}
	if n := slow.count(); n != 1 {
		t.Errorf("the relay with an hour's interval made %d passes while the other made 50, want 1", n)
	}
}

// holder is solution 0 whose transfers each take a database connection
// and hold it until released, and whose relay, once armed, reads the
// database once and reports how that went on read.
type holder struct {
	stage.Handlers
	db      *sql.DB
	holding chan struct{} // a transfer holds its connection
	release chan struct{}
	armed   atomic.Bool
	once    sync.Once
	read    chan error
}

func (h *holder) Transfer(w http.ResponseWriter, r *http.Request) {
	conn, err := h.db.Conn(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	h.holding <- struct{}{}
	<-h.release
	w.WriteHeader(http.StatusNoContent)
}

func (h *holder) Relay(ctx context.Context) (int, error) {
	if h.armed.Load() {
		h.once.Do(func() {
			var one int
			h.read <- h.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		})
	}
	return 0, nil
}

// receive waits for n values on ch, for at most a minute.
func receive[T any](t *testing.T, ch <-chan T, n int, what string) []T {
	t.Helper()
	var got []T
	for len(got) < n {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d %s within a minute", len(got), n, what)
		}
	}
	return got
}

// TestRelay_PassesWhileEveryRequestSlotIsBusy: on a database whose pool
// of connections is bounded (PostgreSQL's), customers' requests holding a
// connection each, as many as the pool holds and more, leave the relay's
// pass a connection to read the outbox with, and the lab's state one to
// answer with. Served as they come, the requests take every connection,
// and the relay and the lab wait for one as long as the slowest request
// holds its own (here, until the test lets them go).
func TestRelay_PassesWhileEveryRequestSlotIsBusy(t *testing.T) {
	h := &holder{release: make(chan struct{}), read: make(chan error, 1)}
	srv, _ := startWith(t, server.Options{Stage: func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		hs, err := stage0.New(ctx, env)
		h.db, h.Handlers = env.DB, hs
		return h, err
	}})
	pool := srv.PoolSize()
	if pool == 0 {
		t.Skip("SQLite's pool of connections has no bound: a request never waits for one")
	}
	// As many transfers take a connection as the server admits at once;
	// the others wait for a slot.
	busy := pool - server.ReservedConns
	customer, _ := resetTwo(t, srv)
	total := pool + 8
	h.holding = make(chan struct{}, total)
	reached := make(chan struct{}, total)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	var let sync.Once
	letGo := func() { let.Do(func() { close(h.release) }) }
	t.Cleanup(letGo)

	answers := make(chan int, total)
	send := func(method, path, token string, to chan<- int) {
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hs.Client().Do(req)
		if err != nil {
			to <- 0
			return
		}
		resp.Body.Close()
		to <- resp.StatusCode
	}
	for range total {
		go send("POST", "/transfers", customer.Token, answers)
	}
	receive(t, reached, total, "requests reached the server")
	receive(t, h.holding, busy, "transfers took a connection")

	h.armed.Store(true)
	state := make(chan int, 1)
	go send("GET", "/lab/state", srv.AdminToken(), state)
	if err := receive(t, h.read, 1, "relay passes read the database")[0]; err != nil {
		t.Fatalf("the relay's read: %v", err)
	}
	if code := receive(t, state, 1, "answers from /lab/state")[0]; code != http.StatusOK {
		t.Fatalf("/lab/state answered %d while the requests held their connections, want 200", code)
	}
	letGo()
	for _, code := range receive(t, answers, total, "transfers answered") {
		if code != http.StatusNoContent {
			t.Errorf("a transfer answered %d once let go, want 204", code)
		}
	}
}

// TestServer_OpensTheConnectionsItWillHoldAsItStarts: on a database whose
// pool is bounded, a server told to open ahead starts with a connection
// open for each of its request slots and one for the relay, so that 64
// clients arriving at once, after a reset or a restart, do not wait for
// PostgreSQL to start 40 backends, nor the relay's pass behind them. A
// pool opened as asked has one or two open at this point.
func TestServer_OpensTheConnectionsItWillHoldAsItStarts(t *testing.T) {
	srv, _ := startWith(t, server.Options{Stage: stage0.New, OpenAhead: true})
	if srv.PoolSize() == 0 {
		t.Skip("SQLite's pool of connections has no bound: a request never waits for one")
	}
	if open, want := srv.OpenConns(), srv.RequestSlots()+1; open < want {
		t.Errorf("%d connections open as the server starts, want at least %d (a request slot each, and one for the relay)", open, want)
	}
}
