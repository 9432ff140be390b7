package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/payserver"
)

// paged serves h with its list of payments cut to one page of page
// items, the oldest (or, with newest, the newest first), as a list
// endpoint that returns at most one page does, and the number of them
// all in "total". With who, only that caller's list is cut.
type paged struct {
	h      http.Handler
	page   int
	newest bool
	who    string
}

func (p paged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || (p.who != "" && r.Header.Get("X-Api-Key") != p.who) {
		p.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	total := len(list.Items)
	items := append([]json.RawMessage{}, list.Items...)
	if p.newest {
		slices.Reverse(items)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"items": items[:min(len(items), p.page)], "total": total})
}

// prefill makes n payments for who on srv, before any run.
func prefill(t *testing.T, srv http.Handler, who string, n int) {
	t.Helper()
	for k := range n {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/payments", strings.NewReader(`{"payee":"earlier","cents":100}`))
		req.Header.Set("X-Api-Key", who)
		req.Header.Set("Idempotency-Key", fmt.Sprintf(`"earlier-%s-%d"`, who, k))
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("prefill: %d %s", rec.Code, rec.Body)
		}
	}
}

// TestRun_AListThatIsOnePageStopsTheRun: a right API whose list returns
// at most one page, its oldest items or its newest, full from the start
// or filled by the run, stops growing, and what it cannot show was
// reported money harmed. The run stops instead, naming the page and
// what to point the witness at, and reports no money harmed; a count
// pointed at the API's total judges the same API valid.
func TestRun_AListThatIsOnePageStopsTheRun(t *testing.T) {
	for _, c := range []struct {
		name         string
		page, before int
		newest       bool
	}{
		{"the oldest, full from the start", 5, 5, false},
		{"the newest, full from the start", 5, 5, true},
		{"the oldest, filled by the run", 8, 5, false},
		{"the newest, filled by the run", 8, 5, true},
	} {
		srv := payserver.New()
		prefill(t, srv, "alice", c.before)
		p, err := Load("testdata/profiles/payserver.json")
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(paged{h: srv, page: c.page, newest: c.newest})
		results, err := Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 7, MaxOperations: 100, Timeout: 10 * time.Second})
		ts.Close()
		if testing.Verbose() {
			t.Logf("%s: %v", c.name, err)
		}
		want := fmt.Sprintf("alice's list (/items of GET /v1/payments) stopped growing at %d items", c.page)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"/total"`) {
			t.Errorf("%s: err %v\n  want one saying %q and pointing at a total", c.name, err, want)
		}
		for _, r := range results {
			if r.Money == MoneyHarmed {
				t.Errorf("%s: %s money harmed by a page that could not grow\n  saw %s", c.name, r.ID, r.Saw)
			}
		}
	}
	srv := payserver.New()
	prefill(t, srv, "alice", 5)
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Witness.Count = "/total"
	results := runAgainst(t, paged{h: srv, page: 5}, p)
	for _, r := range results {
		if r.NotTried == "" && (r.Money != MoneyClean || r.Contract == ContractUnmet) {
			t.Errorf("count at /total, %s: money %s, contract %s\n  saw %s", r.ID, r.Money, r.Contract, r.Saw)
		}
	}
	if v := Summarize(results).Valid(); v == nil || !*v {
		t.Errorf("count at /total: valid %v, want true", v)
	}
}

// TestRun_AListThatStopsOnceIsNoPage: a list that does not grow in one
// scenario, though it holds items, is no page: an API that answered the
// first operation 201 and never made it, or that hands the second
// principal the first one's payment, is still money harmed, and the run
// goes on.
func TestRun_AListThatStopsOnceIsNoPage(t *testing.T) {
	srv := payserver.New()
	prefill(t, srv, "alice", 5)
	if r := byID(runAgainst(t, &serialized{h: &losing{h: srv, who: "alice", nth: 1}}, mustLoad(t)))["key-sf-string"]; r.Money != MoneyHarmed {
		t.Errorf("an operation answered 201 and never made: money %s, saw %s", r.Money, r.Saw)
	}
	// The same loss, with a list whose items change between readings (a
	// status that settles): an item that changed is no item that went
	// out of a page, and the loss is still harm, the run not stopped.
	settled := payserver.New()
	prefill(t, settled, "alice", 2)
	reads := map[string]int{}
	settling := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			settled.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		settled.ServeHTTP(rec, r)
		var list struct{ Items []map[string]any }
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Error(err)
		}
		for _, it := range list.Items {
			id, _ := json.Marshal(it)
			reads[string(id)]++
			it["status"] = map[bool]string{true: "settled", false: "pending"}[reads[string(id)] > 2]
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"items": list.Items})
	})
	if r := byID(runAgainst(t, &serialized{h: &losing{h: settling, who: "alice", nth: 1}}, mustLoad(t)))["key-sf-string"]; r.Money != MoneyHarmed {
		t.Errorf("an operation answered 201 and never made, its list's items settling: money %s, saw %s", r.Money, r.Saw)
	}
	// The same loss seen once at the run's end, or on the second
	// principal's list alone: still harm, told from a full page by one
	// more operation, which the list shows.
	whole := &losing{h: payserver.New(), who: "alice"}
	prefill(t, whole.h, "alice", 5)
	runAgainst(t, whole, mustLoad(t))
	for _, c := range []struct {
		name, who, id string
		nth           int
	}{
		{"alice's last operation", "alice", "expiry-as-published", whole.sent()},
		{"bob's first operation", "bob", "two-principals-one-key", 1},
	} {
		srv := payserver.New()
		prefill(t, srv, "alice", 5)
		prefill(t, srv, "bob", 5)
		r := byID(runAgainst(t, &losing{h: srv, who: c.who, nth: c.nth}, mustLoad(t)))[c.id]
		if r.Money != MoneyHarmed || !strings.Contains(r.Saw, "the list has room") {
			t.Errorf("%s answered 201 and never made: %s money %s, want harmed, the list seen to have room\n  saw %s", c.name, c.id, r.Money, r.Saw)
		}
	}
	unscoped := payserver.New()
	unscoped.Unscoped = true
	prefill(t, unscoped, "alice", 5)
	prefill(t, unscoped, "bob", 5)
	got := byID(runAgainst(t, unscoped, mustLoad(t)))
	for _, id := range []string{"two-principals-one-key", "two-principals-same-request"} {
		if got[id].Money != MoneyHarmed {
			t.Errorf("keys for everyone, lists not empty, %s: money %s, want harmed\n  saw %s", id, got[id].Money, got[id].Saw)
		}
	}
}

// losing serves h, but answers who's nth operation (the nth key it
// sends) 201 and never makes it, nor on a retry under its key: an
// operation the API lost. Its twice-th it makes twice, the first time it
// comes. keys holds each key who sent, with its order.
type losing struct {
	h          http.Handler
	who        string
	nth, twice int
	mu         sync.Mutex
	keys       map[string]int
}

// sent is how many keys who has sent.
func (l *losing) sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

func (l *losing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("X-Api-Key") != l.who {
		l.h.ServeHTTP(w, r)
		return
	}
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]int{}
	}
	key := strings.Join(r.Header.Values("Idempotency-Key"), "\n")
	_, seen := l.keys[key]
	if !seen {
		l.keys[key] = len(l.keys) + 1
	}
	lose, twice := l.keys[key] == l.nth, !seen && l.keys[key] == l.twice
	l.mu.Unlock()
	if twice {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		again := r.Clone(r.Context())
		again.Body = io.NopCloser(bytes.NewReader(body))
		again.Header.Set("Idempotency-Key", `"twice"`)
		l.h.ServeHTTP(httptest.NewRecorder(), again)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if !lose {
		l.h.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"id":"pay_lost"}`))
}

// listed is how many payments srv lists for who.
func listed(t *testing.T, srv http.Handler, who string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/payments", nil)
	req.Header.Set("X-Api-Key", who)
	srv.ServeHTTP(rec, req)
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func mustLoad(t *testing.T) *Profile {
	t.Helper()
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRun_APageSeenFullOnceStopsTheRun: a list cut to one page that is
// seen full only once, wherever the books read it (a second principal's
// list, full from the start; the first one's, full only at the run's
// last reading; or full in the second round of a scenario of two), stops
// the run as a page, and no result is reported money harmed: the lab
// could not see what the page hid.
func TestRun_APageSeenFullOnceStopsTheRun(t *testing.T) {
	// How many payments a whole run makes for alice, against an API with
	// room for all of them.
	whole := payserver.New()
	prefill(t, whole, "alice", 5)
	runAgainst(t, whole, mustLoad(t))
	made := listed(t, whole, "alice") - 5
	for _, c := range []struct {
		name string
		page int
		who  string
	}{
		{"bob's list alone, full from the start", 5, "bob"},
		{"alice's list, full at the run's last reading", 5 + made - 1, "alice"},
		{"alice's list, full in two-principals-same-request's second round", 5 + made - 2, "alice"},
	} {
		srv := payserver.New()
		prefill(t, srv, "alice", 5)
		prefill(t, srv, "bob", 5)
		ts := httptest.NewServer(paged{h: srv, page: c.page, who: c.who})
		results, err := Run(context.Background(), Options{URL: ts.URL, Profile: mustLoad(t), Seed: 7, MaxOperations: 100, Timeout: 10 * time.Second})
		ts.Close()
		want := fmt.Sprintf("%s's list (/items of GET /v1/payments) stopped growing at %d items", c.who, c.page)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v\n  want one saying %q", c.name, err, want)
		}
		for _, r := range results {
			if r.Money == MoneyHarmed {
				t.Errorf("%s: %s money harmed by a page that could not grow\n  saw %s", c.name, r.ID, r.Saw)
			}
		}
	}
}

// TestRun_AShortListThatCannotBeToldIsNotHarm: a list left short that
// conform cannot tell from a full page, having no operation left to send
// under --max-operations, or the one it sent refused, is reported not
// observed, with why: never harm the lab could not see.
func TestRun_AShortListThatCannotBeToldIsNotHarm(t *testing.T) {
	srv := payserver.New()
	prefill(t, srv, "alice", 5)
	r := byID(runAgainstWithin(t, paged{h: srv, page: 5}, mustLoad(t), 1))["key-sf-string"]
	if r.Money != MoneyUnobserved || !strings.Contains(r.Saw, "--max-operations left no operation to send") {
		t.Errorf("no operation left to tell: money %s, want not observed, saying why\n  saw %s", r.Money, r.Saw)
	}
	refused := payserver.New()
	prefill(t, refused, "alice", 5)
	posts := 0
	busy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if posts++; posts > 1 {
				http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
				return
			}
		}
		paged{h: refused, page: 5}.ServeHTTP(w, r)
	})
	r = byID(runAgainst(t, &serialized{h: busy}, mustLoad(t)))["key-sf-string"]
	if r.Money != MoneyUnobserved || !strings.Contains(r.Saw, "sent to tell, was answered 429") {
		t.Errorf("the operation sent to tell refused: money %s, want not observed, saying why\n  saw %s", r.Money, r.Saw)
	}
}

// TestRun_ARoundHarmedIsNotHiddenByOneUntold: two-principals-same-request
// whose first round paid twice and whose second left a list short that
// --max-operations leaves nothing to tell from a page is harmed: the
// round the lab could not see does not hide the one it saw.
func TestRun_ARoundHarmedIsNotHiddenByOneUntold(t *testing.T) {
	whole := &losing{h: payserver.New(), who: "alice"}
	prefill(t, whole.h, "alice", 5)
	// 90 operations leave none after two-principals-same-request, the
	// last scenario tried.
	const budget = 90
	runAgainstWithin(t, whole, mustLoad(t), budget)
	last := whole.sent()
	srv := payserver.New()
	prefill(t, srv, "alice", 5)
	r := byID(runAgainstWithin(t, &losing{h: srv, who: "alice", twice: last - 1, nth: last}, mustLoad(t), budget))["two-principals-same-request"]
	if r.Money != MoneyHarmed || !strings.Contains(r.Saw, "2 executions where 1 was due") || !strings.Contains(r.Saw, "--max-operations left no operation") {
		t.Errorf("one round paid twice, the other short and untold: money %s, want harmed, both rounds said\n  saw %s", r.Money, r.Saw)
	}
}
