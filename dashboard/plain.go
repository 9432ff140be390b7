package dashboard

import (
	"context"
	"fmt"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/kit/bank"
)

// Plain runs the demo without a terminal: for d it prints one line a
// second, then stops the traffic, lets the last answers and state polls
// come in, and prints a summary. It returns an error if a server could not
// start, or if the right side runs the final solution and moved money
// twice or lost a transfer: CI runs this.
func Plain(ctx context.Context, stages Stages, left, right Choice, profile int, d time.Duration, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	msgs := make(chan tea.Msg, 1024)
	send := func(msg tea.Msg) {
		select {
		case msgs <- msg:
		case <-ctx.Done():
		}
	}
	demo := NewLab(stages)
	demo.SetProfile(ctx, profile)
	if err := demo.Start(ctx, left, right, send); err != nil {
		cancel()
		demo.Close()
		return err
	}
	// Cancelling first unblocks any watcher waiting in send.
	defer func() { cancel(); demo.Close() }()
	start := time.Now()
	var tm tea.Model = NewDemo(ctx, demo, stages.Numbers(), left, right, start).WithProfile(profile)
	model := func() Model { return tm.(Model) }
	polls := [2]int{}
	apply := func(msg tea.Msg) {
		if st, ok := msg.(StateMsg); ok && st.Err == nil {
			polls[st.Side]++
		}
		tm, _ = tm.Update(msg)
	}

	fmt.Fprintf(w, "idemlab demo: %s (left) and %s (right), the same traffic through the same faults\n", left, right)
	fmt.Fprintf(w, "faults: %s — %s; %d ops/s\n", demo.Traffic().Profile().Name, demo.Traffic().Profile().About, demo.Traffic().Rate())
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
			apply(tickMsg(now))
			fmt.Fprintf(w, "%4s  %s | %s\n", clockSince(now.Sub(start)), plainSide(model(), Left), plainSide(model(), Right))
		case <-end.C:
			break running
		}
	}

	// Stop the traffic, wait for the operations under way, then for two
	// more state polls of each side, so that every success is judged.
	demo.SetPaused(true)
	deadline := time.After(15 * time.Second)
	drained := make(chan error, 1)
	go func() { drained <- demo.Traffic().Drain(ctx) }()
	settled := false
	var target [2]int
	for !settled || polls[Left] < target[Left] || polls[Right] < target[Right] {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the servers did not settle within 15s of the end")
		case msg := <-msgs:
			apply(msg)
		case err := <-drained:
			if err != nil {
				return err
			}
			settled, target = true, [2]int{polls[Left] + 2, polls[Right] + 2}
		}
	}
	return summary(w, model(), demo.Traffic(), right, stages.Final(), time.Since(start))
}

func plainSide(m Model, i int) string {
	s := m.sides[i]
	c := s.Counts
	return fmt.Sprintf("%s: %d req, %d doubles, %d lost, Σ %s", s.title, c.Requests, c.Doubles, c.Lost, verdictWord(s.Money.Verdict))
}

func verdictWord(v Verdict) string {
	switch v {
	case Conserved:
		return "✓"
	case Broken:
		return "✗"
	case Unverified:
		return "?"
	}
	return "…"
}

func summary(w io.Writer, m Model, t *Traffic, right Choice, final int, took time.Duration) error {
	fmt.Fprintf(w, "\nsummary: %d operations in %s, each sent to both servers\n", t.Played(), took.Round(time.Second))
	for _, s := range m.sides {
		c, money := s.Counts, s.Money
		fmt.Fprintf(w, "  %-22s %5d requests  %3d replayed  %3d 409  %4d doubles  %2d lost  ₩%s moved twice  ₩%s created  money %s\n",
			s.title, c.Requests, c.Replays, c.Conflicts, c.Doubles, c.Lost, bank.FormatWon(c.MovedTwice), bank.FormatWon(c.CreatedTwice), verdictText(money))
	}
	l, r := m.sides[Left].Counts, m.sides[Right].Counts
	switch {
	case l.Requests == 0 || r.Requests == 0:
		return fmt.Errorf("no traffic reached a server")
	case !right.Yours && right.Stage == final && (r.Doubles > 0 || r.Lost > 0):
		return fmt.Errorf("the final solution moved money twice %d times and lost %d transfers", r.Doubles, r.Lost)
	}
	fmt.Fprintf(w, "verdict: the left server executed %d operations more than once; the right, %d.\n", l.Doubles, r.Doubles)
	return nil
}

func verdictText(m Money) string {
	switch m.Verdict {
	case Conserved:
		return "conserved"
	case Broken:
		return fmt.Sprintf("off by ₩%s", bank.FormatWon(m.Surplus))
	case Unverified:
		return "unverified (executions no event reported)"
	}
	return "not polled"
}
