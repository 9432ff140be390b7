package replay

import (
	"context"
	"time"
)

// Pace spaces the starts of a replay's operations so that a class can
// watch them go by (lab replay --rate): each operation waits for one tick
// before it starts. The plan's own clock is untouched; only the real
// starts are spread out.
type Pace struct {
	ticks <-chan time.Time
	stop  func()
}

// NewPace returns a Pace that lets opsPerSecond operations start each
// second on the wall clock, or nil (as fast as possible) if opsPerSecond
// is not positive.
func NewPace(opsPerSecond float64) *Pace {
	if opsPerSecond <= 0 {
		return nil
	}
	t := time.NewTicker(paceInterval(opsPerSecond))
	return &Pace{ticks: t.C, stop: t.Stop}
}

// PaceOf returns a Pace that lets one operation start for each value
// received on ticks: a fake clock for tests, or any other metronome.
func PaceOf(ticks <-chan time.Time) *Pace {
	return &Pace{ticks: ticks, stop: func() {}}
}

// Stop releases the Pace's ticker. A nil Pace may be stopped.
func (p *Pace) Stop() {
	if p != nil {
		p.stop()
	}
}

// wait blocks until the next operation may start. A nil Pace never waits.
// It returns ctx's error if the replay is cancelled first.
func (p *Pace) wait(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	select {
	case <-p.ticks:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// paceInterval is the time between two starts at opsPerSecond, at least
// a microsecond (time.NewTicker refuses zero).
func paceInterval(opsPerSecond float64) time.Duration {
	return max(time.Duration(float64(time.Second)/opsPerSecond), time.Microsecond)
}
