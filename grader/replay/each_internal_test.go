package replay

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestEachUnpaced_CallsEveryOperationOnce: with no pace, the clients take
// the operations themselves: every one is called exactly once, one client
// calls them in the plan's order (lab replay's default, whose day must end
// the same way every time), and a cancelled replay starts no more.
// Caught: an operation skipped or called twice by clients taking the same
// next one, and a cancelled replay that runs the rest of its day.
func TestEachUnpaced_CallsEveryOperationOnce(t *testing.T) {
	const n = 1000
	for _, clients := range []int{1, 4, 64} {
		var mu sync.Mutex
		var order []int
		if err := eachUnpaced(context.Background(), n, clients, func(i int) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		if clients == 1 && !slices.IsSorted(order) {
			t.Errorf("one client called the operations out of order: %v…", order[:10])
		}
		calls := len(order)
		slices.Sort(order)
		if distinct := len(slices.Compact(order)); calls != n || distinct != n {
			t.Errorf("%d clients: %d calls of %d operations, want each of the %d once", clients, calls, distinct, n)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := eachUnpaced(ctx, n, 1, func(i int) {
		calls++
		if i == 9 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || calls != 10 {
		t.Errorf("cancelled during the 10th operation: %d calls and %v, want 10 and context.Canceled", calls, err)
	}
}
