package backend

import (
	"context"
	"fmt"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
)

// Plain runs the demo without a terminal: for d it prints one line a
// second, then stops the traffic, lets the last answers and state polls
// come in, and prints a summary. It returns an error if a server could not
// start, or if the right side runs the final solution and moved money
// twice or lost a transfer: CI runs this.
func Plain(ctx context.Context, stages Stages, left, right dashboard.Choice, profile int, d time.Duration, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	msgs := make(chan tea.Msg, 1024)
	send := func(msg tea.Msg) {
		select {
		case msgs <- msg:
		case <-ctx.Done():
		}
	}
	demo := NewDemo(stages)
	p := demo.SetProfile(ctx, profile)
	// Cancelling first unblocks any watcher waiting in send.
	defer func() { cancel(); demo.Close() }()
	if err := demo.Start(ctx, left, right, send); err != nil {
		return err
	}
	start := time.Now()
	var tm tea.Model = dashboard.NewDemo(ctx, demo, stages.Numbers(), left, right, demo.Traffic().Rate(), p.Profile, start)
	model := func() dashboard.Model { return tm.(dashboard.Model) }
	polls := [2]int{}
	apply := func(msg tea.Msg) {
		if st, ok := msg.(dashboard.StateMsg); ok && st.Err == nil {
			polls[st.Side]++
		}
		tm, _ = tm.Update(msg)
	}

	fmt.Fprintf(w, "idemlab demo: %s (left) and %s (right), the same traffic through the same faults\n", left, right)
	fmt.Fprintf(w, "faults: %s — %s; %d ops/s\n", p.Name, p.About, demo.Traffic().Rate())
	second := time.NewTicker(time.Second)
	defer second.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
running:
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg := <-msgs:
			apply(msg)
		case now := <-second.C:
			fmt.Fprintln(w, model().PlainLine(now))
		case <-end.C:
			break running
		}
	}

	// Stop the traffic, wait for the operations under way, then for two
	// more state polls of each side, so that every success is judged.
	demo.SetPaused(true)
	// The longest an operation under way can still take: its retries'
	// horizon, then an attempt that waits out its timeout, and the edited
	// resubmission that may follow it, with a margin for a loaded machine.
	settle := DemoPolicy.Horizon + 2*DemoPolicy.Timeout + 5*time.Second
	deadline := time.After(settle)
	drained := make(chan error, 1)
	go func() { drained <- demo.Traffic().Drain(ctx) }()
	settled := false
	var target [2]int
	for !settled || polls[dashboard.Left] < target[dashboard.Left] || polls[dashboard.Right] < target[dashboard.Right] {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the servers did not settle within %v of the end", settle)
		case msg := <-msgs:
			apply(msg)
		case err := <-drained:
			if err != nil {
				return err
			}
			settled, target = true, [2]int{polls[dashboard.Left] + 2, polls[dashboard.Right] + 2}
		}
	}
	m := model()
	fmt.Fprintf(w, "\nsummary: %d operations in %s, each sent to both servers\n", demo.Traffic().Played(), time.Since(start).Round(time.Second))
	if n := demo.Traffic().HeldBack(); n > 0 {
		fmt.Fprintf(w, "(%d more held back: the servers answered too slowly for the rate)\n", n)
	}
	m.PlainSummary(w)
	l, r := m.Side(dashboard.Left).Counts, m.Side(dashboard.Right).Counts
	switch {
	case l.Requests == 0 || r.Requests == 0:
		return fmt.Errorf("no traffic reached a server")
	case !right.Yours && right.Stage == stages.Final() && (r.Doubles > 0 || r.Lost > 0):
		return fmt.Errorf("the final solution moved money twice %d times and lost %d transfers", r.Doubles, r.Lost)
	}
	if p.CrashEvery > 0 {
		fmt.Fprintf(w, "crashes: left %s\n         right %s\n", crashNote(left), crashNote(right))
	}
	fmt.Fprintf(w, "verdict: the left server executed %d operations more than once; the right, %d.\n", l.Doubles, r.Doubles)
	return nil
}
