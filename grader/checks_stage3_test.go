package grader

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/sqlitedb"
)

// A release run while the request's own business transaction still holds
// SQLite's write lock waits the busy timeout and fails: the failure of
// S3.release-after-failure says so, and only then.
func TestLockedOut(t *testing.T) {
	locked := Response{Status: http.StatusServiceUnavailable, Body: []byte(`{"detail":"… database is locked (5) (SQLITE_BUSY)"}`)}
	stuck := Response{Status: http.StatusConflict, Body: []byte(`{"type":"/problems/request-in-progress"}`)}
	internal := Response{Status: http.StatusInternalServerError, Body: []byte(`{"type":"/problems/internal"}`)}
	tests := []struct {
		name string
		took time.Duration
		rs   []Response
		want bool
	}{
		{"the busy timeout, then a 500", sqlitedb.BusyTimeout + 50*time.Millisecond, []Response{internal, stuck}, true},
		{"a 503 that says locked", 20 * time.Millisecond, []Response{locked}, true},
		{"a quick 500 and a stuck key: no release at all", 15 * time.Millisecond, []Response{internal, stuck}, false},
		{"a slow core, far below the timeout", 2 * time.Second, []Response{internal, stuck}, false},
	}
	for _, tc := range tests {
		if got := lockedOut(tc.took, tc.rs...); got != tc.want {
			t.Errorf("%s: lockedOut = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A server whose transaction is open across the core call keeps the lab's
// reads waiting for every held original: S3.retry-during-original fails
// it, and every other check that holds an original says it could not
// observe and names that check, so the one finding is made once. A
// verdict that failed in every such check, or named a check the
// catalogue lacks, fails this test.
func TestReadsWaited_OneCheckFailsTheOthersCouldNotObserve(t *testing.T) {
	if _, ok := Lookup(heldReadsCheck); !ok {
		t.Fatalf("%s is not in the catalogue", heldReadsCheck)
	}
	var tt T
	var f *judging.Failure
	if err := tt.readsWaited(true, heldLatencies); !errors.As(err, &f) {
		t.Errorf("in %s: %v, want a failure", heldReadsCheck, err)
	}
	var u *judging.Unobserved
	if err := tt.readsWaited(false, heldLatencies); !errors.As(err, &u) || !strings.Contains(u.What, heldReadsCheck) {
		t.Errorf("in another check: %v, want could not observe, naming %s", err, heldReadsCheck)
	}
}

// The failure of S3.retry-during-original names the holds its tries
// used: 8.1s too when no shorter try could act and the read waited in
// that one, and not when it was never tried.
func TestReadsWaited_NamesTheHoldsUsed(t *testing.T) {
	var tt T
	var f *judging.Failure
	longer := append(append([]time.Duration{}, heldLatencies...), slowMachineLatency)
	if err := tt.readsWaited(true, longer); !errors.As(err, &f) {
		t.Fatalf("%v, want a failure", err)
	}
	if want := "for 300ms, 900ms, 2.7s and 8.1s;"; !strings.Contains(f.Sent, want) {
		t.Errorf("held at %v, the failure says:\n%s\nwant it to name %q", longer, f.Sent, want)
	}
	if err := tt.readsWaited(true, heldLatencies); !errors.As(err, &f) {
		t.Fatalf("%v, want a failure", err)
	}
	if want := "for 300ms, 900ms and 2.7s;"; !strings.Contains(f.Sent, want) {
		t.Errorf("held at %v, the failure says:\n%s\nwant it to name %q", heldLatencies, f.Sent, want)
	}
}
