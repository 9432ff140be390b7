package grader

import (
	"context"
	"fmt"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
)

// inFlight is the client name of a request sent with Launch: the
// history's lane of an original held in flight.
const inFlight = "in flight"

// Pending is a request on its way, sent on its own goroutine so that a
// check can act while the server works on it.
type Pending struct {
	Request Request
	done    chan struct{}
	res     Response
	// at is when the answer came back.
	at time.Time
}

// Launch sends req on its own goroutine and returns at once.
func (t *T) Launch(req Request) *Pending { return t.launch(t.ctx, req) }

// launchAbandoned sends req like Launch, and returns with it the function
// that abandons it: its client hangs up, and the server's request ends as
// one whose client went away does (a wait on the core returns at once).
func (t *T) launchAbandoned(req Request) (*Pending, context.CancelFunc) {
	ctx, abandon := context.WithCancel(t.ctx)
	return t.launch(ctx, req), abandon
}

// launch sends req with ctx on its own goroutine and returns at once.
func (t *T) launch(ctx context.Context, req Request) *Pending {
	p := &Pending{Request: req, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.res = t.sendWith(ctx, inFlight, req)
		p.at = time.Now()
	}()
	return p
}

// Done reports, without waiting, whether the answer has come back.
func (p *Pending) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the answer.
func (p *Pending) Wait() Response {
	<-p.done
	return p.res
}

// heldLatencies are the core latencies a check holds an original in flight
// with: it starts short to keep the run fast and lengthens the wait only
// when the machine was too slow for the check to act inside the window.
var heldLatencies = []time.Duration{300 * time.Millisecond, 900 * time.Millisecond, 2700 * time.Millisecond}

// lastHold reports whether latency is the longest WhileHeld tries: a check
// that found no key in progress with a shorter one may have looked too
// slowly (Hold looks for a quarter of the latency), and tries again before
// it judges.
func lastHold(latency time.Duration) bool {
	return latency == heldLatencies[len(heldLatencies)-1]
}

// WhileHeld runs try with each of heldLatencies until try reports that it
// acted while the original was still in flight (conclusive), or fails.
// Each try gets a fresh Scenario (two customers, opening won on every
// account) and holds its own original with the latency it is given: see
// Hold and Held.Early. If every try ran out because the lab's own reads
// waited for the held original (a transaction open across the core
// call), the check could not observe what it exists for: it says so and
// names S3.retry-during-original (heldReadsCheck), which fails a server
// for it, so that the finding is made once, not in every check that
// holds an original; unless a plain transfer, which that check holds,
// keeps no read waiting: the check fails then, for the request it holds.
func (t *T) WhileHeld(opening int64, try func(s Scenario, latency time.Duration) (conclusive bool, err error)) error {
	return t.whileHeld(opening, false, try)
}

// heldReadsCheck is the check that fails a server whose transaction is
// open across the core call (see WhileHeld).
const heldReadsCheck = "S3.retry-during-original"

// whileHeld is WhileHeld; judgeReads is true for heldReadsCheck only.
func (t *T) whileHeld(opening int64, judgeReads bool, try func(s Scenario, latency time.Duration) (conclusive bool, err error)) error {
	// readsWaited is whether a read of the lab's state waited for the held
	// original in every try but perhaps the first: the shortest latency's
	// window (Hold looks for a quarter of it) can close on a busy machine
	// before a read reaches a transaction that has begun, and that read
	// answers at once. A try may hold more than one original.
	readsWaited := true
	for i, l := range heldLatencies {
		s, err := t.Scenario(2, opening)
		if err != nil {
			return err
		}
		before := t.heldReadsWaited
		conclusive, err := try(s, l)
		if err != nil || conclusive {
			return err
		}
		if i > 0 && t.heldReadsWaited == before {
			readsWaited = false
		}
	}
	if readsWaited && t.readsQuickly(heldLatencies[0]/2) {
		// A read that waits as long as the core wait, at each latency
		// (the first aside), while one with nothing held answers at
		// once, waits for it (on a machine too busy for every try, reads
		// are slow held or not).
		if judgeReads {
			return t.readsWaited(true)
		}
		// heldReadsCheck holds plain transfers: where a plain transfer
		// held on the core keeps the lab's reads waiting too, the finding
		// is its. Where it does not, the request this check holds (a
		// deposit, a transfer with a reference) opens its transaction
		// across the core call on its own, and no other check sees it.
		waits, err := t.plainTransferKeepsReadsWaiting(opening)
		if err != nil {
			return err
		}
		return t.readsWaited(!waits)
	}
	return t.CouldNotObserve("the server while an original was in flight: with core latencies of up to %v, every try found the original answered, or its key not yet in progress, before the check could act (a busy machine, or a key table the lab cannot read; run the check alone with RUN=… to tell)", heldLatencies[len(heldLatencies)-1])
}

// readsWaited is the verdict of WhileHeld on a server that kept the lab's
// reads waiting for the held original at every latency: a failure where
// judge is set (in heldReadsCheck, or in a check whose held request keeps
// the reads waiting where a plain transfer does not), could not observe,
// naming heldReadsCheck, in any other.
func (t *T) readsWaited(judge bool) error {
	if !judge {
		return t.CouldNotObserve("the server while an original was in flight: at every core latency up to %v, each read of the lab's state waited for the held payment, while a read with nothing held answers at once (a transaction open across the core call: %s fails for it)", heldLatencies[len(heldLatencies)-1], heldReadsCheck)
	}
	return because(t.Fail(fmt.Sprintf("a payment held on the core %v, then another %v, then another %v; each time, while it waits, the lab reads its state (GET /lab/state)", heldLatencies[0], heldLatencies[1], heldLatencies[2]),
		"each read of the lab's state took at least half the payment's core wait to answer, at every latency: it waited for the payment",
		"the lab's read answers while the payment waits on the core: no transaction is open while a request waits on the core"),
		"a transaction held open across the core call holds the database for as long as the core takes: on SQLite every other request waits behind it, the lab's own reads too, and one slow core call stops the whole server")
}

// plainTransferKeepsReadsWaiting holds a plain transfer on the core, as
// heldReadsCheck does, and reports whether a read of the lab's state
// waited out half its core wait meanwhile.
func (t *T) plainTransferKeepsReadsWaiting(opening int64) (bool, error) {
	s, err := t.Scenario(2, opening)
	if err != nil {
		return false, err
	}
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	waited := t.heldReadsWaited
	held, err := t.Hold(req, heldLatencies[1])
	if err != nil {
		return false, err
	}
	if executedOps(held.Wait()) > 0 {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return false, err
	}
	return t.heldReadsWaited > waited, t.Reconcile(req.String()+"\n(held on the core "+heldLatencies[1].String()+", to see whether the lab's reads wait for a plain transfer)", "", s.Books)
}

// readsQuickly reports whether a read of the lab's state, with nothing
// held, answers within d.
func (t *T) readsQuickly(d time.Duration) bool {
	asked := time.Now()
	_, err := t.State()
	return err == nil && time.Since(asked) < d
}

// Held is an original request held in the core wait.
type Held struct {
	*Pending
	// Seen reports whether its key showed in progress in the key table.
	Seen    bool
	latency time.Duration
	sent    time.Time
}

// Early reports whether the original has at least half of its core wait
// still ahead: what the check sends now reaches the server while the
// original runs, however the scheduler treats the goroutines.
func (h *Held) Early() bool {
	return !h.Done() && time.Since(h.sent) < h.latency/2
}

// Hold raises the core latency to latency, sends req and waits until the
// target's key table shows req's key in progress, so that the check can
// act while the original waits on the core. It stops waiting after a
// quarter of the latency: a stage that claims only together with the business write
// never shows the key in progress, and the check then sees what the
// server does with a retry, and judges it.
func (t *T) Hold(req Request, latency time.Duration) (*Held, error) {
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return nil, err
	}
	h := &Held{latency: latency, sent: time.Now()}
	h.Pending = t.Launch(req)
	_, err := t.WaitFor(latency/4, func() (bool, error) {
		if h.Done() {
			return true, nil
		}
		asked := time.Now()
		st, err := t.State()
		if err != nil {
			return false, err
		}
		if time.Since(asked) >= latency/2 {
			t.heldReadsWaited++
		}
		h.Seen = judging.KeyInProgress(st, req.Key)
		return h.Seen, nil
	})
	return h, err
}

// storeFailsAfterClaim waits for held, an original whose claim is in and
// which waits on the core, with the key store failing for the next two
// statements on the key table (its completion, and the release after
// it), and returns its answer, the store and the core's latency back to
// normal.
func (t *T) storeFailsAfterClaim(held *Held) (Response, error) {
	if err := t.Arm(labctl.StoreUnavailable, 2); err != nil {
		return Response{}, err
	}
	orig := held.Wait()
	if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
		return Response{}, err
	}
	return orig, t.Configure(labclient.Config{NoCoreLatency: true})
}
