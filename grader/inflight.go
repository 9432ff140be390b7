package grader

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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

// slowMachineLatency is the core latency a check that asks for it
// (S3.retry-during-original) holds one more original with when no try at
// heldLatencies acted while its original was in flight: on a loaded
// machine the retries sent at once can reach the server only after a
// 2.7s core wait is over, every one of them answered the original's
// stored outcome, and a server that mishandles a retry in the window is
// never shown one.
const slowMachineLatency = 8100 * time.Millisecond

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
	return t.whileHeld(opening, false, false, try)
}

// heldReadsCheck is the check that fails a server whose transaction is
// open across the core call (see WhileHeld).
const heldReadsCheck = "S3.retry-during-original"

// heldReads counts the originals Hold held whose core wait a read of the
// lab's state waited out. A read Hold sends on its own (see Hold) may
// still be on its way: count waits for it.
type heldReads struct {
	reads  sync.WaitGroup
	waited atomic.Int64
}

// count returns how many held originals a read waited out, once the reads
// still on their way have answered.
func (h *heldReads) count() int64 {
	h.reads.Wait()
	return h.waited.Load()
}

// whileHeld is WhileHeld; judgeReads is true for heldReadsCheck only.
// With longer, a check that no try at heldLatencies could act in, and
// whose reads did not wait for the original either, tries once more at
// slowMachineLatency before it says it could not observe.
func (t *T) whileHeld(opening int64, judgeReads, longer bool, try func(s Scenario, latency time.Duration) (conclusive bool, err error)) error {
	// readsWaited is whether a read of the lab's state waited for the held
	// original in every try but perhaps the first: the shortest latency's
	// window (Hold looks for a quarter of it) can close on a busy machine
	// before a read reaches a transaction that has begun, and that read
	// answers at once. A try may hold more than one original.
	readsWaited, first := true, t.heldReads.count()
	latencies := heldLatencies
	for i := 0; i < len(latencies); i++ {
		l := latencies[i]
		s, err := t.Scenario(2, opening)
		if err != nil {
			return err
		}
		before := t.heldReads.count()
		conclusive, err := try(s, l)
		if err != nil || conclusive {
			return err
		}
		if i > 0 && t.heldReads.count() == before {
			readsWaited = false
		}
		if longer && len(latencies) == len(heldLatencies) && i == len(latencies)-1 && t.heldReads.count() == first {
			latencies = append(slices.Clip(latencies), slowMachineLatency)
		}
	}
	if t.heldReads.count() == first {
		// No read waited: the machine was too slow for every try.
		return t.couldNotObserveHeld(latencies[len(latencies)-1])
	}
	if judgeReads {
		// A read waited for an original at least once. The finding rests
		// on one payment watched for the whole of its core wait: the reads
		// of a try can all fall between the claim's commit and the
		// business transaction that opens after it, and answer at once.
		waits, err := t.plainTransferKeepsReadsWaiting(opening)
		if err != nil {
			return err
		}
		if waits && t.readsQuickly(heldLatencies[0]/2) {
			return t.readsWaited(true, latencies)
		}
		return t.couldNotObserveHeld(latencies[len(latencies)-1])
	}
	if readsWaited && t.readsQuickly(heldLatencies[0]/2) {
		// A read that waits as long as the core wait, at each latency
		// (the first aside), while one with nothing held answers at
		// once, waits for it (on a machine too busy for every try, reads
		// are slow held or not). heldReadsCheck holds plain transfers:
		// where a plain transfer held on the core keeps the lab's reads
		// waiting too, the finding is its. Where it does not, the request
		// this check holds (a deposit, a transfer with a reference) opens
		// its transaction across the core call on its own, and no other
		// check sees it.
		waits, err := t.plainTransferKeepsReadsWaiting(opening)
		if err != nil {
			return err
		}
		return t.readsWaited(!waits, latencies)
	}
	return t.couldNotObserveHeld(latencies[len(latencies)-1])
}

// couldNotObserveHeld is the verdict of WhileHeld when no try acted while
// its original was in flight, and the lab's reads did not wait for it.
// longest is the longest core latency tried.
func (t *T) couldNotObserveHeld(longest time.Duration) error {
	return t.CouldNotObserve("the server while an original was in flight: with core latencies of up to %v, every try found the original answered, or its key not yet in progress, before the check could act (a busy machine, a key table the lab cannot read, or a server that answers this request before it waits on the core, as one that refuses it early does; run the check alone with RUN=… to tell)", longest)
}

// readsWaited is the verdict of WhileHeld on a server that kept the lab's
// reads waiting for a held original: a failure where judge is set (in
// heldReadsCheck, or in a check whose held request keeps the reads
// waiting where a plain transfer does not), could not observe, naming
// heldReadsCheck, in any other. held are the core latencies the tries
// held their originals with, slowMachineLatency among them when it was
// tried: the verdict names those.
func (t *T) readsWaited(judge bool, held []time.Duration) error {
	longest := held[len(held)-1]
	if !judge {
		return t.CouldNotObserve("the server while an original was in flight: at every core latency up to %v, each read of the lab's state waited for the held payment, while a read with nothing held answers at once (a transaction open across the core call: %s fails for it)", longest, heldReadsCheck)
	}
	plain := heldLatencies[len(heldLatencies)-1]
	return because(t.Fail(fmt.Sprintf("payments held on the core, for %s; while each waits, the lab reads its state (GET /lab/state); then a payment held %v, and the lab reads its state until it answers", durations(held), plain),
		"a read of the lab's state took at least half the payment's core wait to answer, where a read with nothing held answers at once: it waited for the payment",
		"the lab's read answers while the payment waits on the core: no transaction is open while a request waits on the core"),
		"a transaction held open across the core call holds the database for as long as the core takes: on SQLite every other request waits behind it, the lab's own reads too, and one slow core call stops the whole server")
}

// durations lists ds for a reader: "300ms, 900ms and 2.7s".
func durations(ds []time.Duration) string {
	s := ""
	for i, d := range ds {
		switch {
		case i == 0:
		case i == len(ds)-1:
			s += " and "
		default:
			s += ", "
		}
		s += d.String()
	}
	return s
}

// plainTransferKeepsReadsWaiting holds a plain transfer on the core, as
// heldReadsCheck does, for the longest of heldLatencies, reads the lab's
// state until it answers, and reports whether a read waited out half its
// core wait meanwhile.
func (t *T) plainTransferKeepsReadsWaiting(opening int64) (bool, error) {
	s, err := t.Scenario(2, opening)
	if err != nil {
		return false, err
	}
	req, op, amount := s.Payment(t)
	s.Books.Expect(op)
	latency := heldLatencies[len(heldLatencies)-1]
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return false, err
	}
	held, waited := t.Launch(req), false
	if _, err := t.WaitFor(2*latency, func() (bool, error) {
		asked := time.Now()
		if _, err := t.State(); err != nil {
			return false, err
		}
		waited = time.Since(asked) >= latency/2
		return waited || held.Done(), nil
	}); err != nil {
		return false, err
	}
	if toldRan(held.Wait(), op) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return false, err
	}
	return waited, t.Reconcile(req.String()+"\n(held on the core "+latency.String()+", to see whether the lab's reads wait for a plain transfer)", "", s.Books)
}

// readsQuickly reports whether a read of the lab's state, with nothing
// held, answers within d, in one of three tries (one read can meet a
// pause of a busy machine).
func (t *T) readsQuickly(d time.Duration) bool {
	for range 3 {
		asked := time.Now()
		if _, err := t.State(); err == nil && time.Since(asked) < d {
			return true
		}
	}
	return false
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
	waited := false
	_, err := t.WaitFor(latency/4, func() (bool, error) {
		if h.Done() {
			return true, nil
		}
		asked := time.Now()
		st, err := t.State()
		if err != nil {
			return false, err
		}
		waited = waited || time.Since(asked) >= latency/2
		h.Seen = judging.KeyInProgress(st, req.Key)
		return h.Seen, nil
	})
	switch {
	case waited:
		t.heldReads.waited.Add(1)
	case err == nil && h.Seen && !h.Done():
		// The read that saw the key may have come between the claim's
		// commit and a transaction opened after it across the core call.
		// One more read, on its own so that the check acts at once, tells
		// whether the reads wait for the original.
		t.heldReads.reads.Add(1)
		go func() {
			defer t.heldReads.reads.Done()
			asked := time.Now()
			if _, err := t.State(); err == nil && time.Since(asked) >= latency/2 {
				t.heldReads.waited.Add(1)
			}
		}()
	}
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
