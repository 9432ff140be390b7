package grader

import (
	"net/http"
	"strings"
	"testing"

	"idemlab/grader/judging"
	"idemlab/kit/problem"
)

// S8.late-original judges a round only when the retry took the key over
// and paid while the original waited (when both were told one transfer
// ran, the execution events say the retry's attempt paid), and then the
// stored answer first, compared with what the retry was told (a 200 OK
// that names its transfer is told it ran, its status judged apart):
// a late original's refusal written over the retry's 201 is a wrong
// answer to every later retry, whatever the original itself was told.
// The retry's value replayed in another 2xx (201 for its 200, 200 for its
// 201) is a contract difference the verdict returns for its caller to
// record, and the verdict goes on to the original's answer: before, a 200
// replayed 201 was passed over, and a 201 replayed 200 stopped the check.
func TestLateRefusalVerdict(t *testing.T) {
	created := func(id string) Response {
		return Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/transfers/" + id}},
			Body: []byte(`{"id":"` + id + `"}`)}
	}
	refused := func(ptype, location string) Response {
		return Response{Status: http.StatusConflict, Header: http.Header{"Content-Type": {problem.ContentType}, "Location": {location}},
			Body: []byte(`{"type":"` + ptype + `"}`)}
	}
	inProgress, duplicate := refused(pInProgress, ""), refused(pDuplicateReference, "/transfers/t-2")
	unavailable := Response{Status: http.StatusServiceUnavailable}
	// An execution answered 200 OK, naming its transfer and op: told it
	// ran, in another status than the contract's.
	ok := func(id string) Response {
		r := created(id)
		r.Status, r.Body = http.StatusOK, []byte(`{"id":"`+id+`","metadata":{"op":"op-1"}}`)
		return r
	}
	replayed := func(id string) Response {
		r := ok(id)
		r.Status = http.StatusCreated
		return r
	}
	// The retry's 201 replayed in 200 OK, the same value.
	createdAsOK := func(id string) Response {
		r := created(id)
		r.Status = http.StatusOK
		return r
	}
	tests := []struct {
		name               string
		first, retry, last Response
		tookOver           bool
		retryPaid          bool
		conclusive         bool
		harm               judging.Harm
		wantsFail          bool
		differs            bool
	}{
		{"the retry replays the original, which completed first", created("t-1"), created("t-1"), created("t-1"), false, false, false, "", false, false},
		{"the retry replays the original, which paid while it waited", created("t-1"), created("t-1"), created("t-1"), true, false, false, "", false, false},
		{"the events name the retry, but the original answered first", created("t-2"), created("t-2"), created("t-2"), false, true, false, "", false, false},
		{"fenced: the original told the retry's 201", created("t-2"), created("t-2"), created("t-2"), true, true, true, "", false, false},
		{"fenced: the original told the retry's 201, the last retry not", created("t-2"), created("t-2"), duplicate, true, true, true, judging.WrongAnswer, true, false},
		{"fenced: the original told 409 request-in-progress", inProgress, created("t-2"), created("t-2"), true, true, true, "", false, false},
		{"fenced: the original's store failed", unavailable, created("t-2"), created("t-2"), true, true, true, "", false, false},
		{"fenced, but the original answered before the retry: not the late refusal", inProgress, created("t-2"), created("t-2"), false, true, false, "", false, false},
		{"unfenced: the refusal stored over the retry's 201", duplicate, created("t-2"), duplicate, true, true, true, judging.WrongAnswer, true, false},
		{"fenced, and the original told it was refused", duplicate, created("t-2"), created("t-2"), true, true, true, judging.WrongAnswer, true, false},
		{"the retry that took over does not pay", inProgress, inProgress, inProgress, true, false, true, "", true, false},
		{"the retry told 200 that it paid, replayed 201 to the last retry", inProgress, ok("t-2"), replayed("t-2"), true, false, true, "", false, true},
		{"the retry told 200 that it paid, replayed 201, and the original told it was refused", duplicate, ok("t-2"), replayed("t-2"), true, false, true, judging.WrongAnswer, true, true},
		{"the retry's 201 replayed 200 to the last retry", inProgress, created("t-2"), createdAsOK("t-2"), true, false, true, "", false, true},
		{"the retry told 200 that it paid, and 200 again to the last retry", inProgress, ok("t-2"), ok("t-2"), true, false, true, "", false, false},
		{"the retry told 200 that it paid, the last retry told it was refused", inProgress, ok("t-2"), duplicate, true, false, true, judging.WrongAnswer, true, false},
		{"the original told 200 that it paid, the retry replays it", ok("t-1"), replayed("t-1"), replayed("t-1"), false, false, false, "", false, false},
	}
	for _, tc := range tests {
		conclusive, harm, want, differs := lateRefusalVerdict("op-1", tc.first, tc.retry, tc.last, tc.tookOver, tc.retryPaid)
		if conclusive != tc.conclusive || harm != tc.harm || (want != "") != tc.wantsFail || (differs != "") != tc.differs {
			t.Errorf("%s: conclusive %v, harm %q, want %q, differs %q; expected conclusive %v, harm %q, a failure %v, a difference %v",
				tc.name, conclusive, harm, want, differs, tc.conclusive, tc.harm, tc.wantsFail, tc.differs)
		}
	}
}

// A replay's difference names the answer it was compared with: a check
// that compares the last retry with a retry's 201 says so, not "the
// original", which in its story is another request.
func TestReplayMismatch_NamesWhatItComparesWith(t *testing.T) {
	stored := Response{Status: http.StatusCreated, Header: http.Header{"Location": {"/transfers/t-1"}}, Body: []byte(`{"id":"t-1"}`)}
	moved := Response{Status: http.StatusCreated, Header: http.Header{"Location": {"/transfers/t-2"}}, Body: []byte(`{"id":"t-1"}`)}
	refused := Response{Status: http.StatusConflict, Body: []byte(`{}`)}
	for _, tc := range []struct {
		orig, replay Response
		whose, want  string
	}{
		{stored, refused, "the retry's", "status 409, the retry's was 201"},
		{stored, refused, "the original", "status 409, the original was 201"},
		{stored, moved, "the original", `Location "/transfers/t-2", the original was "/transfers/t-1"`},
		{stored, stored, "the retry's", ""},
	} {
		if got := replayMismatch(tc.orig, tc.replay, tc.whose); got != tc.want {
			t.Errorf("replayMismatch, %s: %q, want %q", tc.whose, got, tc.want)
		}
	}
}

// replayMismatch compares bytes, S4.replay-byte-identical's question;
// replayValueMismatch, for the other checks, compares what a replay says:
// a body respelled (members in another order, other spacing) says the
// same, one with another balance_after does not.
func TestReplayValueMismatch_ComparesWhatTheBodySays(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Location": {"/transfers/t-1"}}
	stored := Response{Status: http.StatusCreated, Header: h, Body: []byte(`{"id":"t-1","balance_after":100}`)}
	respelled := Response{Status: http.StatusCreated, Header: h, Body: []byte("{\n  \"balance_after\": 100,\n  \"id\": \"t-1\"\n}")}
	recomputed := Response{Status: http.StatusCreated, Header: h, Body: []byte(`{"balance_after":101,"id":"t-1"}`)}
	if d := replayMismatch(stored, respelled, "the original"); !strings.Contains(d, "body differs") {
		t.Errorf("replayMismatch of a respelled body: %q, want a body that differs", d)
	}
	if d := replayValueMismatch(stored, respelled, "the original"); d != "" {
		t.Errorf("replayValueMismatch of a respelled body: %q, want none", d)
	}
	if d := replayValueMismatch(stored, recomputed, "the original"); !strings.Contains(d, "body says otherwise") {
		t.Errorf("replayValueMismatch of another balance_after: %q, want a body that says otherwise", d)
	}
}

// A body that is not one JSON value, or none at all, has no RFC 8785 form:
// replayValueMismatch compares its bytes, as replayMismatch does. A
// replay cut short or with bytes after its value differs from a stored
// JSON answer; an answer with no body replayed with none is the same.
func TestReplayValueMismatch_ABodyThatIsNotJSONComparesBytes(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}}
	answer := func(body string) Response { return Response{Status: http.StatusCreated, Header: h, Body: []byte(body)} }
	tests := []struct {
		orig, replay string
		same         bool
	}{
		{"", "", true},
		{"", "{}", false},
		{`{"id":"t-1"}`, "", false},
		{`{"id":"t-1"}`, `{"id":"t-1"`, false},
		{`{"id":"t-1"}`, `{"id":"t-1"}{"id":"t-2"}`, false},
		{"ok\n", "ok\n", true},
		{"ok\n", "ok", false},
	}
	for _, tc := range tests {
		d := replayValueMismatch(answer(tc.orig), answer(tc.replay), "the original")
		if (d == "") != tc.same {
			t.Errorf("replayValueMismatch(%q, %q) = %q, want the same: %v", tc.orig, tc.replay, d, tc.same)
		}
	}
}
