package grader

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
	"idemlab/kit/labclient"
	"idemlab/kit/labdb"
)

// OnChild returns a T for the same check against a server in a child
// process, which the check may crash, Kill and Restart: the check's own
// target if it is one, or else a child started from this test binary on a
// fresh database, stopped when the check ends.
func (t *T) OnChild() (*T, error) {
	if t.target.Child != nil {
		return t, nil
	}
	if !targets.Servable(t.subject.Name) {
		return nil, targets.ErrNoChild
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this test binary: %w", err)
	}
	target, stop, err := targets.ChildProcess(self, labdb.TestTarget())(t.ctx, t.subject)
	if err != nil {
		return nil, err
	}
	t.onCleanup(stop)
	return t.on(target), nil
}

// OnReplicas returns a T for the same check against n server processes of
// the subject on one fresh database, stopped when the check ends; a
// Request's Replica picks the process. They run the binary of the check's
// own child process if it has one (lab audit's), or else this test
// binary.
func (t *T) OnReplicas(n int) (*T, error) {
	binary, cluster := "", labdb.TestTarget()
	if c := t.target.Child; c != nil {
		binary = c.Binary
		if labdb.EngineOfTarget(c.DB) == labdb.SQLite {
			cluster = ":memory:"
		}
	} else {
		if !targets.Servable(t.subject.Name) {
			return nil, targets.ErrNoReplicas
		}
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this test binary: %w", err)
		}
		binary = self
	}
	target, stop, err := targets.ReplicaProcesses(binary, cluster, n)(t.ctx, t.subject)
	if err != nil {
		return nil, err
	}
	t.onCleanup(stop)
	return t.on(target), nil
}

// twoServers is OnReplicas(2) with a fresh scenario on their one
// database (two customers, two accounts of opening won each): the start
// of every check that runs the server as two processes.
func (t *T) twoServers(opening int64) (*T, Scenario, error) {
	rt, err := t.OnReplicas(2)
	if err != nil {
		return nil, Scenario{}, err
	}
	s, err := rt.Scenario(2, opening)
	return rt, s, err
}

// on returns a T for the same check, drawing from the same random source,
// against another target.
func (t *T) on(target *targets.Target) *T {
	on := &T{ctx: t.ctx, target: target, subject: t.subject, seed: t.seed, rng: t.rng, cleanups: t.cleanups, core: t.core, differences: t.differences, history: t.history, heldReads: &heldReads{}}
	if target != t.target {
		// A server of its own: its events join the same history, those of
		// each of its processes, which run requests of their own. Without
		// them the timeline still has every request.
		on.history.Watch(on.ctx, on.Lab(), on.firstProcess())
		for i, lab := range on.replicaLabs() {
			on.history.Watch(on.ctx, lab, i+2)
		}
	}
	return on
}

// firstProcess is the number the history gives the target's first server
// process: 1 when it has replicas, and 0 when it runs alone.
func (t *T) firstProcess() int {
	if len(t.target.Replicas) > 0 {
		return 1
	}
	return 0
}

// kill ends the target's child process with kill -9, and notes it in the
// check's history.
func (t *T) kill() {
	t.target.Child.Kill()
	t.history.Lab(timeline.Crash, "kill -9")
}

// onCleanup registers fn to run when the check ends.
func (t *T) onCleanup(fn func()) {
	t.cleanups.mu.Lock()
	defer t.cleanups.mu.Unlock()
	t.cleanups.fns = append(t.cleanups.fns, fn)
}

// Restart starts the target's child process again on its database, after
// a crash fault or a Kill, and drops the client's connections to the
// process that died. The lab clock survives (it lives in the database);
// the config does not: a restarted server starts with the defaults.
func (t *T) Restart() error {
	c := t.target.Child
	if c == nil {
		return targets.ErrNoChild
	}
	c.Kill()
	t.target.Client.CloseIdleConnections()
	if err := c.Start(t.ctx); err != nil {
		return fmt.Errorf("restart the server on %s: %w", c.DB, err)
	}
	t.target.URL = c.URL
	t.history.Lab(timeline.Restart, "the server process started again on its database")
	t.history.Watch(t.ctx, t.Lab(), t.firstProcess())
	t.foundKeys()
	return nil
}

// foundKeys notes in the history the key rows a server process started
// again finds: the process that died took with it the changes it had
// committed and not yet reported (a claim made just before a crash
// inside the business write), and the new one reports only what it hears
// change. Without them, the retry that takes such a key over is the first
// the history hears of its row, and is drawn as its claim. A process that
// does not answer within a second is passed over: the rows are for the
// picture, and the check goes on without them.
func (t *T) foundKeys() {
	ctx, cancel := context.WithTimeout(t.ctx, time.Second)
	defer cancel()
	asked := time.Now()
	if st, err := t.Lab().State(ctx); err == nil {
		t.history.Found(asked, st.Keys)
	}
}

// Crashed waits up to d for the target's child process to exit on its
// own, as an armed crash fault makes it, and reports whether it did. Its
// exit status is no error: a crash is what the check asked for.
func (t *T) Crashed(d time.Duration) (bool, error) {
	c := t.target.Child
	if c == nil {
		return false, targets.ErrNoChild
	}
	exited, _ := c.WaitExit(d)
	if exited {
		t.history.Lab(timeline.Crash, "the server process exited")
	}
	return exited, nil
}

// cleanupList is what a check leaves to do when it ends, shared by the
// T of a check and the Ts it makes for other targets.
type cleanupList struct {
	mu  sync.Mutex
	fns []func()
}

// run runs the cleanups, the last registered first.
func (l *cleanupList) run() {
	l.mu.Lock()
	fns := l.fns
	l.fns = nil
	l.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// pausable carries requests to a child process that a check restarts
// while a day is replayed against it. Once the child is seen down, new
// requests wait for it to be back instead of failing at once: a client
// whose connection attempt fails retries after a backoff, and a driver
// that retried without really waiting would burn its whole retry horizon
// in the moment a restart takes. Requests already in flight when the
// process dies fail, as they must.
type pausable struct {
	base http.RoundTripper
	mu   sync.Mutex
	up   chan struct{}
}

func newPausable(base http.RoundTripper) *pausable {
	up := make(chan struct{})
	close(up)
	return &pausable{base: base, up: up}
}

// RoundTrip sends req once the server is up. A refused connection means
// the server is down: the attempt fails, and the gate closes until the
// restart reopens it.
func (p *pausable) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	select {
	case <-up:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := p.base.RoundTrip(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		p.pause()
	}
	return resp, err
}

// pause holds new requests until resume.
func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.up:
		p.up = make(chan struct{})
	default:
	}
}

// resume lets held and new requests through.
func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.up:
	default:
		close(p.up)
	}
}

// killUnderLoad stands for a kill -9 among the crash points of a day.
const killUnderLoad = "kill -9"

// armAgainOnEOF arms point once. Arming sets a count, so sending it again
// is safe: if the request dies on the way (a kept-alive connection the
// server closed as it was reused ends in EOF), it is sent again, up to
// three times, on a fresh connection. An answer from the server, a
// refusal included, is final. So is the child's exit: the arm arrived and
// its crash fired on a request of the day before the arm's own answer was
// sent, which the day's load makes happen now and then.
func (t *T) armAgainOnEOF(point string) error {
	var err error
	for range 3 {
		err = t.Arm(point, 1)
		var refused *labclient.Error
		if err == nil || errors.As(err, &refused) {
			return err
		}
		if exited, _ := t.target.Child.WaitExit(time.Second); exited {
			return nil
		}
		t.target.Client.CloseIdleConnections()
	}
	return err
}

// crashLog is what crashDuring did.
type crashLog struct {
	fired []string
	err   error
}

// crashDuring crashes the target's child process once for each of
// crashes, while a day is replayed against it, and restarts it on its
// database each time. A crash point is armed and fires on the next
// request that reaches it; a kill -9 lands once a drawn number of further
// operations have executed. It waits for the day's reset (its first
// execution) before the first crash, holds the day's new requests at gate
// while the server is down, and stops when stop closes.
func (t *T) crashDuring(stop <-chan struct{}, gate *pausable, crashes []string) crashLog {
	var log crashLog
	defer gate.resume()
	executed := func() (int64, error) {
		st, err := t.State()
		var n int64
		for _, c := range st.Executions {
			n += c
		}
		return n, err
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	if _, err := t.WaitFor(time.Minute, func() (bool, error) {
		n, err := executed()
		return n > 0 || stopped(), err
	}); err != nil {
		log.err = err
		return log
	}
	for _, point := range crashes {
		if stopped() {
			return log
		}
		if point == killUnderLoad {
			before, err := executed()
			if err != nil {
				log.err = err
				return log
			}
			more := int64(1 + t.Rand().IntN(8))
			if _, err := t.WaitFor(time.Minute, func() (bool, error) {
				n, err := executed()
				return n >= before+more || stopped(), err
			}); err != nil {
				log.err = err
				return log
			}
			if stopped() {
				return log
			}
			gate.pause()
			t.kill()
		} else {
			if err := t.armAgainOnEOF(point); err != nil {
				log.err = fmt.Errorf("arm %s after the crashes %v: %w", point, log.fired, err)
				return log
			}
			if !t.target.Child.AwaitExit(stop) {
				t.Arm(point, 0)
				return log
			}
			gate.pause()
		}
		log.fired = append(log.fired, point)
		// Restart also drops the client's idle connections to the dead
		// process: the new one listens on the same port, and a request
		// sent down an old connection would die with EOF.
		err := t.Restart()
		if err == nil {
			err = t.Configure(labclient.Config{Lease: replay.DayLease})
		}
		gate.resume()
		if err != nil {
			log.err = err
			return log
		}
	}
	return log
}
