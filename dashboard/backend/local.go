// Package backend is what the dashboard watches and the demo drives: lab
// servers (one in this process, one reached over HTTP, the student's own
// run as a child process), the demo's traffic and fault profiles, and the
// watchers that turn a server's events and state into the messages the
// dashboard draws. The dashboard package draws; this one does the I/O.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/stage"
)

// Backend is one lab server the dashboard watches and the demo drives.
type Backend interface {
	// URL is where clients send requests.
	URL() string
	// Subscribe streams the server's events until cancel is called or
	// the server goes away, when the channel closes.
	Subscribe(ctx context.Context) (ch <-chan events.Event, cancel func())
	// State reads GET /lab/state.
	State(ctx context.Context) (labctl.State, error)
	// Reset gives the server a fresh population (POST /lab/reset).
	Reset(ctx context.Context, p bank.Params) error
	// Arm arms a fault point (POST /lab/faults).
	Arm(ctx context.Context, point string, count int64) error
	// Configure changes settings such as core_latency (POST /lab/config).
	Configure(ctx context.Context, change labclient.Config) error
	// Restart crashes the server and starts it again on the same
	// database: responses in flight are never sent.
	Restart(ctx context.Context) error
	// Close stops the server.
	Close() error
}

// Local is a lab server running in this process on a database of its own,
// served on a loopback port so that its clients speak real HTTP. A restart
// keeps the port and the database, as a supervisor restarting a crashed
// process would.
type Local struct {
	factory stage.Factory
	db      string
	dropDB  func(context.Context) error
	ln      net.Listener
	hs      *http.Server

	mu    sync.Mutex
	gen   *generation
	first *generation

	// life is held across a restart and a close: the demo's crash timer,
	// the crash key and a stage switch may end the same generation at
	// once, and a generation ends only once.
	life   sync.Mutex
	closed bool
	down   bool // a restart failed: the last generation has ended, none follows

	closeOnce sync.Once
	closeErr  error
}

// generation is one life of the server, between crashes.
type generation struct {
	srv *server.Server
	// events is subscribed before the generation serves a request, so
	// that nothing it does is missed across a restart.
	events <-chan events.Event
	unsub  func()

	mu       sync.RWMutex // orders joining the requests in flight and crashing
	crashed  atomic.Bool
	inflight sync.WaitGroup
	done     chan struct{}    // closed once its last answer is in
	next     chan *generation // the generation after it, or closed at Close
}

// StartLocal starts a stage on a fresh database: a file in dir, or a new
// database on the PostgreSQL cluster the postgres:// URL cluster names
// (labdb.Fresh), dropped at Close.
func StartLocal(ctx context.Context, factory stage.Factory, dir, cluster string) (*Local, error) {
	db, drop, err := labdb.Fresh(ctx, cluster, dir)
	if err != nil {
		return nil, err
	}
	l := &Local{factory: factory, db: db, dropDB: drop}
	gen, err := l.open(ctx)
	if err != nil {
		drop(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gen.unsub()
		gen.srv.Close()
		drop(ctx)
		return nil, err
	}
	l.gen, l.first, l.ln = gen, gen, ln
	l.hs = server.NewHTTPServer(http.HandlerFunc(l.serve))
	go l.hs.Serve(ln)
	return l, nil
}

func (l *Local) open(ctx context.Context) (*generation, error) {
	srv, err := server.New(ctx, server.Options{
		DB: l.db, Stage: l.factory, Lab: true,
		// A crash fault aborts the request under it; the process lives on.
		Crash: func(string) {},
	})
	if err != nil {
		return nil, err
	}
	ch, unsub := srv.Events().Subscribe(16384)
	return &generation{srv: srv, events: ch, unsub: unsub,
		done: make(chan struct{}), next: make(chan *generation, 1)}, nil
}

func (l *Local) current() *generation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// serve passes a request to the server of the moment. A request that was
// running when its server crashed gets no answer: its connection is cut,
// as it would be if the process had died.
func (l *Local) serve(w http.ResponseWriter, r *http.Request) {
	gen := l.current()
	gen.mu.RLock()
	if gen.crashed.Load() {
		gen.mu.RUnlock()
		panic(http.ErrAbortHandler)
	}
	gen.inflight.Add(1)
	gen.mu.RUnlock()
	func() {
		defer gen.inflight.Done()
		gen.srv.Handler().ServeHTTP(&crashWriter{w: w, gen: gen}, r)
	}()
	if gen.crashed.Load() {
		panic(http.ErrAbortHandler)
	}
}

// crashWriter discards what a crashed generation writes.
type crashWriter struct {
	w   http.ResponseWriter
	gen *generation
}

func (c *crashWriter) Header() http.Header { return c.w.Header() }

func (c *crashWriter) WriteHeader(status int) {
	if !c.gen.crashed.Load() {
		c.w.WriteHeader(status)
	}
}

func (c *crashWriter) Write(p []byte) (int, error) {
	if c.gen.crashed.Load() {
		return len(p), nil
	}
	return c.w.Write(p)
}

// Flush lets the event stream through while the generation lives.
func (c *crashWriter) Flush() {
	if f, ok := c.w.(http.Flusher); ok && !c.gen.crashed.Load() {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the connection's writer.
func (c *crashWriter) Unwrap() http.ResponseWriter { return c.w }

// URL is the server's base URL.
func (l *Local) URL() string { return "http://" + l.ln.Addr().String() }

// Server is the server of the moment (it changes at each restart).
func (l *Local) Server() *server.Server { return l.current().srv }

// Subscribe streams the events of every generation of the server, from
// its start, across restarts, until Close. It may be called only once.
func (l *Local) Subscribe(ctx context.Context) (<-chan events.Event, func()) {
	out := make(chan events.Event, 256)
	stop := make(chan struct{})
	var once sync.Once
	forward := func(ev events.Event) bool {
		select {
		case out <- ev:
			return true
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(out)
		for gen := l.first; gen != nil; {
			if !drainGeneration(gen, forward, stop, ctx.Done()) {
				return
			}
			var ok bool
			select {
			case gen, ok = <-gen.next:
				if !ok {
					return
				}
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() { once.Do(func() { close(stop) }) }
}

// drainGeneration forwards a generation's events until it is done and its
// last events are out. It reports false if the subscriber went away.
func drainGeneration(gen *generation, forward func(events.Event) bool, stop, cancelled <-chan struct{}) bool {
	for {
		select {
		case ev := <-gen.events:
			if !forward(ev) {
				return false
			}
		case <-gen.done:
			for {
				select {
				case ev := <-gen.events:
					if !forward(ev) {
						return false
					}
				default:
					gen.unsub()
					return true
				}
			}
		case <-stop:
			return false
		case <-cancelled:
			return false
		}
	}
}

// State reads the lab state.
func (l *Local) State(ctx context.Context) (labctl.State, error) {
	return l.Server().Lab().State(ctx)
}

// Reset repopulates the bank.
func (l *Local) Reset(ctx context.Context, p bank.Params) error {
	_, _, err := l.Server().Lab().Reset(ctx, p)
	return err
}

// Arm arms a fault point.
func (l *Local) Arm(ctx context.Context, point string, count int64) error {
	return l.Server().Lab().Faults.Arm(point, count)
}

// Configure changes lab settings.
func (l *Local) Configure(ctx context.Context, change labclient.Config) error {
	body, err := json.Marshal(change.Wire())
	if err != nil {
		return err
	}
	_, err = l.Server().Lab().Settings.Update(body)
	return err
}

// Restart crashes the server: requests in flight finish their work but
// their answers are never sent. Then it opens the same database file
// again. Settings go back to their defaults, as after a real restart.
// It returns an error if the server was closed, or if it cannot start
// again.
func (l *Local) Restart(ctx context.Context) error {
	l.life.Lock()
	defer l.life.Unlock()
	if l.closed {
		return errors.New("the server was closed")
	}
	if l.down {
		return errors.New("the server is down: a restart failed")
	}
	gen := l.current()
	l.crash(gen)
	if err := gen.srv.Close(); err != nil {
		l.down = true
		close(gen.next)
		return fmt.Errorf("close crashed server: %w", err)
	}
	next, err := l.open(ctx)
	if err != nil {
		l.down = true
		close(gen.next)
		return fmt.Errorf("restart: %w", err)
	}
	l.mu.Lock()
	l.gen = next
	l.mu.Unlock()
	gen.next <- next
	return nil
}

// crash stops gen from answering and waits for its requests in flight.
func (l *Local) crash(gen *generation) {
	gen.mu.Lock()
	gen.crashed.Store(true)
	gen.mu.Unlock()
	gen.inflight.Wait()
	close(gen.done)
}

// Close stops the server and its listener. Closing again does nothing
// and returns the first Close's error.
func (l *Local) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Local) close() error {
	l.life.Lock()
	defer l.life.Unlock()
	l.closed = true
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := l.hs.Shutdown(shutdown)
	if errors.Is(err, context.DeadlineExceeded) {
		err = l.hs.Close()
	}
	if !l.down {
		gen := l.current()
		l.crash(gen)
		close(gen.next)
		err = errors.Join(err, gen.srv.Close())
	}
	return errors.Join(err, l.dropDB(context.Background()))
}
