package grader

import (
	"context"
	"fmt"
	"net"
	"time"

	"idemlab/kit/core"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
)

// CoreStage is the first stage whose server tells the core ledger about
// every transfer: its checks run with a core the check watches.
const CoreStage = 9

// startCore runs a core ledger in this process, on a database of its own
// in memory and a free loopback port, so that it outlives any crash of the
// server under test: the checks read its postings and fail it on purpose.
func startCore(ctx context.Context) (*core.Core, string, func(), error) {
	db, err := labdb.Open(ctx, ":memory:")
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the core ledger: %w", err)
	}
	c, err := core.New(ctx, db.DB)
	if err != nil {
		db.Close()
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, "", nil, fmt.Errorf("start the core ledger: %w", err)
	}
	hs := server.NewHTTPServer(c.Handler())
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln)
	}()
	stop := func() {
		hs.Close()
		<-served
		db.Close()
	}
	return c, "http://" + ln.Addr().String(), stop, nil
}

// Core is the core ledger the server under test posts to, which the check
// may fail on purpose (Core().Faults); nil for a check before CoreStage.
func (t *T) Core() *core.Core { return t.core }

// Postings reads every posting the core applied, in the order applied.
func (t *T) Postings() ([]core.Receipt, error) {
	if t.core == nil {
		return nil, fmt.Errorf("this check runs without a core ledger")
	}
	return t.core.Postings(t.ctx)
}

// Drained waits up to within for the server's outbox to have nothing left
// to send (GET /lab/state's outbox.pending is 0), and returns the last
// count read. The relay runs on its own, every server.RelayInterval;
// within is generous, so that a slow machine is never taken for a stuck
// relay.
func (t *T) Drained(within time.Duration) (int64, error) {
	var pending int64
	_, err := t.WaitFor(within, func() (bool, error) {
		st, err := t.State()
		pending = st.Outbox.Pending
		return err == nil && pending == 0, err
	})
	return pending, err
}
