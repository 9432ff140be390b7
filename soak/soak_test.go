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
	"idemlab/kit/labdb"
	"idemlab/solutions/stage6"
)

// The soak's knobs. make soak passes them from SOAK_OPS, SOAK_KILLS and
// SEED; go test's -timeout bounds the whole run.
var (
	soakFlag = flag.Bool("soak", false, "run the soak tests (or set IDEMLAB_SOAK=1)")
	opsFlag  = flag.Int("soak.ops", 10_000, "operations in each soak day")
	killFlag = flag.Int("soak.kills", 10, "how many times the kill test kills the server")
	seedFlag = flag.Uint64("soak.seed", 0, "the seed (0: SEED, or a fresh one)")
)

var subject = grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}

// TestMain lets this test binary serve solution 6 when the kill test
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

// startSolution starts solution 6 as a child process of this test
// binary, on a database file of its own, sets its lab config to config,
// and returns it with a transport for clients that reach it; both end
// with the test.
func startSolution(ctx context.Context, t *testing.T, config map[string]string) (*grader.Child, *http.Transport) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child, err := grader.StartChild(ctx, self, t.TempDir(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(child.DropDB)
	t.Cleanup(child.Kill)
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

// report renders a day's reconciliation for the test log.
func report(rc grader.DayReconciliation) string {
	var b bytes.Buffer
	rc.WriteReport(&b, 3)
	return b.String()
}
