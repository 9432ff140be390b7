package grader

import (
	"fmt"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/core"
	"idemlab/kit/labctl"
)

// CoreStage is the first stage whose server tells the core ledger about
// every transfer: its checks run with a core the check watches.
const CoreStage = 9

// Core is the core ledger the server under test posts to, which the check
// may fail on purpose (Core().Faults); nil for a check before CoreStage.
func (t *T) Core() *core.Core { return t.core }

// watchesCore returns nil when the server under test posts to the core
// the check watches: one the grader started, in this process or as its
// child. A server started elsewhere (lab grade --url) posts to a core of
// its own, which the check cannot read: it could not observe, rather than
// fail a server it cannot see.
func (t *T) watchesCore() error {
	switch {
	case t.core == nil:
		return t.CouldNotObserve("a core ledger: this check runs with one from stage %d on", CoreStage)
	case t.target.Server == nil && t.target.Child == nil:
		return t.CouldNotObserve("the core ledger of a server started elsewhere (lab grade --url): run stage %d's checks with make stage-%d, or %s grade --stage %d without --url", CoreStage, CoreStage, Program(), CoreStage)
	}
	return nil
}

// Postings reads every posting the core applied, in the order applied.
func (t *T) Postings() ([]core.Receipt, error) {
	if t.core == nil {
		return nil, fmt.Errorf("this check runs without a core ledger")
	}
	return t.core.Postings(t.ctx)
}

// Drained waits up to within for the server's outbox to have nothing left
// to send (GET /lab/outbox's outbox.pending is 0), and returns the last
// count read. The relay runs on its own, every server.RelayInterval;
// within is generous, so that a slow machine is never taken for a stuck
// relay.
func (t *T) Drained(within time.Duration) (int64, error) {
	return judging.Drained(t.ctx, within, pollEvery, func() (labctl.Outbox, error) { return t.Lab().Outbox(t.ctx) })
}
