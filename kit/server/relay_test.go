package server_test

import (
	"context"
	"sync"
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
