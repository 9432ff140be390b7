package server

import (
	"context"
	"runtime"
	"testing"
	"time"

	"idemlab/kit/events"
)

// TestKeyRowsPublished_WaitsForTheChangesQueuedBeforeIt: a move of the
// clock waits for keyRowsPublished before its own event, so that a fence
// hears every key event committed before it. It must not return while a
// change queued before it is still unread, and must once the publisher
// has read it.
func TestKeyRowsPublished_WaitsForTheChangesQueuedBeforeIt(t *testing.T) {
	s := &Server{keyRows: make(chan keyRowsChanged, 4), stop: make(chan struct{}), listening: make(chan error), hub: events.NewHub()}
	s.keyRows <- keyRowsChanged{rowids: []int64{1}, at: time.Now()}
	done := make(chan error, 1)
	go func() { done <- s.keyRowsPublished(context.Background()) }()
	// With no publisher running, nothing can have read the change: a
	// return now would be a fence that does not wait.
	for len(s.keyRows) < 2 {
		select {
		case err := <-done:
			t.Fatalf("returned (%v) before the change queued before it was published", err)
		default:
		}
		runtime.Gosched()
	}
	s.wg.Add(1)
	go s.publishKeyRows()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(s.keyRows); n != 0 {
		t.Errorf("%d changes still queued after it returned", n)
	}
	close(s.stop)
	s.wg.Wait()
}
