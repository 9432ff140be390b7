package grader

import (
	"net/http"
	"testing"

	"idemlab/grader/judging"
)

// TestReplayHarm_ComparesBodiesAsTheOtherChecksDo: a replay's harm reads
// its body as replayValueMismatch does (canonical.Form): the same JSON
// value in other bytes says the same, another value does not, and a body
// that is not JSON says the same only in the same bytes. A replay of a
// body that is not JSON, byte for byte, whose headers differ, is a
// contract difference: its client learns its own operation's result.
func TestReplayHarm_ComparesBodiesAsTheOtherChecksDo(t *testing.T) {
	answer := func(ct, body string) Response {
		return Response{Status: 201, Header: http.Header{"Content-Type": {ct}}, Body: []byte(body)}
	}
	for _, tc := range []struct {
		name       string
		orig, body string
		want       judging.Harm
	}{
		{"the same value, respelled", `{"id":"tr_1","amount":5}`, `{ "amount": 5, "id": "tr_1" }`, ""},
		{"another value", `{"id":"tr_1","amount":5}`, `{"id":"tr_2","amount":5}`, judging.WrongAnswer},
		{"not JSON, the same bytes", ")]}'\n{\"id\":\"tr_1\"}", ")]}'\n{\"id\":\"tr_1\"}", ""},
		{"not JSON, other bytes", ")]}'\n{\"id\":\"tr_1\"}", ")]}'\n{\"id\":\"tr_2\"}", judging.WrongAnswer},
		{"JSON for a body that was not", ")]}'\n{\"id\":\"tr_1\"}", `{"id":"tr_1"}`, judging.WrongAnswer},
	} {
		orig := answer("application/json", tc.orig)
		replay := answer("text/plain", tc.body)
		if got := replayHarm(orig, replay); got != tc.want {
			t.Errorf("%s: harm %q, want %q", tc.name, got, tc.want)
		}
	}
}
