package labctl_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

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
