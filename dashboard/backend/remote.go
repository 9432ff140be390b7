package backend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"idemlab/dashboard"
	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/stage"
)

// Remote is a lab server reached over HTTP: a student's `make serve`, or a
// stage running as a child process; or the replicas of one, several
// server processes on one database (`lab serve --replicas N`). It reads
// only what any lab server serves, through the lab API's client.
type Remote struct {
	// Lab is the server, or the first replica: the one the dashboard
	// reads the state of and sends its controls to (reset, config,
	// faults). Replicas share the bank, the clock and the config; a fault
	// is armed on Lab alone.
	Lab *labclient.Client
	// Replicas are every replica, Lab first; one server is its only
	// replica.
	Replicas []*labclient.Client
}

// NewRemote returns a remote backend for the server at urls[0], or for
// the replicas at urls, which share its admin token. urls holds one URL
// at least.
func NewRemote(token string, urls ...string) *Remote {
	r := &Remote{}
	for _, url := range urls {
		r.Replicas = append(r.Replicas, labclient.New(url, token, &http.Client{}))
	}
	r.Lab = r.Replicas[0]
	return r
}

// URL is the server's base URL.
func (r *Remote) URL() string { return r.Lab.URL() }

// call bounds one lab request: a hung server must not hang the dashboard.
func call[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return fn(ctx)
}

// State reads GET /lab/state.
func (r *Remote) State(ctx context.Context) (labctl.State, error) {
	return call(ctx, r.Lab.State)
}

// Reset calls POST /lab/reset.
func (r *Remote) Reset(ctx context.Context, p bank.Params) error {
	_, err := call(ctx, func(ctx context.Context) ([]bank.Customer, error) { return r.Lab.Reset(ctx, p) })
	return err
}

// Arm calls POST /lab/faults.
func (r *Remote) Arm(ctx context.Context, point string, count int64) error {
	_, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, r.Lab.Arm(ctx, point, count) })
	return err
}

// Configure calls POST /lab/config. Replicas share the config: what
// one is told, the others hold from their next request.
func (r *Remote) Configure(ctx context.Context, change labclient.Config) error {
	_, err := call(ctx, func(ctx context.Context) (stage.Config, error) { return r.Lab.Configure(ctx, change) })
	return err
}

// Restart is not possible for a server this process did not start.
func (r *Remote) Restart(ctx context.Context) error {
	return errors.New("this server runs on its own: restart it where it runs")
}

// Close does nothing: the server is not ours.
func (r *Remote) Close() error { return nil }

// Subscribe reads GET /lab/events of every replica, reconnecting (with a
// short pause) when a stream breaks, until cancel is called or ctx ends.
// Events sent while a stream was down are missed; the state poll catches
// the executions among them (see dashboard.Side.ApplyState). Of several
// replicas, each event says which one sent it (Event.Replica): a request
// event names the process that answered. On PostgreSQL every replica
// hears every key row change, so a change comes once from each; a row
// event carries the row as it is, so the copies agree once all arrive.
func (r *Remote) Subscribe(ctx context.Context) (<-chan events.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan events.Event, 256)
	var wg sync.WaitGroup
	for i, lab := range r.Replicas {
		replica := 0
		if len(r.Replicas) > 1 {
			replica = i + 1
		}
		wg.Go(func() { follow(ctx, lab, replica, out) })
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, cancel
}

// follow sends lab's events on out, marked as replica's, until ctx ends.
// Of several replicas, it also says when the stream breaks and when it
// opens again after a break (dashboard.KindStream): lab serve starts a
// replica that dies again, and the server has no event for a process of
// its own that died, so the break is how the feed learns of it.
func follow(ctx context.Context, lab *labclient.Client, replica int, out chan<- events.Event) {
	send := func(ev events.Event) bool {
		ev.Replica = replica
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// last is the lab time of the last event heard: the break is put
	// after it among the replicas' events, which are sorted by time.
	var last time.Time
	broken := false
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
		s, err := lab.OpenEvents(ctx)
		if err != nil {
			continue
		}
		if broken && replica > 0 && !send(streamEvent(true, last)) {
			s.Close()
			return
		}
		broken = false
		s.Read(func(ev events.Event) bool {
			last = ev.Time
			return send(ev)
		})
		s.Close()
		if ctx.Err() != nil {
			return
		}
		broken = true
		if replica > 0 {
			send(streamEvent(false, last))
		}
	}
}

// streamEvent is the dashboard.KindStream event of a stream that opened
// (again) or broke, at lab time t.
func streamEvent(open bool, t time.Time) events.Event {
	data, _ := json.Marshal(dashboard.Stream{Open: open})
	return events.Event{Kind: dashboard.KindStream, Time: t, Data: data}
}
