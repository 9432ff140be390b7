package fault_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"idemlab/kit/fault"
)

func TestCountdown_FiresExactlyTheArmedCount(t *testing.T) {
	var c fault.Countdown
	c.Arm(5)
	var fired atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Fire() {
				fired.Add(1)
			}
		}()
	}
	wg.Wait()
	if fired.Load() != 5 || c.Left() != 0 {
		t.Fatalf("fired %d times, %d left; want 5 and 0", fired.Load(), c.Left())
	}
}
