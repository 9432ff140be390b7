package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/stage"
	"idemlab/solutions/stage5"
	"idemlab/solutions/stage9"
)

// replica serves solution 5 on db as one of the lab's replicas, with
// the admin token admin and the starting config cfg (nil: the default),
// until the test ends.
func replica(t *testing.T, db, admin string, role labctl.Role, cfg *stage.Config) *httptest.Server {
	t.Helper()
	srv, err := server.New(context.Background(), server.Options{Stage: stage5.New, DB: db, Lab: true,
		AdminToken: admin, Replica: role, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs
}

// replicasDB is a fresh database of the test target's engine that two
// servers can share: a file, or a new PostgreSQL database.
func replicasDB(t *testing.T) string {
	t.Helper()
	db, drop, err := labdb.Fresh(context.Background(), labdb.TestTarget(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drop(context.Background()) })
	return db
}

// labNow reads GET /lab/clock.
func labNow(t *testing.T, hs *httptest.Server, admin string) time.Time {
	t.Helper()
	code, body := call(t, hs, "GET", "/lab/clock", admin, "")
	var out struct{ Now time.Time }
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil {
		t.Fatalf("GET /lab/clock: %d %s", code, body)
	}
	return out.Now
}

// TestReplicas_ShareTheClockConfigAndResets moves the clock, changes the
// config and resets through one replica, and reads each through the
// other at once: a replica that kept its own lets a retry sent to the
// other after a reset find its key expired, and pay again.
func TestReplicas_ShareTheClockConfigAndResets(t *testing.T) {
	db, admin := replicasDB(t), server.NewAdminToken()
	r1 := replica(t, db, admin, labctl.Lead, nil)
	r2 := replica(t, db, admin, labctl.Join, nil)

	if code, body := call(t, r2, "POST", "/lab/clock", admin, `{"advance":"25h"}`); code != 200 {
		t.Fatalf("advance on r2: %d %s", code, body)
	}
	if d := labNow(t, r1, admin).Sub(time.Now()); d < 25*time.Hour-time.Minute {
		t.Fatalf("r2 moved the clock 25h ahead, r1 reads it %v ahead", d.Round(time.Second))
	}

	if code, body := call(t, r1, "POST", "/lab/config", admin, `{"core_latency":"200ms"}`); code != 200 {
		t.Fatalf("config on r1: %d %s", code, body)
	}
	if _, cfg := call(t, r2, "GET", "/lab/config", admin, ""); !strings.Contains(cfg, `"core_latency":"200ms"`) {
		t.Fatalf("r1 set core_latency 200ms, r2 has %s", cfg)
	}
	if code, body := call(t, r1, "POST", "/lab/config", admin, `{"core_latency":"0s"}`); code != 200 {
		t.Fatalf("config on r1: %d %s", code, body)
	}

	code, body := call(t, r1, "POST", "/lab/reset", admin, `{"seed":3,"customers":2,"accounts_per_customer":1}`)
	if code != 200 {
		t.Fatalf("reset on r1: %d %s", code, body)
	}
	if d := labNow(t, r2, admin).Sub(time.Now()); d > time.Minute {
		t.Fatalf("r1's reset put the clock back on real time, r2 reads it %v ahead", d.Round(time.Second))
	}
	var reset struct {
		Customers []struct {
			Token    string
			Accounts []string
		}
	}
	if err := json.Unmarshal([]byte(body), &reset); err != nil || len(reset.Customers) < 2 {
		t.Fatalf("reset: %s", body)
	}
	from, to := reset.Customers[0], reset.Customers[1]
	transfer := fmt.Sprintf(`{"from":%q,"to":%q,"amount":1000,"metadata":{"op":"demo-1"}}`, from.Accounts[0], to.Accounts[0])
	for i, hs := range []*httptest.Server{r1, r2} {
		if code, body := callAs(t, hs, "POST", "/transfers", "Bearer "+from.Token, "demo-1", transfer); code != 201 && code != 200 {
			t.Fatalf("transfer %d: %d %s", i+1, code, body)
		}
	}
	_, state := call(t, r2, "GET", "/lab/state", admin, "")
	var st struct{ Executions map[string]int64 }
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		t.Fatal(err)
	}
	if n := st.Executions["demo-1"]; n != 1 {
		t.Fatalf("one transfer sent to r1 then retried on r2 executed %d times", n)
	}
}

// TestReplicas_ALeadStartsTheConfigAJoinerAdoptsIt starts a lab's lead
// replica on a database where a lab ran before with another config,
// then a replica that joins it: the lead's config holds on both (the
// config does not outlive the lab that set it), and a replica started
// again adopts the one in force, not its own.
func TestReplicas_ALeadStartsTheConfigAJoinerAdoptsIt(t *testing.T) {
	db, admin := replicasDB(t), server.NewAdminToken()
	before := replica(t, db, admin, labctl.Lead, nil)
	if code, body := call(t, before, "POST", "/lab/config", admin, `{"lease":"5s"}`); code != 200 {
		t.Fatalf("config: %d %s", code, body)
	}
	before.Close()

	r1 := replica(t, db, admin, labctl.Lead, nil)
	fast := stage.DefaultConfig()
	fast.CoreLatency = 50 * time.Millisecond
	r2 := replica(t, db, admin, labctl.Join, &fast)
	for name, hs := range map[string]*httptest.Server{"r1": r1, "r2": r2} {
		if _, cfg := call(t, hs, "GET", "/lab/config", admin, ""); cfg != `{"core_latency":"0s","retention":"24h0m0s","lease":"30s","retry_horizon":"1h0m0s"}`+"\n" {
			t.Fatalf("a new lab's %s has config %s, want the lead's default", name, cfg)
		}
	}
}

// TestReplicas_AResetDisarmsEachReplicasOwnFaultsNotTheCoreArmedSince
// arms a fault in one replica, resets the lab through the other, then
// arms poison-posting on the core they share: the first replica's next
// request disarms its own fault, and leaves the core armed. It catches a
// replica that does not catch up with another's reset (its fault stays
// armed), and one that disarms the shared core as it catches up (the
// poison armed after the reset is lost, and no dead letter comes).
func TestReplicas_AResetDisarmsEachReplicasOwnFaultsNotTheCoreArmedSince(t *testing.T) {
	c, coreURL, stopCore, err := server.StartCore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopCore)
	db, admin := replicasDB(t), server.NewAdminToken()
	start := func(role labctl.Role) *httptest.Server {
		// An hour between relay passes: only the requests below sync.
		srv, err := server.New(context.Background(), server.Options{Stage: stage9.New, DB: db, Lab: true,
			AdminToken: admin, Replica: role, CoreURL: coreURL, RelayInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() { hs.Close(); srv.Close() })
		return hs
	}
	r1, r2 := start(labctl.Lead), start(labctl.Join)
	for _, step := range []struct {
		hs                 *httptest.Server
		method, path, body string
	}{
		{r2, "POST", "/lab/faults", `{"point":"fail-in-transfer","count":1}`},
		{r1, "POST", "/lab/reset", `{"seed":3,"customers":2,"accounts_per_customer":1}`},
		{r1, "POST", "/lab/faults", `{"point":"poison-posting","count":1}`},
	} {
		if code, body := call(t, step.hs, step.method, step.path, admin, step.body); code != 200 {
			t.Fatalf("%s %s: %d %s", step.method, step.path, code, body)
		}
	}
	code, body := call(t, r2, "GET", "/lab/faults", admin, "")
	var got struct{ Armed []labctl.ArmedFault }
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("GET /lab/faults: %d %s", code, body)
	}
	want := []labctl.ArmedFault{{Point: labctl.PoisonPosting, Count: 1}}
	if fmt.Sprint(got.Armed) != fmt.Sprint(want) || c.Faults.PoisonNextLeft() != 1 {
		t.Errorf("the second replica reports %v armed after the reset through the first, and the core %d postings to refuse; want %v: its own fault disarmed, the poison armed since kept",
			got.Armed, c.Faults.PoisonNextLeft(), want)
	}
}

// TestReset_ACoreThatDoesNotAnswerLeavesANote: a reset goes on when the
// core ledger cannot be told to disarm poison-posting (it is restarting,
// say), and its answer says so. It catches a reset that fails for it, and
// one that keeps it quiet.
func TestReset_ACoreThatDoesNotAnswerLeavesANote(t *testing.T) {
	srv, err := server.New(context.Background(), server.Options{Stage: stage9.New, DB: ":memory:", Lab: true,
		CoreURL: "http://127.0.0.1:1", RelayInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	code, body := call(t, hs, "POST", "/lab/reset", srv.AdminToken(), `{"seed":3}`)
	var out struct {
		Customers []json.RawMessage
		Note      string
	}
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out.Customers) == 0 ||
		!strings.Contains(out.Note, "could not be told to disarm poison-posting") {
		t.Errorf("POST /lab/reset with the core unreachable: %d %s; want 200, the customers, and a note on the core", code, body)
	}
}
