package grader_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage6"
)

// noLocationOnReplays drops Location from every answer marked as a
// replay, the body kept byte for byte (audit/testdata/nolocation).
type noLocationOnReplays struct{ http.ResponseWriter }

func (d noLocationOnReplays) WriteHeader(status int) {
	if d.Header().Get("Idempotent-Replayed") != "" {
		d.Header().Del("Location")
	}
	d.ResponseWriter.WriteHeader(status)
}

// A replay without Location is S4.replay-byte-identical's contract
// difference, and that check's alone: the checks of scope, retention,
// purges and leases ask whether a replay is its client's own answer (its
// status, Content-Type and JSON value, whose id names the transfer), and
// each of them failed on the missing header before. (S6.lease-takeover-once
// and S6.crash-recovery, which crash the server, compare the same way:
// TestOwnAnswerMismatch_LeavesLocationToItsOwners.)
func TestLocation_OnlyTheReplayCheckOwnsIt(t *testing.T) {
	subject := grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}
	drop := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(noLocationOnReplays{w}, r)
		})
	}
	for _, id := range []string{"S5.customers-scoped", "S5.endpoints-scoped", "S5.retention-boundary",
		"S5.purge-keeps-in-progress", "S6.late-original-fenced", "S4.replay-byte-identical"} {
		t.Run(id, func(t *testing.T) {
			c, ok := grader.Lookup(id)
			if !ok {
				t.Fatalf("no check %s", id)
			}
			r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage6.New, drop))
			var f *judging.Failure
			failed := errors.As(r.Err, &f)
			if id == "S4.replay-byte-identical" {
				if !failed || f.Harm != "" {
					t.Errorf("a replay without Location: %v, want a contract difference", r.Err)
				}
				return
			}
			if r.Err != nil {
				t.Errorf("a replay without Location, its body its own: %v", r.Err)
			}
		})
	}
}
