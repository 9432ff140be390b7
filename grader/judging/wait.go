package judging

import (
	"context"
	"time"

	"idemlab/kit/labctl"
)

// WaitFor calls cond every so often until it holds, returns an error, or
// d has passed, and reports whether it held; it returns ctx's error if ctx
// ends first.
func WaitFor(ctx context.Context, d, every time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Drained reads outbox every so often until the outbox has nothing left
// to send or within has passed, and returns the last count read.
func Drained(ctx context.Context, within, every time.Duration, outbox func() (labctl.Outbox, error)) (int64, error) {
	var pending int64
	_, err := WaitFor(ctx, within, every, func() (bool, error) {
		o, err := outbox()
		pending = o.Counts.Pending
		return err == nil && pending == 0, err
	})
	return pending, err
}
