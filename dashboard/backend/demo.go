package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/stage"
)

// Stages are the stages the demo can run, and where their databases go.
type Stages struct {
	// DB is where each server gets a fresh database of its own, dropped
	// when it stops: a new database on the PostgreSQL cluster a
	// postgres:// URL names, or else a SQLite file in a temporary folder.
	DB string
	// Solutions are the reference solutions compiled into the lab command.
	Solutions map[int]stage.Factory
	// Build compiles the student's stages/stageN into a test binary and
	// returns its path; nil when the student's code cannot be run.
	Build func(ctx context.Context, n int) (string, error)
}

// Final is the highest stage with a solution.
func (s Stages) Final() int {
	n := 0
	for k := range s.Solutions {
		n = max(n, k)
	}
	return n
}

// Numbers are the stages with a solution, in order.
func (s Stages) Numbers() []int {
	var out []int
	for k := range s.Solutions {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Demo is the classroom demo (lab demo): two lab servers fed the same
// traffic through the same faults, each watched by a pump that sends its
// events and state polls to the dashboard. It has every control the
// dashboard knows: its traffic's, the stories' and the right side's.
type Demo struct {
	send    func(tea.Msg)
	stages  Stages
	dir     string
	traffic *Traffic
	ctx     context.Context
	cancel  context.CancelFunc
	unhook  func() bool // stops Start's ctx from cancelling ctx

	mu      sync.Mutex
	sides   [2]*watched
	profile int
	wg      sync.WaitGroup

	// scene lets a story play whole: a crash (the profile's or the c
	// key's) waits for the story under way to end, and a story waits for
	// the restart under way. A crash in the middle of a story would tell
	// of the crash, not of the story's idea, and would leave the
	// settings the story changed unrestored.
	scene sync.RWMutex
}

// Demo keeps every control: a method renamed or dropped would turn its
// keys off without a word.
var _ interface {
	dashboard.TrafficControls
	dashboard.StoryControls
	dashboard.RightControls
} = (*Demo)(nil)

// watched is one side's server and the goroutines watching it.
type watched struct {
	backend Backend
	choice  dashboard.Choice
	epoch   int
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// NewDemo returns a demo that has not started: its traffic exists (so
// that key presses can already change the rate or the profile), its
// servers do not (see Start).
func NewDemo(stages Stages) *Demo {
	d := &Demo{stages: stages, send: func(tea.Msg) {}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	urls := []func() string{d.urlOf(dashboard.Left), d.urlOf(dashboard.Right)}
	d.traffic = NewTraffic(urls, bank.Params{Seed: 7, Customers: 4, AccountsPerCustomer: 2, OpeningBalance: 10_000_000})
	return d
}

// Start starts both servers, resets them to the same population, starts
// watching them (sending messages to send) and starts the traffic, until
// ctx ends or Close. It returns an error if a server cannot start; the
// caller still calls Close.
func (d *Demo) Start(ctx context.Context, left, right dashboard.Choice, send func(tea.Msg)) error {
	dir, err := os.MkdirTemp("", "idemlab-demo-")
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.dir, d.send = dir, send
	// The demo runs on the context NewDemo made, which Close cancels;
	// ctx's end cancels it too.
	d.unhook = context.AfterFunc(ctx, d.cancel)
	d.mu.Unlock()
	ctx = d.ctx
	for i, c := range []dashboard.Choice{left, right} {
		if err := d.startSide(ctx, i, c, 1); err != nil {
			return err
		}
	}
	d.wg.Go(func() { d.traffic.Run(ctx) })
	d.wg.Go(func() { d.crashLoop(ctx) })
	return nil
}

func (d *Demo) urlOf(side int) func() string {
	return func() string {
		d.mu.Lock()
		w := d.sides[side]
		d.mu.Unlock()
		if w == nil {
			return "http://127.0.0.1:1"
		}
		return w.backend.URL()
	}
}

// startSide starts c on side, resets it and watches it.
func (d *Demo) startSide(ctx context.Context, side int, c dashboard.Choice, epoch int) error {
	d.send(dashboard.SideMsg{Side: side, Epoch: epoch, Title: c.String(), Status: "starting"})
	b, err := d.startBackend(ctx, side, c, epoch)
	if err != nil {
		return fmt.Errorf("start %s: %w", c, err)
	}
	w := &watched{backend: b, choice: c, epoch: epoch}
	wctx, stop := context.WithCancel(d.ctx)
	w.stop = stop
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		Watch(wctx, b, side, epoch, d.send)
	}()
	if err := b.Reset(ctx, d.traffic.Reset()); err != nil {
		stop()
		b.Close()
		return fmt.Errorf("reset %s: %w", c, err)
	}
	d.configure(ctx, b)
	d.mu.Lock()
	d.sides[side] = w
	d.mu.Unlock()
	d.send(dashboard.SideMsg{Side: side, Epoch: epoch, Title: c.String(), URL: b.URL(), Status: "running"})
	return nil
}

// startBackend starts c on a database of its own: the folder names the
// side as well as the epoch and the stage, since both sides start at
// epoch 1 and lab demo --stage 0 runs stage 0 on both. Named by epoch and
// stage alone, the two sides shared one SQLite file there: each op ran
// once per side on it, and each side counted the other's executions as
// its doubles.
func (d *Demo) startBackend(ctx context.Context, side int, c dashboard.Choice, epoch int) (Backend, error) {
	dir := filepath.Join(d.dir, fmt.Sprintf("side%d-epoch%d-%d", side, epoch, c.Stage))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !c.Yours {
		f, ok := d.stages.Solutions[c.Stage]
		if !ok {
			return nil, fmt.Errorf("no solution for stage %d in this build", c.Stage)
		}
		return StartLocal(ctx, f, dir, d.stages.DB)
	}
	if d.stages.Build == nil {
		return nil, errors.New("this build cannot run your code")
	}
	bin, err := d.stages.Build(ctx, c.Stage)
	if err != nil {
		return nil, err
	}
	return StartStudent(ctx, bin, dir, d.stages.DB)
}

// configure applies the profile's settings to a server.
func (d *Demo) configure(ctx context.Context, b Backend) error {
	p := d.traffic.Profile()
	return b.Configure(ctx, labclient.Config{Lease: 2 * time.Second}.WithCoreLatency(p.CoreLatency))
}

// Watch sends a server's events (in batches) and, twice a second, its
// state to send, tagged with side and epoch, until ctx ends.
func Watch(ctx context.Context, b Backend, side, epoch int, send func(tea.Msg)) {
	ch, cancel := b.Subscribe(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			polled := time.Now()
			st, err := b.State(ctx)
			if ctx.Err() != nil {
				return
			}
			send(dashboard.StateMsg{Side: side, Epoch: epoch, Polled: polled, State: st, Err: err})
		}
	})
	for {
		var batch []events.Event
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			batch = append(batch, ev)
		}
	more:
		for len(batch) < 2048 {
			select {
			case ev, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, ev)
			default:
				break more
			}
		}
		if batch[0].Replica > 0 {
			// Several replicas' streams arrive apart: in time order, a
			// retry one replica refused follows the original another
			// answered. Each stream is in order already.
			slices.SortStableFunc(batch, func(a, b events.Event) int { return a.Time.Compare(b.Time) })
		}
		send(dashboard.EventsMsg{Side: side, Epoch: epoch, Received: time.Now(), Events: batch})
	}
}

// crashLoop crashes and restarts both servers as the profile says.
func (d *Demo) crashLoop(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			every := d.traffic.Profile().CrashEvery
			if every == 0 || d.traffic.Paused() {
				last = now
				continue
			}
			if now.Sub(last) >= every {
				last = now
				d.crash(ctx, dashboard.Left, dashboard.Right)
			}
		}
	}
}

// bound returns ctx, cancelled too when the demo's own context is (Close,
// or Start's ctx ending): a key's work, which runs on the dashboard's
// context, ends with the demo instead of going on after it.
func (d *Demo) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(d.ctx, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

func (d *Demo) side(i int) *watched {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sides[i]
}

// crash restarts the sides' servers at once, once no story is playing,
// and returns the first error.
func (d *Demo) crash(ctx context.Context, sides ...int) error {
	d.scene.Lock()
	defer d.scene.Unlock()
	ctx, stop := d.bound(ctx)
	defer stop()
	errs := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, side := range sides {
		wg.Go(func() { errs[i] = d.restart(ctx, side) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restart crashes one side's server and starts it again on its database.
func (d *Demo) restart(ctx context.Context, side int) error {
	w := d.side(side)
	if w == nil {
		return errors.New("the server is not running yet")
	}
	d.send(dashboard.SideMsg{Side: side, Epoch: w.epoch, Title: w.choice.String(), URL: w.backend.URL(), Status: "crashed", Note: crashNote(w.choice)})
	if err := w.backend.Restart(ctx); err != nil {
		d.send(dashboard.SideMsg{Side: side, Epoch: w.epoch, Title: w.choice.String(), Status: "down"})
		return err
	}
	d.configure(ctx, w.backend)
	d.send(dashboard.SideMsg{Side: side, Epoch: w.epoch, Title: w.choice.String(), URL: w.backend.URL(), Status: "running"})
	return nil
}

// crashNote says what a crash does to the requests under way. A stage
// run in this process finishes them and loses their answers, the moment
// a stored answer is for; the student's code, a child process, is killed
// with -9 wherever it is, which is almost never between a commit and its
// answer: the request under way dies uncommitted, and its key, claimed,
// answers 409 until the lease lets a retry run it. So there is seldom
// anything to replay.
func crashNote(c dashboard.Choice) string {
	if c.Yours {
		return "killed -9: requests under way die uncommitted; their keys answer 409 until the lease ends"
	}
	return "crashed: requests under way finish, their answers are lost"
}

// SetPaused pauses or resumes the traffic.
func (d *Demo) SetPaused(p bool) { d.traffic.SetPaused(p) }

// StepRate changes the traffic rate by one step and returns it.
func (d *Demo) StepRate(delta int) int { return d.traffic.StepRate(delta) }

// HeldBack is how many operations the traffic did not start because the
// servers were behind.
func (d *Demo) HeldBack() int64 { return d.traffic.HeldBack() }

// Traffic is the demo's traffic.
func (d *Demo) Traffic() *Traffic { return d.traffic }

// NextProfile moves to the next fault profile, applies its settings to
// both servers and returns what the screen shows of it.
func (d *Demo) NextProfile(ctx context.Context) dashboard.Profile {
	d.mu.Lock()
	next := (d.profile + 1) % len(Profiles)
	d.mu.Unlock()
	return d.SetProfile(ctx, next).Profile
}

// SetProfile chooses fault profile i and applies its settings to both
// servers (if they run yet; Start applies it otherwise).
func (d *Demo) SetProfile(ctx context.Context, i int) Profile {
	d.mu.Lock()
	d.profile = i % len(Profiles)
	d.traffic.SetProfile(d.profile)
	sides := d.sides
	d.mu.Unlock()
	for _, w := range sides {
		if w != nil {
			d.configure(ctx, w.backend)
		}
	}
	return d.traffic.Profile()
}

// Burst fires simultaneous duplicates at both servers.
func (d *Demo) Burst(ctx context.Context) string { return d.traffic.Burst(ctx) }

// Edited fires a clerk's edited resubmission at both servers.
func (d *Demo) Edited(ctx context.Context) string { return d.traffic.Edited(ctx) }

// Clerks plays the two clerks' story on both servers (Traffic.Clerks).
func (d *Demo) Clerks(ctx context.Context) dashboard.Story {
	d.scene.RLock()
	defer d.scene.RUnlock()
	ctx, stop := d.bound(ctx)
	defer stop()
	return d.traffic.Clerks(ctx, d.backends())
}

// Invoice plays the invoice story on both servers (Traffic.Invoice).
func (d *Demo) Invoice(ctx context.Context) dashboard.Story {
	d.scene.RLock()
	defer d.scene.RUnlock()
	ctx, stop := d.bound(ctx)
	defer stop()
	return d.traffic.Invoice(ctx, d.backends())
}

// backends are the sides' servers, nil for a side not running.
func (d *Demo) backends() []Backend {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Backend, len(d.sides))
	for i, w := range d.sides {
		if w != nil {
			out[i] = w.backend
		}
	}
	return out
}

// CrashRight crashes the right server and restarts it on its database.
func (d *Demo) CrashRight(ctx context.Context) error { return d.crash(ctx, dashboard.Right) }

// SwitchRight runs c on the right. Both sides start again from a fresh
// population, so that the comparison stays fair.
func (d *Demo) SwitchRight(ctx context.Context, c dashboard.Choice) error {
	if _, ok := d.stages.Solutions[c.Stage]; !ok && !c.Yours {
		return fmt.Errorf("this build has no solution for stage %d", c.Stage)
	}
	// A switch, like a crash, waits for the story under way: it would
	// close the server the story is telling of.
	d.scene.Lock()
	defer d.scene.Unlock()
	// The build of the student's stage (a go test -c, seconds long) ends
	// with the demo: quit, and it is stopped, not left compiling.
	ctx, stop := d.bound(ctx)
	defer stop()
	paused := d.traffic.Paused()
	d.traffic.SetPaused(true)
	defer d.traffic.SetPaused(paused)
	old := d.side(dashboard.Right)
	if old == nil {
		return errors.New("the demo has not started yet")
	}
	d.mu.Lock()
	d.sides[dashboard.Right] = nil
	d.mu.Unlock()
	old.stop()
	old.done.Wait()
	old.backend.Close()
	err := d.startSide(ctx, dashboard.Right, c, old.epoch+1)
	if err != nil {
		// Put back what ran before, so the demo goes on. It starts from
		// fresh accounts, so the left side does too.
		if err2 := d.startSide(ctx, dashboard.Right, old.choice, old.epoch+2); err2 != nil {
			return errors.Join(err, err2)
		}
	}
	left := d.side(dashboard.Left)
	if left == nil {
		return errors.Join(err, errors.New("the left server is not running"))
	}
	return errors.Join(err, left.backend.Reset(ctx, d.traffic.Reset()))
}

// Close stops the traffic and both servers and removes their files.
func (d *Demo) Close() error {
	d.mu.Lock()
	if d.unhook != nil {
		d.unhook()
	}
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	// A key's work under way (a switch, a crash, a story) runs on a
	// context bound to the demo's (bound): cancelled, it ends, and a
	// server it started is closed with the others.
	d.scene.Lock()
	defer d.scene.Unlock()
	var errs []error
	for i := range d.sides {
		if w := d.side(i); w != nil {
			w.stop()
			w.done.Wait()
			errs = append(errs, w.backend.Close())
		}
	}
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	return errors.Join(errs...)
}
