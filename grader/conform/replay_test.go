package conform

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"idemlab/grader/conform/testdata/payserver"
)

// located serves payserver with a Location on each payment it makes,
// as an API that names the resource it created does, and an
// X-Request-Id of each answer's own. With lost, a replay (a key seen
// before) carries no Location and a Content-Type sniffed from its bytes,
// as from a server that stores a response's status and body but not its
// headers; with moved, a replay's Location names another payment.
type located struct {
	srv         *payserver.Server
	lost, moved bool
	mu          sync.Mutex
	seen        map[string]bool
	n           int
}

func (l *located) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		l.srv.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	l.srv.ServeHTTP(rec, r)
	l.mu.Lock()
	l.n++
	key := r.Header.Get("X-Api-Key") + "\x00" + r.Header.Get("Idempotency-Key")
	replay := l.seen[key]
	l.seen[key] = true
	w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", l.n))
	l.mu.Unlock()
	maps.Copy(w.Header(), rec.Header())
	var p payserver.Payment
	if rec.Code == http.StatusCreated && json.Unmarshal(rec.Body.Bytes(), &p) == nil {
		switch {
		case replay && l.lost:
			w.Header().Del("Content-Type")
		case replay && l.moved:
			w.Header().Set("Location", "/v1/payments/"+p.ID+"0")
		default:
			w.Header().Set("Location", "/v1/payments/"+p.ID)
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// TestReplay_KeepsTheResultsHeaders: a retry answered with the original's
// status and body but without its Location, or under another
// Content-Type, or with a Location that names another payment, is not
// the original's answer: retry-replayed misses its SHOULD, naming the
// header and both values, and concurrent-duplicates and
// expiry-as-published, which compare a retry with its original too,
// miss theirs. Headers of the exchange, a request id of each answer's
// own, are no difference.
func TestReplay_KeepsTheResultsHeaders(t *testing.T) {
	for _, c := range []struct {
		name        string
		lost, moved bool
		contract    string
		got         []string
	}{
		{"headers kept", false, false, ContractMet, nil},
		{"headers not stored", true, false, ContractUnmet, []string{
			`both retries: Content-Type "text/plain; charset=utf-8" (the original's "application/json") and Location none (the original's "/v1/payments/pay_`,
		}},
		{"another payment's Location", false, true, ContractUnmet, []string{`both retries: Location "/v1/payments/pay_`, `0" (the original's "/v1/payments/pay_`}},
	} {
		h := &located{srv: payserver.New(), lost: c.lost, moved: c.moved, seen: map[string]bool{}}
		for _, id := range []string{"retry-replayed", "concurrent-duplicates", "expiry-as-published"} {
			// One request at a time: every copy of concurrent-duplicates
			// after the first is a retry, answered with its result.
			r := runScenario(t, &serialized{h: h}, id)
			got := r.Contract
			if id == "expiry-as-published" {
				// The retry answered as the original is §2.6's, beside
				// the published policy's §2.3.
				got = r.Also.Contract
			}
			if got != c.contract || r.Money != MoneyClean {
				t.Errorf("%s, %s: contract %s, money %s; want %s, clean\n  got %s\n  saw %s", c.name, id, got, r.Money, c.contract, r.Got, r.Saw)
			}
			if testing.Verbose() {
				t.Logf("%s, %s: got %s", c.name, id, r.Got)
			}
			if id != "retry-replayed" {
				continue
			}
			for _, want := range c.got {
				if !strings.Contains(r.Got, want) {
					t.Errorf("%s: got %q\n  want it to say %q", c.name, r.Got, want)
				}
			}
			if !strings.Contains(r.Expected, "Content-Type, Location and Content-Location") {
				t.Errorf("%s: expected %q names no header", c.name, r.Expected)
			}
		}
	}
}

// TestHeadersDiffer: a media type is compared as RFC 9110 compares it,
// and a Location as the URL it names, so that a replay written another
// way is not taken for another answer; another value is.
func TestHeadersDiffer(t *testing.T) {
	base, _ := url.Parse("http://api.example/v1/payments")
	with := func(h ...string) answer {
		a := answer{status: 201, header: http.Header{}, url: base}
		for i := 0; i < len(h); i += 2 {
			a.header.Add(h[i], h[i+1])
		}
		return a
	}
	for _, c := range []struct {
		a, b answer
		want string
	}{
		{with("Content-Type", "application/json; charset=UTF-8"), with("Content-Type", "Application/JSON;charset=utf-8"), ""},
		{with("Content-Type", "application/json"), with("Content-Type", "application/json; charset=utf-8"), ""},
		{with("Content-Type", "application/problem+json; charset=UTF-8"), with("Content-Type", "application/problem+json"), ""},
		{with("Content-Type", "application/json; charset=iso-8859-1"), with("Content-Type", "application/json"), `Content-Type "application/json; charset=iso-8859-1" (the original's "application/json")`},
		{with("Content-Type", "text/plain; charset=utf-8"), with("Content-Type", "text/plain"), `Content-Type "text/plain; charset=utf-8" (the original's "text/plain")`},
		{with("Location", "/v1/payments/p1"), with("Location", "http://api.example/v1/payments/p1"), ""},
		{with("Location", "p1"), with("Location", "/v1/payments/p1"), `Location "p1" (the original's "/v1/payments/p1")`},
		{with("Content-Type", "application/json"), with("Content-Type", "application/problem+json"), `Content-Type "application/json" (the original's "application/problem+json")`},
		{with("X-Request-Id", "1", "Date", "x"), with("X-Request-Id", "2"), ""},
		{with(), with("Content-Location", "/v1/payments/p1"), `Content-Location none (the original's "/v1/payments/p1")`},
	} {
		if got := c.a.headersDiffer(c.b, "the original's"); got != c.want {
			t.Errorf("%v against %v: %q, want %q", c.a.header, c.b.header, got, c.want)
		}
	}
}
