package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"idemlab/kit/core"
	"idemlab/kit/server"
)

// TestServeCore_StopWaitsForPostingsUnderWay: stopping a core while postings
// arrive must not close its database under a posting still being applied
// (under -race, the old stop raced the statement cache; without it, SQLite
// crashed on a closed connection). Every send ends in an answer or an
// error, never a panic in the core.
func TestServeCore_StopWaitsForPostingsUnderWay(t *testing.T) {
	_, url, stop, err := server.StartCore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cl := core.NewClient(url, nil)
	var wg sync.WaitGroup
	started := make(chan struct{}, 8)
	for i := range 8 {
		wg.Go(func() {
			for n := 0; ; n++ {
				p := core.Posting{From: "acc_a", To: "acc_b", Amount: 1500}
				p.TransferID = fmt.Sprintf("tr_%d_%d", i, n)
				if _, _, err := cl.Post(context.Background(), p.TransferID, p); err != nil {
					return
				}
				if n == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	for range 8 {
		<-started
	}
	stop()
	wg.Wait()
}
