package conform

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/auditserve"
	"idemlab/kit/bank"
	"idemlab/kit/labclient"
)

// TestRun_AuditExamples attacks each audit example (audit/examples)
// through its public API with the lab's profile, and finds what it really
// does: the naive map harms money (the quoted and bare forms of a key
// two keys, an edit told it succeeded, one customer answered with
// another's transfer), the final design is clean,
// completing the key after the handler's commit harms nothing a black box
// can reach (its flaw needs a crash), the lock held for good leaves a
// client that lost its answer unable ever to learn it, the missing
// replay marker is no money matter, and keys shared between customers
// refuse the second one's own request and hand it the first one's
// transfer for the first one's exact request; a middleware that keeps only
// its successes is clean from the outside, which never retries a refusal
// once its reason has gone.
func TestRun_AuditExamples(t *testing.T) {
	want := map[string]struct {
		money   string
		mustMet int
		harmed  []string
	}{
		"naive":       {MoneyHarmed, 1, []string{"key-forms", "key-reused-other-payload", "two-principals-one-key"}},
		"final":       {MoneyClean, 2, nil},
		"aftercommit": {MoneyClean, 2, nil},
		"heldlock":    {MoneyHarmed, 2, []string{"lost-response"}},
		"nomarker":    {MoneyClean, 2, nil},
		"sharedscope": {MoneyHarmed, 2, []string{"two-principals-one-key", "two-principals-same-request"}},
		"successonly": {MoneyClean, 2, nil},
	}
	if len(want) != len(auditserve.Names()) {
		t.Fatalf("the test knows %d examples; auditserve serves %v", len(want), auditserve.Names())
	}
	profile, err := Load("testdata/profiles/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range auditserve.Names() {
		t.Run(name, func(t *testing.T) {
			results := attackLab(t, name, profile)
			s := Summarize(results)
			w := want[name]
			if s.Money != w.money || s.MustMet != w.mustMet {
				t.Errorf("money %s, %d MUST met; want money %s, %d MUST met", s.Money, s.MustMet, w.money, w.mustMet)
			}
			got := byID(results)
			for _, id := range w.harmed {
				if got[id].Money != MoneyHarmed {
					t.Errorf("%s: money %s, want %s (saw %s)", id, got[id].Money, MoneyHarmed, got[id].Saw)
				}
			}
		})
	}
}

// attackLab serves the audit example name, resets its bank once (the
// harness's doing: conform never calls /lab) and runs every scenario
// with profile.
func attackLab(t *testing.T, name string, profile *Profile) []Result {
	t.Helper()
	ctx := context.Background()
	srv, err := auditserve.New(ctx, name, "adm_conform_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	customers, err := labclient.New(ts.URL+"/", srv.AdminToken(), ts.Client()).Reset(ctx, bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	env, err := auditserve.Profile(customers)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	results, err := Run(ctx, Options{URL: ts.URL, Profile: profile, Seed: 7, MaxOperations: 100, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestRun_Every409 attacks a middleware that answers every request of a
// key after the first 409 request-in-progress, for good
// (audit/testdata/every409): the original executes once and answers
// 201, and a client whose answer was lost can never learn its result.
// That is the harm, and lost-response finds it; key-reused-other-payload
// retries its original's 409 as a client would before it says the
// client is never told its result, and does not blame the edit, which
// one 409 cannot show.
func TestRun_Every409(t *testing.T) {
	profile, err := Load("testdata/profiles/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	results := attackLab(t, "every409", profile)
	got := byID(results)
	if r := got["lost-response"]; r.Money != MoneyHarmed {
		t.Errorf("lost-response: money %s, want %s (saw %s)", r.Money, MoneyHarmed, r.Saw)
	}
	r := got["key-reused-other-payload"]
	if r.Money != MoneyHarmed || strings.Contains(r.Saw, "the edit took its key") || !strings.Contains(r.Saw, "409 on each of 5 tries") {
		t.Errorf("key-reused-other-payload: money %s, saw %q; want harmed, from the original's 409 on each of its 5 tries, never blaming the edit", r.Money, r.Saw)
	}
	for _, id := range []string{"key-sf-string", "concurrent-duplicates", "two-principals-one-key", "two-principals-same-request"} {
		if got[id].Money != MoneyClean {
			t.Errorf("%s: money %s, want %s (saw %s)", id, got[id].Money, MoneyClean, got[id].Saw)
		}
	}
}

// TestRun_RemoteAddrLostResponse attacks a middleware that scopes keys by
// the client's remote address (audit/testdata/remoteaddr). A client whose
// answer was lost retries over a new connection, the old one being dead,
// so from another port: to this middleware the retry is a new request,
// and pays again. lost-response must send it so; a retry over the
// connection the answer was lost on came from the same address and found
// nothing wrong.
func TestRun_RemoteAddrLostResponse(t *testing.T) {
	profile, err := Load("testdata/profiles/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	r := byID(attackLab(t, "remoteaddr", profile))["lost-response"]
	m := regexp.MustCompile(`a move of (-?[0-9]+); the witness moved by (-?[0-9]+)`).FindStringSubmatch(r.Saw)
	if r.Money != MoneyHarmed || m == nil || m[2] != strconv.Itoa(2*atoi(t, m[1])) {
		t.Errorf("lost-response: money %s, saw %q; want harmed, the witness moved twice as far as due: each retry paid again", r.Money, r.Saw)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
