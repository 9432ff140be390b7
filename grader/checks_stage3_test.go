package grader

import (
	"net/http"
	"testing"
	"time"

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
