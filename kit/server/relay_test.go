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
	defer server.SetRelayInterval(time.Hour)()
	f := &firstPass{called: make(chan struct{})}
	startWith(t, server.Options{Stage: func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
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
