package grader

import (
	"errors"
	"testing"
)

// TestTold_BooksWhatTheClientWasTold: a run is booked by what its client
// was told: a 201, or another 2xx whose body names the op (an execution
// answered 200 OK). A 2xx naming another op is a wrong answer and no run
// of its own; a refusal or a 2xx naming no operation tells of none. The
// runs counted are the operations those answers name, each once.
func TestTold_BooksWhatTheClientWasTold(t *testing.T) {
	answer := func(status int, body string) Response { return Response{Status: status, Body: []byte(body)} }
	mine := `{"id":"tr_1","metadata":{"op":"op-a"}}`
	other := `{"id":"tr_2","metadata":{"op":"op-b"}}`
	for _, tc := range []struct {
		what string
		r    Response
		ran  bool
	}{
		{"a 201", answer(201, mine), true},
		{"a 200 naming the op", answer(200, mine), true},
		{"a 202 naming the op", answer(202, mine), true},
		{"a 200 naming another op", answer(200, other), false},
		{"a 200 naming no op", answer(200, `{"id":"tr_1"}`), false},
		{"a 409", answer(409, mine), false},
		{"no answer", Response{Err: errors.New("EOF")}, false},
	} {
		if got := toldRan(tc.r, "op-a"); got != tc.ran {
			t.Errorf("%s: toldRan = %v, want %v", tc.what, got, tc.ran)
		}
	}
	replay := answer(201, mine)
	if n := toldOps("op-a", answer(200, mine), replay, answer(409, "")); n != 1 {
		t.Errorf("an execution answered 200 and its replay: %d runs told, want 1", n)
	}
	if n := toldOps("op-a", answer(200, other), answer(409, "")); n != 0 {
		t.Errorf("another op's 200: %d runs told, want 0", n)
	}
	if n := toldOps("op-a", answer(200, mine), answer(200, `{"id":"tr_3","metadata":{"op":"op-a"}}`)); n != 2 {
		t.Errorf("two transfers named for op-a: %d runs told, want 2", n)
	}
	req := Request{Body: `{"account":"acc_1","amount":5}`}
	if !toldSentRan(answer(200, `{"id":"dp_1","account":"acc_1","amount":5}`), req) {
		t.Error("a 200 naming a deposit with no op, for a body with none: not told it ran")
	}
	if toldSentRan(answer(200, other), req) {
		t.Error("a 200 naming op-b, for a body with no op: told it ran")
	}
	if got := sentOp(Request{Body: `{"metadata":{"op":"op-a"}}`}); got != "op-a" {
		t.Errorf("sentOp = %q, want op-a", got)
	}
}
