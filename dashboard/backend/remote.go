package backend

import (
	"context"
	"errors"
	"net/http"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// Remote is a lab server reached over HTTP: a student's `make serve`, or a
// stage running as a child process. It reads only what any lab server
// serves, through the lab API's client.
type Remote struct {
	Lab *labclient.Client
}

// NewRemote returns a remote backend for the server at url.
func NewRemote(url, token string) *Remote {
	return &Remote{Lab: labclient.New(url, token, &http.Client{})}
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

// Configure calls POST /lab/config.
func (r *Remote) Configure(ctx context.Context, change labclient.Config) error {
	_, err := call(ctx, func(ctx context.Context) (any, error) { return r.Lab.Configure(ctx, change) })
	return err
}

// Restart is not possible for a server this process did not start.
func (r *Remote) Restart(ctx context.Context) error {
	return errors.New("this server runs on its own: restart it where it runs")
}

// Close does nothing: the server is not ours.
func (r *Remote) Close() error { return nil }

// Subscribe reads GET /lab/events, reconnecting (with a short pause) when
// the stream breaks, until cancel is called or ctx ends. Events sent while
// the stream was down are missed; the state poll catches the executions
// among them (see dashboard.Side.ApplyState).
func (r *Remote) Subscribe(ctx context.Context) (<-chan events.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan events.Event, 256)
	go func() {
		defer close(out)
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
			r.Lab.Events(ctx, func(ev events.Event) bool {
				select {
				case out <- ev:
					return true
				case <-ctx.Done():
					return false
				}
			})
		}
	}()
	return out, cancel
}
