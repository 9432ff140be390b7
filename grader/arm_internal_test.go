package grader

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"idemlab/grader/targets"
	"idemlab/kit/labctl"
)

// TestArm_DisarmsOnceTheCheckHasEnded: a check whose time is up (or whose
// run was stopped) still disarms the faults it deferred disarming, and
// arms none. Caught: a disarm sent with the check's ended context never
// reaches the server, and a statement the fault holds waits for the
// fault's own cap, the server's stop waiting for its request.
func TestArm_DisarmsOnceTheCheckHasEnded(t *testing.T) {
	got := make(chan int64, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Count int64 }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		got <- body.Count
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"armed":[]}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := &T{ctx: ctx, target: &targets.Target{URL: srv.URL, Client: srv.Client(), Replicas: []string{srv.URL}}}
	if err := c.Arm(labctl.HeldKeyDelete, 1); err == nil {
		t.Error("Arm(held-key-delete, 1) with the check ended: no error")
	}
	if err := c.Arm(labctl.HeldKeyDelete, 0); err != nil {
		t.Fatalf("Arm(held-key-delete, 0) with the check ended: %v", err)
	}
	if err := c.ArmEverywhere(labctl.HeldKeyDelete, 0); err != nil {
		t.Fatalf("ArmEverywhere(held-key-delete, 0) with the check ended: %v", err)
	}
	close(got)
	var counts []int64
	for n := range got {
		counts = append(counts, n)
	}
	if len(counts) != 3 || counts[0] != 0 || counts[1] != 0 || counts[2] != 0 {
		t.Errorf("the server was sent counts %v; want the three disarms, [0 0 0]", counts)
	}
}
