package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/idemkey"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage1"
	"idemlab/solutions/stage6"
)

// patience is how long the demo's tests wait for what they expect before
// they give up. It is generous: under the race detector, on a machine
// running other tests, the servers run many times slower, and an
// operation may retry for several seconds. A passing test never waits it
// out.
const patience = time.Minute

func transfer(t *testing.T, url string, c bank.Customer, key, op string) int {
	t.Helper()
	body := `{"from":"` + c.Accounts[0] + `","to":"` + c.Accounts[1] + `","amount":1000,"metadata":{"op":"` + op + `"}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/transfers", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set(idemkey.Header, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func startLocal(t *testing.T, f stage.Factory) *Local {
	t.Helper()
	l, err := StartLocal(t.Context(), f, t.TempDir(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// restartKeepsTheDatabaseAndTheStream sends a transfer to b, restarts
// it, and retries: the retry must be answered from the same database
// (executed once, the answer replayed), and the replay must show on the
// stream subscribed before the restart.
func restartKeepsTheDatabaseAndTheStream(t *testing.T, b Backend) {
	t.Helper()
	ch, cancel := b.Subscribe(t.Context())
	defer cancel()
	p := bank.DefaultParams()
	if err := b.Reset(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	c := bank.Population(p)[0]
	if s := transfer(t, b.URL(), c, "k-1", "op-1"); s != 201 {
		t.Fatalf("transfer: %d", s)
	}
	if err := b.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := transfer(t, b.URL(), c, "k-1", "op-1"); s != 201 {
		t.Fatalf("retry after the restart: %d", s)
	}
	st, err := b.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Executions["op-1"] != 1 {
		t.Fatalf("op-1 executed %d times across the restart, want 1", st.Executions["op-1"])
	}
	var kinds []string
	for replayed := false; !replayed; {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended; got %v", kinds)
			}
			kinds = append(kinds, ev.Kind)
			replayed = ev.Kind == events.KindRequest && bytes.Contains(ev.Data, []byte(`"replayed":true`))
		case <-time.After(patience):
			t.Fatalf("no event of the retry after the restart; got %v", kinds)
		}
	}
}

// TestLocal_RestartKeepsTheDatabaseAndTheStream catches a restart that
// opens a fresh database (the retry executes again) and a stream that
// stops at the restart.
func TestLocal_RestartKeepsTheDatabaseAndTheStream(t *testing.T) {
	restartKeepsTheDatabaseAndTheStream(t, startLocal(t, stage6.New))
}

func TestRemote_ReadsWhatAnyLabServerServes(t *testing.T) {
	l := startLocal(t, stage1.New)
	r := NewRemote(l.Server().AdminToken(), l.URL()+"/")
	ch, cancel := r.Subscribe(t.Context())
	defer cancel()
	// The stream is up once a reset made after subscribing shows on it.
	p := bank.DefaultParams()
	deadline := time.After(patience)
	for got := false; !got; {
		if err := r.Reset(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			got = ev.Kind == events.KindReset
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no reset event on the SSE stream")
		}
	}
	if err := r.Configure(t.Context(), labclient.Config{CoreLatency: 5 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := r.Arm(t.Context(), "fail-in-transfer", 1); err != nil {
		t.Fatal(err)
	}
	st, err := r.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Accounts) != p.Customers*p.AccountsPerCustomer || st.Config.CoreLatency != "5ms" || len(st.Faults) != 1 {
		t.Errorf("state = %d accounts, core latency %s, faults %v", len(st.Accounts), st.Config.CoreLatency, st.Faults)
	}
	if err := r.Restart(t.Context()); err == nil {
		t.Error("a remote server restarted from here")
	}
}

// TestRemote_ReplicasSayWhichAnswered: of two replicas watched as one,
// every event says which replica sent it, so a request answered by the
// second shows as the second's, and a request event reaches the merged
// stream from each. A merge that read one replica only, or did not mark
// the events, fails.
func TestRemote_ReplicasSayWhichAnswered(t *testing.T) {
	ls := []*Local{startLocal(t, stage1.New), startLocal(t, stage1.New)}
	r := &Remote{}
	for _, l := range ls {
		r.Replicas = append(r.Replicas, labclient.New(l.URL(), l.Server().AdminToken(), &http.Client{}))
	}
	r.Lab = r.Replicas[0]
	ch, cancel := r.Subscribe(t.Context())
	defer cancel()
	p := bank.DefaultParams()
	c := bank.Population(p)[0]
	// Each replica's stream is up once a reset made after subscribing
	// shows on it; then a transfer to each must come back marked.
	for i, l := range ls {
		replica := i + 1
		deadline := time.After(patience)
		for up := false; !up; {
			if _, err := r.Replicas[i].Reset(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-ch:
				up = ev.Kind == events.KindReset && ev.Replica == replica
			case <-time.After(200 * time.Millisecond):
			case <-deadline:
				t.Fatalf("no reset event from replica %d", replica)
			}
		}
		if s := transfer(t, l.URL(), c, "k-1", "op-1"); s != 201 {
			t.Fatalf("transfer to replica %d: %d", replica, s)
		}
		for answered := false; !answered; {
			select {
			case ev := <-ch:
				if ev.Kind == events.KindRequest {
					if ev.Replica != replica {
						t.Fatalf("the request replica %d answered came as replica %d's", replica, ev.Replica)
					}
					answered = true
				}
			case <-deadline:
				t.Fatalf("no request event from replica %d", replica)
			}
		}
	}
}

// collector plays the program: it feeds the demo's messages to a model.
type collector struct {
	msgs  chan tea.Msg
	m     dashboard.Model
	polls [2]int // state polls applied, per side
}

// newCollector returns a collector whose model shows left and right; it
// only draws what the demo sends (no controls).
func newCollector(left, right dashboard.Choice) *collector {
	m := dashboard.NewDemo(context.Background(), nil, nil, left, right, Rates[DefaultRate], Profiles[0].Profile, time.Now())
	return &collector{msgs: make(chan tea.Msg, 4096), m: m}
}

func (c *collector) send(msg tea.Msg) { c.msgs <- msg }

// apply feeds one message to the model.
func (c *collector) apply(msg tea.Msg) {
	if st, ok := msg.(dashboard.StateMsg); ok && st.Err == nil {
		c.polls[st.Side]++
	}
	next, _ := c.m.Update(msg)
	c.m = next.(dashboard.Model)
}

// drain applies messages until none of the operations of the demo's
// traffic is under way (Traffic.Drain).
func (c *collector) drain(t *testing.T, d *Demo) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- d.Traffic().Drain(ctx) }()
	for {
		select {
		case msg := <-c.msgs:
			c.apply(msg)
		case err := <-drained:
			if err != nil {
				t.Fatalf("gave up after %v waiting for the operations under way: %v", patience, err)
			}
			return
		}
	}
}

// until applies messages until cond holds of the model.
func (c *collector) until(t *testing.T, what string, cond func(m dashboard.Model) bool) {
	t.Helper()
	deadline := time.After(patience)
	for !cond(c.m) {
		select {
		case msg := <-c.msgs:
			c.apply(msg)
		case <-deadline:
			t.Fatalf("gave up after %v waiting for %s; left %+v right %+v", patience, what,
				c.m.Side(dashboard.Left).Counts, c.m.Side(dashboard.Right).Counts)
		}
	}
}

func TestDemo_TheNaiveSidePaysTwiceAndTheFinalSolutionDoesNot(t *testing.T) {
	if testing.Short() {
		t.Skip("drives two servers over HTTP")
	}
	left, right := dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 6}
	col := newCollector(left, right)
	stages := Stages{Solutions: map[int]stage.Factory{0: stage0.New, 1: stage1.New, 6: stage6.New}}
	ctx, cancel := context.WithCancel(t.Context())
	d := NewDemo(stages)
	defer func() { cancel(); d.Close() }()
	if err := d.Start(ctx, left, right, col.send); err != nil {
		t.Fatal(err)
	}
	// 5 ops/s, well below what both servers serve under the race
	// detector on a loaded machine. At 20 ops/s they fell behind there:
	// requests queued for the database longer than the client's timeout,
	// their retries queued behind them, and in a minute the naive side
	// had executed too few operations to double three.
	if got := d.StepRate(-1); got != 5 {
		t.Fatalf("rate %d ops/s, want 5", got)
	}
	col.until(t, "doubles on the left", func(m dashboard.Model) bool {
		return m.Side(dashboard.Left).Counts.Doubles >= 3 && m.Side(dashboard.Right).Counts.Requests >= 50
	})
	d.SetPaused(true)
	col.drain(t, d)
	polled := col.polls[dashboard.Right]
	col.until(t, "two polls of the right side after the traffic stopped", func(m dashboard.Model) bool {
		return col.polls[dashboard.Right] >= polled+2
	})
	r := col.m.Side(dashboard.Right).Counts
	if r.Doubles != 0 || r.Lost != 0 {
		t.Errorf("the final solution: %d doubles, %d lost", r.Doubles, r.Lost)
	}
	if r.Replays == 0 {
		t.Errorf("the final solution replayed nothing: the lost answers were never retried")
	}

	// The right side switches to stage 1: a new epoch, both sides reset.
	if err := d.SwitchRight(ctx, dashboard.Choice{Stage: 1}); err != nil {
		t.Fatal(err)
	}
	col.until(t, "stage 1 on the right", func(m dashboard.Model) bool {
		s := m.Server(dashboard.Right)
		return s.Epoch == 2 && s.Title == "stage 1 · solution" && s.Status == "running"
	})
	if err := d.CrashRight(ctx); err != nil {
		t.Fatal(err)
	}
	col.until(t, "the right side back after a crash", func(m dashboard.Model) bool {
		return m.Server(dashboard.Right).Status == "running"
	})
}

// TestDemo_StartsContextEndsTheDemo catches a Start that ignores its ctx
// (the demo outlives the command that ran it) and one that swaps the
// context NewDemo made for another, leaving the first for ever uncancelled.
func TestDemo_StartsContextEndsTheDemo(t *testing.T) {
	d := NewDemo(Stages{Solutions: map[int]stage.Factory{0: stage0.New}})
	defer d.Close()
	made := d.ctx
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := d.Start(ctx, dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 0}, func(tea.Msg) {}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-made.Done():
	case <-time.After(patience):
		t.Error("the context NewDemo made still runs after Start's ctx ended")
	}
}

// TestDemo_BothSidesOnStageZeroHaveADatabaseEach: lab demo --stage 0
// starts stage 0 on both sides at epoch 1. When the folder of a side's
// database was named by epoch and stage alone, both opened one SQLite
// file: each op ran once per side on it, and each side counted the
// other's executions as its doubles (138 doubles of 98 operations).
func TestDemo_BothSidesOnStageZeroHaveADatabaseEach(t *testing.T) {
	d := NewDemo(Stages{Solutions: map[int]stage.Factory{0: stage0.New}})
	defer d.Close()
	d.SetPaused(true)
	if err := d.Start(t.Context(), dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 0}, func(tea.Msg) {}); err != nil {
		t.Fatal(err)
	}
	left, right := d.side(dashboard.Left).backend, d.side(dashboard.Right).backend
	if err := left.Reset(t.Context(), bank.Params{Seed: 3, Customers: 1, AccountsPerCustomer: 1, OpeningBalance: 5}); err != nil {
		t.Fatal(err)
	}
	l, err := left.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r, err := right.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Accounts) != 1 || len(r.Accounts) != 8 {
		t.Errorf("after a reset of the left side alone: left %d accounts (want 1), right %d (want the demo's 8): the sides share a database",
			len(l.Accounts), len(r.Accounts))
	}
}

// TestLocal_ClosesOnce: a second Close (a demo closed by its caller and
// again by a deferred cleanup) returns the first's answer instead of
// closing its channels again, which panics.
func TestLocal_ClosesOnce(t *testing.T) {
	l := startLocal(t, stage0.New)
	first := l.Close()
	if again := l.Close(); again != first {
		t.Fatalf("a second Close: %v, the first said %v", again, first)
	}
}

// TestLocal_RestartsAndACloseAtOnceEndAGenerationOnce: the demo's crash
// timer, the crash key and a stage switch may crash or close the right
// server at the same moment. Each must end the generation of the moment
// once; two that end the same one close its channels twice and panic,
// which ended the demo when `s` was pressed under the crashes profile.
func TestLocal_RestartsAndACloseAtOnceEndAGenerationOnce(t *testing.T) {
	l := startLocal(t, stage0.New)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			<-release
			l.Restart(t.Context())
		})
	}
	wg.Go(func() {
		<-release
		l.Close()
	})
	close(release)
	wg.Wait()
	if err := l.Restart(t.Context()); err == nil {
		t.Fatal("a restart after Close: no error")
	}
}

// TestDemo_AFailedSwitchStartsBothSidesAgain: when the student's stage
// does not compile, the right side starts again the stage it ran, from
// fresh accounts; the left must start again too, or the two sides no
// longer face the same traffic from the same books. It catches a failed
// switch that leaves the left side's history in place.
func TestDemo_AFailedSwitchStartsBothSidesAgain(t *testing.T) {
	broken := errors.New("stages/stage1 does not compile: stages/stage1/keys.go:1:1: boom")
	d := NewDemo(Stages{
		Solutions: map[int]stage.Factory{0: stage0.New, 1: stage1.New},
		Build:     func(context.Context, int) (string, error) { return "", broken },
	})
	defer d.Close()
	d.SetPaused(true)
	if err := d.Start(t.Context(), dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 1}, func(tea.Msg) {}); err != nil {
		t.Fatal(err)
	}
	left := d.side(dashboard.Left).backend
	c := bank.Population(d.traffic.Reset())[0]
	if s := transfer(t, left.URL(), c, "k-before", "op-before"); s != 201 {
		t.Fatalf("transfer on the left: %d", s)
	}
	if err := d.SwitchRight(t.Context(), dashboard.Choice{Stage: 1, Yours: true}); !errors.Is(err, broken) {
		t.Fatalf("a switch to a stage that does not compile: %v, want the build's error", err)
	}
	st, err := left.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Executions["op-before"]; n != 0 {
		t.Errorf("the left side still holds the transfer made before the failed switch (%d executions): it did not start again", n)
	}
}

// TestDemo_CloseStopsTheBuildOfASwitch: y builds the student's stage (a
// go test -c, seconds long) on the dashboard's context, which a quit does
// not end. Close, which lab demo runs as it quits, cancels the build and
// returns once it has ended; the build went on after the demo quit
// (about 10 s) before.
func TestDemo_CloseStopsTheBuildOfASwitch(t *testing.T) {
	building, ended := make(chan struct{}), make(chan struct{})
	d := NewDemo(Stages{
		Solutions: map[int]stage.Factory{0: stage0.New, 1: stage1.New},
		Build: func(ctx context.Context, _ int) (string, error) {
			defer close(ended)
			close(building)
			<-ctx.Done()
			return "", ctx.Err()
		},
	})
	defer d.Close()
	d.SetPaused(true)
	if err := d.Start(t.Context(), dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: 1}, func(tea.Msg) {}); err != nil {
		t.Fatal(err)
	}
	switched := make(chan error, 1)
	go func() { switched <- d.SwitchRight(context.Background(), dashboard.Choice{Stage: 1, Yours: true}) }()
	<-building
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case <-closed:
	case <-time.After(patience):
		t.Fatal("Close did not return while a switch's build ran: the build was not stopped")
	}
	select {
	case <-ended:
	default:
		t.Fatal("Close returned while the switch's build still ran")
	}
	if err := <-switched; err == nil {
		t.Error("the switch whose build was stopped reported no error")
	}
}

// streamOnly is a Backend whose stream is the events given, then closed.
type streamOnly struct {
	Backend
	evs []events.Event
}

func (s streamOnly) State(context.Context) (labctl.State, error) {
	return labctl.State{}, errors.New("no state here")
}

func (s streamOnly) Subscribe(context.Context) (<-chan events.Event, func()) {
	ch := make(chan events.Event, len(s.evs))
	for _, ev := range s.evs {
		ch <- ev
	}
	close(ch)
	return ch, func() {}
}

// TestWatch_PutsReplicasEventsInTimeOrder: events that arrive one
// replica's stream after the other's reach the dashboard in the order
// they happened, so the original answered by r1 shows before the retry r2
// refused. A watch that passed them on as they arrived fails.
func TestWatch_PutsReplicasEventsInTimeOrder(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	evs := []events.Event{
		{Seq: 1, Kind: events.KindRequest, Time: at.Add(2 * time.Millisecond), Replica: 2},
		{Seq: 2, Kind: events.KindRequest, Time: at.Add(4 * time.Millisecond), Replica: 2},
		{Seq: 1, Kind: events.KindRequest, Time: at.Add(time.Millisecond), Replica: 1},
		{Seq: 2, Kind: events.KindRequest, Time: at.Add(3 * time.Millisecond), Replica: 1},
	}
	var got []string
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	Watch(ctx, streamOnly{evs: evs}, 0, 0, func(msg tea.Msg) {
		if m, ok := msg.(dashboard.EventsMsg); ok {
			for _, ev := range m.Events {
				got = append(got, fmt.Sprintf("r%d#%d", ev.Replica, ev.Seq))
			}
			cancel() // the state poll is not this test's
		}
	})
	if want := "r1#1 r2#1 r1#2 r2#2"; strings.Join(got, " ") != want {
		t.Errorf("events in the order %q, want %q", strings.Join(got, " "), want)
	}
}
