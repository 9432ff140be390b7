package conform

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"idemlab/grader/conform/testdata/payserver"
)

// envRestart is the URL TestHelperRestart posts to, when it runs as the
// restart command of a profile.
const envRestart = "CONFORM_TEST_RESTART"

// TestHelperRestart is not a test: it is the restart command of
// TestRun_RetryAfterRestart's profiles, run as this test binary in a
// process of its own, which asks the test's server to restart.
func TestHelperRestart(t *testing.T) {
	url := os.Getenv(envRestart)
	if url == "" {
		t.Skip("the restart command of TestRun_RetryAfterRestart, run by it")
	}
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		fmt.Fprintln(os.Stderr, "restart:", err, resp)
		os.Exit(3)
	}
}

// TestRun_RetryAfterRestart: the payserver keeps its payments in a file
// and its keys in memory, so a restart between an operation and its
// retry pays it again, and retry-after-restart finds the double; a
// restart command that leaves the keys (it restarts nothing) is clean;
// one that fails says it could not observe; without one, the scenario
// is not tried and says why.
func TestRun_RetryAfterRestart(t *testing.T) {
	for _, c := range []struct {
		name, restart string
		money         string
		notTried      string
	}{
		{"keys lost in the restart", "", MoneyHarmed, ""},
		{"nothing restarted", "true", MoneyClean, ""},
		{"a command that leaves a child holding its output", "sleep 5 &", MoneyClean, ""},
		{"a restart command that fails", "echo no such server >&2; exit 3", MoneyUnobserved, ""},
		{"no restart command", "-", "", "could not observe"},
	} {
		api, restart := restartable(t)
		p, err := Load("testdata/profiles/payserver.json")
		if err != nil {
			t.Fatal(err)
		}
		switch c.restart {
		case "":
			p.Restart = restart
		case "-":
			p.Restart = ""
		default:
			p.Restart = c.restart
		}
		r := byID(runAgainst(t, api, p))["retry-after-restart"]
		if r.Money != c.money || !strings.Contains(r.NotTried, c.notTried) || (c.notTried == "") != (r.NotTried == "") {
			t.Errorf("%s: money %q, not tried %q; want money %q, not tried %q\n  got %s\n  saw %s", c.name, r.Money, r.NotTried, c.money, c.notTried, r.Got, r.Saw)
		}
	}
}

// restartable returns a payserver that keeps its payments in a file of
// its own, and the shell command that restarts it: the server is opened
// again on the file, its keys gone.
func restartable(t *testing.T) (http.Handler, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "payments.jsonl")
	first, err := payserver.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	var current atomic.Pointer[payserver.Server]
	current.Store(first)
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		again, err := payserver.Open(file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		current.Store(again)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(control.Close)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { current.Load().ServeHTTP(w, r) })
	self := "'" + strings.ReplaceAll(os.Args[0], "'", `'\''`) + "'"
	return api, fmt.Sprintf("%s=%s %s -test.run='^TestHelperRestart$'", envRestart, control.URL, self)
}
