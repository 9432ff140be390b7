// Package fault has the one mechanism every lab fault uses: a countdown
// armed with how many more times the fault fires.
package fault

import "sync/atomic"

// Countdown is an armed fault. The zero value is disarmed. It is safe for
// concurrent use: of many goroutines that call Fire at once, exactly as
// many as the armed count see true.
type Countdown struct {
	left atomic.Int64
}

// Arm sets how many more times the fault fires (0 disarms it).
func (c *Countdown) Arm(n int64) { c.left.Store(n) }

// Left reports how many more times the fault fires.
func (c *Countdown) Left() int64 { return c.left.Load() }

// Fire uses one firing, reporting whether there was one left.
func (c *Countdown) Fire() bool {
	for {
		n := c.left.Load()
		if n <= 0 {
			return false
		}
		if c.left.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
