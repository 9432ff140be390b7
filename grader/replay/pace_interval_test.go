package replay

import (
	"testing"
	"time"
)

// TestPaceInterval: a rate of r operations a second starts one every 1/r
// seconds, and never asks time.NewTicker for zero.
func TestPaceInterval(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want time.Duration
	}{{20, 50 * time.Millisecond}, {0.5, 2 * time.Second}, {1e12, time.Microsecond}} {
		if got := paceInterval(c.rate); got != c.want {
			t.Errorf("paceInterval(%g) = %s, want %s", c.rate, got, c.want)
		}
	}
}
