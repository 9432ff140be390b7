package grader

import (
	"testing"

	"idemlab/kit/labctl"
)

// S6.lease-takeover-once counts a payment's core calls from the moment
// its original is held: an original seen in progress but not yet on the
// core would call it after the count began, and a correct server's one
// takeover would read as two. Only an original whose call is counted is
// held.
func TestHeldOnCore(t *testing.T) {
	inProgress := []map[string]any{{"rowid": int64(1), "key": "k-1", "state": "in_progress"}}
	tests := []struct {
		name string
		st   labctl.State
		want bool
	}{
		{"in progress, its core call counted", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{"op-1": 1}}, true},
		{"in progress, between its claim and its core call", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{}}, false},
		{"in progress, another op's core call counted", labctl.State{Keys: inProgress, CoreCalls: map[string]int64{"op-2": 1}}, false},
		{"a core call, no key in progress", labctl.State{CoreCalls: map[string]int64{"op-1": 1}}, false},
	}
	for _, tc := range tests {
		if got := heldOnCore(tc.st, "k-1", "op-1"); got != tc.want {
			t.Errorf("%s: heldOnCore = %v, want %v", tc.name, got, tc.want)
		}
	}
}
