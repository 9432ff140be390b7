package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/audit"
	"idemlab/audit/examples/aftercommit"
	"idemlab/audit/examples/final"
	"idemlab/audit/examples/naive"
	"idemlab/audit/examples/successonly"
	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
)

// examples are the example middlewares by name, which this test binary
// also serves as a lab server of their own when a check starts it again
// as a child process (the checks that run the server as two processes).
// examples are the middlewares a check may start again by name in
// processes of its own (a check that runs the server as two processes on
// one database): the audit's examples, and the tests' own variants.
var examples = map[string]audit.Adapter{
	"naive": naive.New, "final": final.New, "aftercommit": aftercommit.New,
	"slowrestart": slowRestart, "keylock": keyLock,
}

func TestMain(m *testing.M) {
	var subjects []grader.Subject
	for name, new := range examples {
		subjects = append(subjects, audit.Subject(name, new))
	}
	if targets.IsChild() {
		os.Exit(targets.ServeChild(subjects...))
	}
	targets.CanServe(subjects...)
	os.Exit(m.Run())
}

// check runs one check of the catalogue against the middleware new
// builds, wrapped around the naive handlers, in this process.
func check(t *testing.T, new audit.Adapter, id string) grader.Result {
	t.Helper()
	return checkAs(t, "test", new, id)
}

// checkAs is check, with the middleware named name: an example's name lets
// a check start it again in processes of its own.
func checkAs(t *testing.T, name string, new audit.Adapter, id string) grader.Result {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	return grader.RunCheck(t.Context(), audit.Subject(name, new), c, 11, targets.InProcess)
}

// A middleware that does nothing leaves the naive handlers as they are:
// the audit sees them pay a retry twice.
func TestSubject_APassThroughMiddlewarePaysARetryTwice(t *testing.T) {
	passThrough := func(audit.Env) (audit.Middleware, error) {
		return audit.Middleware{Wrap: func(next http.Handler) http.Handler { return next }}, nil
	}
	if r := check(t, passThrough, "S1.sequential-retry"); r.Harm() != judging.Double {
		t.Fatalf("harm %q, want %q: %v", r.Harm(), judging.Double, r.Err)
	}
}

func TestSubject_AnAdapterWithoutWrapCannotRun(t *testing.T) {
	empty := func(audit.Env) (audit.Middleware, error) { return audit.Middleware{}, nil }
	r := check(t, empty, "S0.happy-path")
	if r.Passed() || r.Caught() || !strings.Contains(r.Err.Error(), "no Wrap") {
		t.Fatalf("want a check that could not run for want of Wrap, got %v", r.Err)
	}
}

// The examples, check by check, with the checks that need no crash (a
// check that runs the server as two processes starts this test binary
// twice, serving the example by its name: see TestMain): the
// naive one's money findings, its contract differences and what the lab
// cannot observe of a map in memory; the final one holds; without the
// shared transaction, a late original pays beside the retry that took its
// key over; and the one that keeps only its successes is found by the
// check of a refusal's retry, not by the purge's, which never saw the key.
func TestExamples_VerdictsInProcess(t *testing.T) {
	const (
		pass     = "pass"
		contract = "contract difference"
		unseen   = "could not observe"
	)
	tests := []struct {
		name  string
		new   audit.Adapter
		check string
		want  string // a Harm, or one of the words above
	}{
		{"naive", naive.New, "S1.concurrent-duplicates", string(judging.Double)},
		{"naive", naive.New, "S4.replay-byte-identical", string(judging.WrongAnswer)},
		{"naive", naive.New, "S5.customers-scoped", string(judging.Leak)},
		{"naive", naive.New, "S1.missing-key", contract},
		{"naive", naive.New, "S4.replay-marker-only-on-replays", contract},
		{"naive", naive.New, "S1.fail-closed", unseen},
		{"naive", naive.New, "S5.purge-bounded", unseen},
		// Its keys gone with the crash, customer A's retry under a live
		// lease executes and is answered 201: once, as its client was
		// told. Customer B's retry, the same key string, is then handed
		// A's answer, and B's own payment never runs: lost, by the books.
		{"naive", naive.New, "S6.takeover-own-key", string(judging.Lost)},
		// Scoped, and keeping nothing after a request: both retries
		// execute once and are answered 201. The retry under a live lease
		// was not told to wait, a contract difference; no money moved
		// that its client was told did not.
		{"keylock", keyLock, "S6.takeover-own-key", contract},
		{"final", final.New, "S1.concurrent-duplicates", pass},
		{"final", final.New, "S1.fail-closed", pass},
		{"final", final.New, "S2.equivalent-bodies", pass},
		{"final", final.New, "S2.edited-resubmission", pass},
		{"final", final.New, "S4.replay-byte-identical", pass},
		{"final", final.New, "S4.no-cookie-replayed", pass},
		{"final", final.New, "S5.customers-scoped", pass},
		{"final", final.New, "S5.purge-bounded", pass},
		{"final", final.New, "S1.same-key-edited-body", pass},
		{"final", final.New, "S6.late-original-fenced", pass},
		{"final", final.New, "S6.takeover-own-key", pass},
		{"aftercommit", aftercommit.New, "S6.late-original-fenced", string(judging.Double)},
		{"aftercommit", aftercommit.New, "S4.replay-byte-identical", pass},
		// A refusal it lets go is paid by its retry once money comes in,
		// which is S4.insufficient-funds-replayed's finding, not a purge's:
		// the purge never saw that key.
		{"successonly", successonly.New, "S4.insufficient-funds-replayed", string(judging.MovedThoughRefused)},
		{"successonly", successonly.New, "S5.purge-bounded", pass},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.check, func(t *testing.T) {
			t.Parallel()
			r := checkAs(t, tt.name, tt.new, tt.check)
			got := string(r.Harm())
			switch {
			case r.Passed():
				got = pass
			case r.Caught() && got == "":
				got = contract
			case errors.As(r.Err, new(*judging.Unobserved)):
				got = unseen
			}
			if got != tt.want {
				t.Fatalf("%s: got %q, want %q\n%v", tt.check, got, tt.want, r.Err)
			}
		})
	}
}

// On a loaded machine a crashed server takes seconds to come back, and
// the lab clock, which runs on with real time, moves on by as much between
// the original's claim and the first retry. The lease checks time their
// retries from the claim, so a correct middleware still passes. The slow
// restart is played in process: a request aborted by the crash moves the
// lab clock on by 3s as it dies, after its claim.
func TestLeaseChecks_ASlowRestartIsNoFailure(t *testing.T) {
	for _, id := range []string{"S6.lease-takeover-once", "S6.live-lease-409"} {
		t.Run(id, func(t *testing.T) {
			if r := checkAs(t, "slowrestart", slowRestart, id); !r.Passed() {
				t.Fatalf("a correct middleware failed %s after a slow restart:\n%v", id, r.Err)
			}
		})
	}
}

// slowRestart is the final example whose requests, when a crash aborts
// them, move the lab clock on by 3s as they die: a slow restart, played
// in the process (or in each process a check starts).
func slowRestart(env audit.Env) (audit.Middleware, error) {
	m, err := final.New(env)
	if err != nil {
		return m, err
	}
	wrap := m.Wrap
	m.Wrap = func(next http.Handler) http.Handler {
		inner := wrap(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						if _, err := env.Clock.Advance(context.Background(), 3*time.Second); err != nil {
							panic(fmt.Sprintf("advance the lab clock: %v", err))
						}
					}
					panic(v)
				}
			}()
			inner.ServeHTTP(w, r)
		})
	}
	return m, nil
}

// A middleware that holds a lock per key while its request runs, and
// keeps nothing after it, executes every retry, the first one while the
// crashed original's lease is still live. That first retry is a contract
// difference (no 409 request-in-progress), and the lease checks go on to
// the retries they send after it: each executes again, and the money is
// the finding, never the 409 alone.
func TestLeaseChecks_ARetryTakenEarlyStillHasItsMoneyJudged(t *testing.T) {
	for _, id := range []string{"S6.lease-takeover-once", "S6.live-lease-409"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			if r := checkAs(t, "keylock", keyLock, id); r.Harm() != judging.Double {
				t.Fatalf("harm %q, want %q:\n%v", r.Harm(), judging.Double, r.Err)
			}
		})
	}
}

// keyLock is a middleware that holds a lock on each key while the request
// runs and remembers nothing once it has answered: duplicates that arrive
// together wait for each other, and then each executes, as does every
// retry after.
func keyLock(env audit.Env) (audit.Middleware, error) {
	var (
		mu    sync.Mutex
		locks = map[string]*sync.Mutex{}
	)
	return audit.Middleware{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := env.Customer(r) + " " + r.URL.Path + " " + r.Header.Get("Idempotency-Key")
			mu.Lock()
			l := locks[name]
			if l == nil {
				l = &sync.Mutex{}
				locks[name] = l
			}
			mu.Unlock()
			l.Lock()
			defer l.Unlock()
			next.ServeHTTP(w, r)
		})
	}}, nil
}

// A retry whose round trip outlasts the second of lease it was aimed at
// proves nothing either way: a correct middleware takes the expired key
// over, and the check must say it could not observe, never fail it. Here
// the first retry of a crashed request moves the lab clock on by 2s
// before it reaches the middleware, as a slow round trip would.
func TestLeaseTakeover_ARetryTooLateToTimeIsUnobserved(t *testing.T) {
	slowRetry := func(env audit.Env) (audit.Middleware, error) {
		m, err := final.New(env)
		if err != nil {
			return m, err
		}
		var mu sync.Mutex
		crashed := map[string]bool{}
		wrap := m.Wrap
		m.Wrap = func(next http.Handler) http.Handler {
			inner := wrap(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key := r.Header.Get("Idempotency-Key")
				mu.Lock()
				late := crashed[key]
				delete(crashed, key)
				mu.Unlock()
				if late {
					if _, err := env.Clock.Advance(r.Context(), 2*time.Second); err != nil {
						t.Errorf("advance the lab clock: %v", err)
					}
				}
				defer func() {
					if v := recover(); v != nil {
						mu.Lock()
						crashed[key] = v == http.ErrAbortHandler
						mu.Unlock()
						panic(v)
					}
				}()
				inner.ServeHTTP(w, r)
			})
		}
		return m, nil
	}
	r := check(t, slowRetry, "S6.lease-takeover-once")
	if !errors.As(r.Err, new(*judging.Unobserved)) {
		t.Fatalf("want could not observe, got passed %v, caught %v: %v", r.Passed(), r.Caught(), r.Err)
	}
}

// A middleware that keys answers by the key alone hands one customer the
// other's operation; the report must name the customer whose operation did
// not run as the one given the other's, never the other way round. This
// one serialises the requests of a key (no double): when two customers
// send one key at once, the one whose id sorts last runs, so that which
// customer is handed the other's operation does not depend on a race.
func TestCustomersScoped_NamesTheCustomerHandedAnothersOperation(t *testing.T) {
	var (
		mu      sync.Mutex
		changed = sync.NewCond(&mu)
		answers = map[string]*bodyRecorder{}
		senders = map[string][]string{} // key -> the customers who sent it
		alone   = map[string]bool{}     // key -> no second sender came in time
		ran     = map[string]string{}   // key -> the customer whose request executed
	)
	keyOnly := func(env audit.Env) (audit.Middleware, error) {
		return audit.Middleware{Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key, who := r.Header.Get("Idempotency-Key"), env.Customer(r)
				mu.Lock()
				defer mu.Unlock()
				if !slices.Contains(senders[key], who) {
					senders[key] = append(senders[key], who)
				}
				changed.Broadcast()
				if len(senders[key]) == 1 {
					time.AfterFunc(300*time.Millisecond, func() {
						mu.Lock()
						alone[key] = true
						changed.Broadcast()
						mu.Unlock()
					})
				}
				for answers[key] == nil && !alone[key] && (len(senders[key]) < 2 || who != slices.Max(senders[key])) {
					changed.Wait()
				}
				if a := answers[key]; a != nil {
					a.replay(w)
					return
				}
				rec := &bodyRecorder{ResponseWriter: w, status: http.StatusOK}
				next.ServeHTTP(rec, r)
				answers[key], ran[key] = rec, who
				changed.Broadcast()
			})
		}}, nil
	}
	r := check(t, keyOnly, "S5.customers-scoped")
	var f *judging.Failure
	if r.Harm() != judging.Leak || !errors.As(r.Err, &f) {
		t.Fatalf("want a cross-customer leak, got harm %q: %v", r.Harm(), r.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, owner := range ran {
		if strings.Contains(f.Got, "was given customer "+owner+"'s operation") {
			return
		}
	}
	t.Fatalf("the report names the wrong customer as handed another's operation (executed: %v):\n%s", ran, f.Got)
}

// bodyRecorder passes a response through and keeps its status and body.
type bodyRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *bodyRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *bodyRecorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// replay writes the kept answer to w, as a middleware's stored answer.
func (r *bodyRecorder) replay(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	w.Write(r.body.Bytes())
}

// A middleware that scopes its keys by customer but keeps no fingerprint
// answers the second customer, sending the first one's exact request, with
// the second customer's own earlier operation: a wrong answer (the
// request it sent never ran), not a cross-customer leak, and the report
// must not say it was the first customer's.
func TestCustomersScoped_AnOwnEarlierAnswerIsNoLeak(t *testing.T) {
	var (
		mu      sync.Mutex
		answers = map[string]*bodyRecorder{}
	)
	scopedNoFingerprint := func(env audit.Env) (audit.Middleware, error) {
		return audit.Middleware{Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				key := env.Customer(r) + " " + r.URL.Path + " " + r.Header.Get("Idempotency-Key")
				mu.Lock()
				defer mu.Unlock()
				if a := answers[key]; a != nil {
					a.replay(w)
					return
				}
				rec := &bodyRecorder{ResponseWriter: w, status: http.StatusOK}
				next.ServeHTTP(rec, r)
				answers[key] = rec
			})
		}}, nil
	}
	r := check(t, scopedNoFingerprint, "S5.customers-scoped")
	var f *judging.Failure
	if r.Harm() != judging.WrongAnswer || !errors.As(r.Err, &f) {
		t.Fatalf("want a wrong answer, got harm %q: %v", r.Harm(), r.Err)
	}
	if !strings.Contains(f.Got, "its own earlier operation") {
		t.Fatalf("the report does not say the answer was the customer's own earlier operation:\n%s", f.Got)
	}
}

// A middleware that replays every answer with its body and headers, but a
// stored 201 with 200: each retry is told its own transfer, id and all, and
// learns that its money moved. The status the middleware chose is a
// contract difference in every check that sees it, never a money finding:
// not "no usable answer", not "wrong answer", and a client that hung up
// and is answered 200 for its transfer is not booked as refused.
func TestReplay_AnotherSuccessStatusIsAContractDifference(t *testing.T) {
	replayOK := func(env audit.Env) (audit.Middleware, error) {
		m, err := final.New(env)
		if err != nil {
			return m, err
		}
		return m.Within(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(okReplays{w}, r)
			})
		}), nil
	}
	for _, id := range []string{"S1.sequential-retry", "S3.client-gives-up", "S4.replay-byte-identical", "S4.answer-stored-with-the-money"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			r := check(t, replayOK, id)
			if !r.Caught() || r.Harm() != "" {
				t.Fatalf("caught %v, harm %q; want a contract difference and no harm:\n%v", r.Caught(), r.Harm(), r.Err)
			}
		})
	}
}

// okReplays writes a replayed 201 (Idempotent-Replayed: true) as 200.
type okReplays struct{ http.ResponseWriter }

func (w okReplays) WriteHeader(status int) {
	if status == http.StatusCreated && w.Header().Get("Idempotent-Replayed") == "true" {
		status = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(status)
}
