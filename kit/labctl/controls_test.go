package labctl_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// TestControls_RefuseBodiesThatAreNotOneObject: every POST control of the
// lab, sent a body that is not one JSON object (a member twice, a second
// object or anything else after the first, invalid UTF-8, null, an
// array), or one with a member it does not know, gets 400
// invalid-request as a problem and changes nothing: the bank, its tokens,
// the config, the faults and the clock are as they were. A control that
// decoded the first object and ignored the rest, or took the last of two
// members, reset the bank, moved the clock, changed the config or armed a
// fault; one that read no body purged whatever it was sent.
func TestControls_RefuseBodiesThatAreNotOneObject(t *testing.T) {
	l := startLab(t)
	bodies := map[string][]string{
		"/lab/reset":          {`{"seed":1,"seed":2}`, `{"seed":1}{"seed":2}`, `{"seed":1} x`, `null`},
		"/lab/clock":          {`{"advance":"1h","advance":"2h"}`, `{"advance":"1h"}{}`, `{"advance":"1h"} x`, `null`},
		"/lab/config":         {`{"retention":"48h","retention":"72h"}`, `{"retention":"48h"}{}`, `{"retention":"48h"} x`},
		"/lab/faults":         {`{"point":"crash-in-transfer","point":"fail-in-transfer"}`, `{"point":"fail-in-transfer"}{}`, `{"point":"fail-in-transfer"} x`},
		"/lab/purge":          {`{"x":1}`, `{}{}`, `{} x`, `[]`, `null`},
		"/lab/outbox/redrive": {`{"transfer_id":"tr_1","transfer_id":"tr_2"}`, "{\"transfer_id\":\"tr_\xff\"}"},
	}
	for path := range bodies {
		bodies[path] = append(bodies[path], "{\"\xff\":1}", `[{}]`)
	}
	state := func() (string, time.Time) {
		t.Helper()
		status, _, body := l.get(t, "/lab/state", l.admin)
		var st labctl.State
		if err := json.Unmarshal(body, &st); err != nil || status != http.StatusOK {
			t.Fatalf("GET /lab/state: %d %s", status, body)
		}
		now, err := time.Parse(time.RFC3339Nano, st.Now)
		if err != nil {
			t.Fatal(err)
		}
		st.Now = ""
		b, _ := json.Marshal(st)
		return string(b), now
	}
	before, then := state()
	for path, list := range bodies {
		for _, body := range list {
			status, ctype, answer := l.post(t, path, l.admin, body)
			var p problem.Body
			json.Unmarshal(answer, &p)
			if status != http.StatusBadRequest || ctype != problem.ContentType || p.Type != problem.InvalidRequest.URI() || p.Detail == "" {
				t.Errorf("POST %s %q: %d %s %s; want 400 %s with a detail", path, body, status, ctype, answer, problem.InvalidRequest.URI())
			}
		}
	}
	after, now := state()
	if after != before || now.Sub(then) > time.Hour/2 {
		t.Errorf("a refused control changed the lab:\nbefore %s at %v\nafter  %s at %v", before, then, after, now)
	}
}

// TestClock_RefusesAMoveOutOfRange: the lab clock moves on a century, and
// another, as far as clock.MaxOffset; a move past it, a set to the year 1
// or 9999, and an advance that would wrap the offset round each get 400
// invalid-request as a problem, and the clock stays where it was. A
// clock that kept whatever offset it computed read 1734 for both sets,
// and went back 292 years on the advance.
func TestClock_RefusesAMoveOutOfRange(t *testing.T) {
	l := startLab(t)
	move := func(body string) (int, time.Time, problem.Body) {
		t.Helper()
		status, _, answer := l.post(t, "/lab/clock", l.admin, body)
		var got struct {
			Now string `json:"now"`
		}
		var p problem.Body
		json.Unmarshal(answer, &got)
		json.Unmarshal(answer, &p)
		now, _ := time.Parse(time.RFC3339Nano, got.Now)
		return status, now, p
	}
	century := `{"advance":"876000h"}`
	_, start, _ := move(`{}`)
	for range 2 {
		if status, _, p := move(century); status != http.StatusOK {
			t.Fatalf("POST /lab/clock %s: %d %+v; want 200", century, status, p)
		}
	}
	for _, body := range []string{`{"advance":"1s"}`, `{"advance":"2562047h"}`, `{"set":"0001-01-01T00:00:00Z"}`, `{"set":"9999-12-31T23:59:59Z"}`} {
		if status, _, p := move(body); status != http.StatusBadRequest || p.Type != problem.InvalidRequest.URI() || p.Detail == "" {
			t.Errorf("POST /lab/clock %s: %d %+v; want 400 %s with a detail", body, status, p, problem.InvalidRequest.URI())
		}
	}
	_, now, _ := move(`{}`)
	if want := start.Add(clock.MaxOffset); now.Before(want) || now.After(want.Add(time.Hour)) {
		t.Errorf("the clock reads %v after the refused moves; want %v, two centuries on from %v", now, want, start)
	}
}
