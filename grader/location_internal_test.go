package grader

import (
	"net/http"
	"strings"
	"testing"
)

// Location is the first answer's (S0.happy-path) and the replay's
// (S4.replay-byte-identical) to judge, and the claims that name it
// (a refusal's, a duplicate-reference's) compare it with
// replayValueMismatch; every other check asks ownAnswerMismatch, which
// sees a replay without Location, its body its own, as its client's own
// answer, and one with another body as not.
func TestOwnAnswerMismatch_LeavesLocationToItsOwners(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Location": {"/transfers/t-1"}}
	stored := Response{Status: http.StatusCreated, Header: h, Body: []byte(`{"id":"t-1"}`)}
	bare := Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"t-1"}`)}
	other := Response{Status: http.StatusCreated, Header: h, Body: []byte(`{"id":"t-2"}`)}
	if d := ownAnswerMismatch(stored, bare, "the original"); d != "" {
		t.Errorf("ownAnswerMismatch of a replay without Location: %q, want none", d)
	}
	if d := ownAnswerMismatch(stored, other, "the original"); !strings.Contains(d, "body says otherwise") {
		t.Errorf("ownAnswerMismatch of another transfer's body: %q, want a body that says otherwise", d)
	}
	for name, f := range map[string]func(Response, Response, string) string{"replayMismatch": replayMismatch, "replayValueMismatch": replayValueMismatch} {
		if d := f(stored, bare, "the original"); !strings.Contains(d, `Location "", the original was "/transfers/t-1"`) {
			t.Errorf("%s of a replay without Location: %q, want the Location named", name, d)
		}
	}
}
