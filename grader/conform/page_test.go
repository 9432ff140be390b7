package conform

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/payserver"
)

// paged serves h with its list of payments cut to one page of page
// items, the oldest (or, with newest, the newest first), as a list
// endpoint that returns at most one page does, and the number of them
// all in "total".
type paged struct {
	h      http.Handler
	page   int
	newest bool
}

func (p paged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
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
	if r := byID(runAgainst(t, &serialized{h: losesFirstPayment(srv)}, mustLoad(t)))["key-sf-string"]; r.Money != MoneyHarmed {
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
	if r := byID(runAgainst(t, &serialized{h: losesFirstPayment(settling)}, mustLoad(t)))["key-sf-string"]; r.Money != MoneyHarmed {
		t.Errorf("an operation answered 201 and never made, its list's items settling: money %s, saw %s", r.Money, r.Saw)
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

// losesFirstPayment serves h, but answers the first payment 201 without
// making it: an operation the API lost.
func losesFirstPayment(h http.Handler) http.Handler {
	first := true
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && first {
			first = false
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"id":"pay_lost"}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func mustLoad(t *testing.T) *Profile {
	t.Helper()
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
