package audit_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

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
