package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/grader/dayplan"
	"idemlab/grader/gradertest"
	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/solutions/stage9"
)

// The soak's knobs. make soak passes them from SOAK_OPS, SOAK_KILLS and
// SEED; go test's -timeout bounds the whole run.
var (
	soakFlag = flag.Bool("soak", false, "run the soak tests (or set IDEMLAB_SOAK=1)")
	opsFlag  = flag.Int("soak.ops", 10_000, "operations in each soak day")
	killFlag = flag.Int("soak.kills", 10, "how many times the kill test kills the server")
	seedFlag = flag.Uint64("soak.seed", 0, "the seed (0: SEED, or a fresh one)")
)

var subject = grader.Subject{Stage: 9, Name: "solutions/stage9", New: stage9.New}

// TestMain lets this test binary serve solution 9 when the kill test
// starts it as a child process (see gradertest.Main).
func TestMain(m *testing.M) { gradertest.Main(m, subject) }

// soakOnly skips t unless the soak was asked for.
func soakOnly(t *testing.T) {
	t.Helper()
	if !*soakFlag && os.Getenv("IDEMLAB_SOAK") != "1" {
		t.Skip("soak test skipped: run it with make soak, go test ./soak -soak, or IDEMLAB_SOAK=1")
	}
}

// soakSeed is the run's seed, logged with the command that repeats it.
func soakSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		s, err := grader.RunSeed()
		if err != nil {
			t.Fatal(err)
		}
		seed = s
	}
	t.Logf("seed %d (repeat with make soak SEED=%d)", seed, seed)
	return seed
}

// soakContext ends a minute before go test's deadline, so that a soak
// that runs out of time fails with what it saw instead of a panic.
func soakContext(t *testing.T) context.Context {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// plainDay generates the day of a soak test that brings its own trouble:
// the default plan of -ops operations drawn from seed, with none of the
// plan's (no fault, respelling, double click, edit or late retry).
func plainDay(t *testing.T, seed uint64) *dayplan.Plan {
	t.Helper()
	params := dayplan.DefaultParams(seed, *opsFlag)
	params.FaultRate, params.RespellRate, params.DoubleClickRate, params.EditRate, params.LateRetryRate = 0, 0, 0, 0, 0
	plan, err := dayplan.Generate(seed, params)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// startCore starts a core ledger in this process, which outlives every
// server the test kills, as the grader's does, and returns its URL; it
// stops with the test.
func startCore(ctx context.Context, t *testing.T) string {
	t.Helper()
	_, url, stop, err := server.StartCore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// startSolution starts solution 9 as a child process of this test
// binary, on a database file of its own, posting to the core ledger at
// coreURL, sets its lab config to config, and returns it with a transport
// for clients that reach it; both end with the test.
func startSolution(ctx context.Context, t *testing.T, coreURL string, config map[string]string) (*targets.Child, *http.Transport) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := subject
	s.CoreURL = coreURL
	target, stop, err := targets.ChildProcess(self, labdb.TestTarget())(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	child := target.Child
	base := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	t.Cleanup(base.CloseIdleConnections)
	if err := configure(ctx, &http.Client{Transport: base}, child.URL, child.Admin, config); err != nil {
		t.Fatal(err)
	}
	return child, base
}

// configure sets the lab config of the server at url (POST /lab/config).
func configure(ctx context.Context, client *http.Client, url, admin string, config map[string]string) error {
	b, err := json.Marshal(config)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/lab/config", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("configure %v: %w", config, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("configure %v: %d %s", config, resp.StatusCode, bytes.TrimSpace(raw))
	}
	return nil
}

// coreFigures says what the core ledger holds at the end of a day
// replayed with a CoreURL, and fails t if the outbox had not drained: the
// reconciliation has already held every executed transfer to one posting.
func coreFigures(t *testing.T, res *replay.Result, rc replay.DayReconciliation) string {
	t.Helper()
	postings := 0
	for _, tr := range res.Core.Transfers {
		postings += tr.Postings
	}
	if res.Core.Pending > 0 {
		t.Errorf("%d outbox rows still unsent at the end of the day", res.Core.Pending)
	}
	return fmt.Sprintf("core ledger: %d transfers, %d postings; %d not posted, %d posted twice, %d posted and never executed; %d outbox rows unsent",
		len(res.Core.Transfers), postings, rc.Counts.NotPosted, rc.Counts.PostedTwice, rc.Counts.PostedUnexecuted, res.Core.Pending)
}

// report renders a day's reconciliation for the test log.
func report(rc replay.DayReconciliation) string {
	var b bytes.Buffer
	rc.WriteReport(&b, 3, "")
	return b.String()
}
