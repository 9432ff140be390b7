package grader

import (
	"net/http"
	"testing"

	"idemlab/kit/labctl"
	"idemlab/kit/problem"
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

// S6.late-original-fenced judges a round only when the retry took the
// key over. A retry that came after the original had completed replays
// its 201, and on a busy machine that replay can be answered before the
// check sees the original's answer: the round observed nothing, and a
// completion that checks no lease owner must not pass for it.
func TestLateOriginalVerdict(t *testing.T) {
	created := func(id string) Response {
		return Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"` + id + `"}`)}
	}
	inProgress := Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {problem.ContentType}}, Body: []byte(`{"type":"` + pInProgress + `"}`)}
	tests := []struct {
		name                  string
		first, third, second  Response
		tookOver              bool
		conclusive, wantsFail bool
	}{
		{"the retry replays the original, answered before the check looked", created("t-1"), created("t-1"), created("t-1"), false, false, false},
		{"the retry replays the original, answered after", created("t-1"), created("t-1"), created("t-1"), true, false, false},
		{"the retry answered 409 before the original woke up", created("t-1"), created("t-1"), inProgress, false, true, false},
		{"fenced: the original refused, the retry executes", inProgress, inProgress, created("t-2"), true, true, false},
		{"unfenced: both complete", created("t-1"), inProgress, created("t-2"), true, true, true},
		{"released without owner: the third attempt executes afresh", inProgress, created("t-3"), created("t-2"), true, true, true},
		{"the retry that took over does not execute", inProgress, inProgress, inProgress, true, true, true},
	}
	for _, tc := range tests {
		conclusive, want := lateOriginalVerdict(tc.first, tc.third, tc.second, tc.tookOver)
		if conclusive != tc.conclusive || (want != "") != tc.wantsFail {
			t.Errorf("%s: conclusive %v, want %q; expected conclusive %v, a failure %v", tc.name, conclusive, want, tc.conclusive, tc.wantsFail)
		}
	}
}
