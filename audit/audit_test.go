package audit_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/audit"
	"idemlab/audit/examples/aftercommit"
	"idemlab/audit/examples/final"
	"idemlab/audit/examples/naive"
	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
)

// check runs one check of the catalogue against the middleware new
// builds, wrapped around the naive handlers, in this process.
func check(t *testing.T, new audit.Adapter, id string) grader.Result {
	t.Helper()
	c, ok := grader.Lookup(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	return grader.RunCheck(t.Context(), audit.Subject("test", new), c, 11, targets.InProcess)
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

// The examples, check by check, with the checks that need no crash: the
// naive one's money findings, its contract differences and what the lab
// cannot observe of a map in memory; the final one holds; and without the
// shared transaction, a late original pays beside the retry that took its
// key over.
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
		{"final", final.New, "S1.concurrent-duplicates", pass},
		{"final", final.New, "S1.fail-closed", pass},
		{"final", final.New, "S2.equivalent-bodies", pass},
		{"final", final.New, "S2.edited-resubmission", pass},
		{"final", final.New, "S4.replay-byte-identical", pass},
		{"final", final.New, "S4.no-cookie-replayed", pass},
		{"final", final.New, "S5.customers-scoped", pass},
		{"final", final.New, "S5.purge-bounded", pass},
		{"final", final.New, "S6.late-original-fenced", pass},
		{"aftercommit", aftercommit.New, "S6.late-original-fenced", string(judging.Double)},
		{"aftercommit", aftercommit.New, "S4.replay-byte-identical", pass},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.check, func(t *testing.T) {
			t.Parallel()
			r := check(t, tt.new, tt.check)
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
	slowRestart := func(env audit.Env) (audit.Middleware, error) {
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
								t.Errorf("advance the lab clock: %v", err)
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
	for _, id := range []string{"S6.lease-takeover-once", "S6.live-lease-409"} {
		t.Run(id, func(t *testing.T) {
			if r := check(t, slowRestart, id); !r.Passed() {
				t.Fatalf("a correct middleware failed %s after a slow restart:\n%v", id, r.Err)
			}
		})
	}
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
