package backend

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"idemlab/grader/targets"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
)

// Student is the student's stage running as a child process: its test
// binary, which serves the stage when IDEMLAB_SERVE is set (gradertest.Main).
// It is never compiled into the lab command, so a half-finished stage
// breaks only itself.
//
// A restart kills the child (kill -9) and starts another on the same
// database and port. The event stream of each run is opened before any
// client can reach it (the URL is held while the child restarts), so the
// events of the first answers after a crash (the retries the crash caused)
// are never missed. What a killed child had not streamed yet is lost: the
// state poll finds those executions (dashboard.Counts.Unseen).
type Student struct {
	*Remote

	// mu is held across a restart: until the new child's events stream,
	// URL waits, and so does every client of the child.
	mu     sync.Mutex
	child  *targets.Child
	hc     *http.Client
	stop   context.CancelFunc // ends the streams, at Close
	ctx    context.Context
	first  *run
	last   *run
	closed bool
}

// run is one life of the child, between kills.
type run struct {
	events *labclient.Stream
	next   chan *run // the run after it, or closed at Close
}

// StartStudent starts a stage's test binary as a lab server on a fresh
// database: a file in dir, or a new database on the PostgreSQL cluster the
// postgres:// URL cluster names (targets.StartChild), dropped at Close. It
// returns an error if the child does not start or its event stream does
// not open.
func StartStudent(ctx context.Context, bin, dir, cluster string) (*Student, error) {
	child, err := targets.StartChild(ctx, bin, dir, cluster)
	if err != nil {
		return nil, err
	}
	s := &Student{child: child, hc: &http.Client{}}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.Remote = &Remote{Lab: &labclient.Client{Base: s.url, Token: child.Admin, HTTP: s.hc}}
	r, err := s.open()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.first, s.last = r, r
	return s, nil
}

// open opens the event stream of the child of the moment, which lives
// until the child dies or Close. The caller holds mu or is StartStudent.
func (s *Student) open() (*run, error) {
	stream, err := labclient.New(s.child.URL, s.child.Admin, s.hc).OpenEvents(s.ctx)
	if err != nil {
		return nil, err
	}
	return &run{events: stream, next: make(chan *run, 1)}, nil
}

func (s *Student) url() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.child.URL
}

// Subscribe streams the events of every run of the child, from its start,
// across restarts, until cancel is called, ctx ends or Close. It may be
// called only once.
func (s *Student) Subscribe(ctx context.Context) (<-chan events.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan events.Event, 256)
	forward := func(ev events.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	go func() {
		defer close(out)
		for r := s.first; ; {
			// A stream blocks until its next event: cancelling closes it.
			// The loop moves r on to the next run; the callback closes this
			// run's stream, whatever r holds by the time it fires.
			stream := r.events
			unhook := context.AfterFunc(ctx, func() { stream.Close() })
			r.events.Read(forward)
			unhook()
			var ok bool
			select {
			case r, ok = <-r.next:
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, cancel
}

// Restart kills the child (kill -9), starts it again on its database and
// opens its event stream before anyone else can reach it.
func (s *Student) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the server was closed")
	}
	s.child.Kill()
	if err := s.child.Start(ctx); err != nil {
		return err
	}
	r, err := s.open()
	if err != nil {
		return err
	}
	s.last.next <- r
	s.last = r
	return nil
}

// Close kills the child, drops its database and ends its event streams.
func (s *Student) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop()
	s.child.Kill()
	s.child.DropDB()
	if !s.closed && s.last != nil {
		close(s.last.next)
	}
	s.closed = true
	return nil
}
