package conform

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/payserver"
)

// storesAfter is a middleware that looks a key up before the handler
// and stores its answer after it, with no record of the key while the
// handler runs (a cache written on the way out): a copy that comes
// while the original runs finds nothing, and runs too. The first n POSTs
// of a key each wait, after their lookup, until all n have looked, as n
// copies that arrive together do at a server whose handler takes longer
// than their spread.
type storesAfter struct {
	n      int
	h      http.Handler // executes every request it is given
	mu     sync.Mutex
	looked map[string]int
	all    map[string]chan struct{}
	stored map[string]*httptest.ResponseRecorder
}

func (s *storesAfter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.h.ServeHTTP(w, r)
		return
	}
	id := r.Header.Get("X-Api-Key") + "\x00" + r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	if s.looked == nil {
		s.looked, s.all, s.stored = map[string]int{}, map[string]chan struct{}{}, map[string]*httptest.ResponseRecorder{}
	}
	if rec, ok := s.stored[id]; ok {
		s.mu.Unlock()
		copyRecorded(w, rec)
		return
	}
	s.looked[id]++
	all, ok := s.all[id]
	if !ok {
		all = make(chan struct{})
		s.all[id] = all
	}
	if s.looked[id] == s.n {
		close(all)
	}
	s.mu.Unlock()
	<-all
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	s.mu.Lock()
	s.stored[id] = rec
	s.mu.Unlock()
	copyRecorded(w, rec)
}

// copyRecorded answers w with what rec recorded.
func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// TestKeyReused_AnEditToldTheOriginalsResultWithoutAWitness: a cache
// keyed by the key alone answers an edited resubmission with the
// original's very answer, which shows its client told another
// operation's result with no witness to read: money harmed. It was
// "could not observe".
func TestKeyReused_AnEditToldTheOriginalsResultWithoutAWitness(t *testing.T) {
	srv := payserver.New()
	srv.KeyOnly = true
	r := runScenarioWith(t, srv, "key-reused-other-payload", func(p *Profile) { p.Witness = nil })
	if r.Money != MoneyHarmed || r.Contract != ContractUnmet || !strings.Contains(r.Saw, "the edit was answered with the original's result (the same status and body)") {
		t.Errorf("money %s, contract %s, saw %q; want harmed, unmet, the edit named\n  got %s", r.Money, r.Contract, r.Saw, r.Got)
	}
	r = runScenarioWith(t, payserver.New(), "key-reused-other-payload", func(p *Profile) { p.Witness = nil })
	if r.Money != MoneyUnobserved || r.Contract != ContractMet {
		t.Errorf("a server that refuses the edit, no witness: money %s, contract %s; want not observed, met", r.Money, r.Contract)
	}
}

// TestRun_WrongMiddlewares: each of the ways a real idempotency
// middleware gets the contract wrong, as a server, is caught by the
// scenario that attacks it, with the draft's section and level and the
// money as its witness shows it: a cache keyed by the key alone (an
// edited resubmission told the original's result), one keyed by a hash
// of the key and the body (the edit executed), a mismatch answered 400
// or 409 rather than 422 (a SHOULD missed, no money lost), a period
// told right and kept in the wrong unit (a retry inside it paid again),
// and a cache written after the handler with nothing held while it
// runs (concurrent copies each executed).
func TestRun_WrongMiddlewares(t *testing.T) {
	for _, c := range []struct {
		name string
		srv  func() http.Handler
		id   string
		// section, level and contract are the first requirement's;
		// also, if set, the second's verdict.
		section, level, contract, also string
		money                          string
		saw                            string
	}{
		{"the key alone, no fingerprint", func() http.Handler { s := payserver.New(); s.KeyOnly = true; return s },
			"key-reused-other-payload", "2.7", "SHOULD", ContractUnmet, "", MoneyHarmed, "the edit was answered 2xx but never executed"},
		{"a hash of the key and the body", func() http.Handler { s := payserver.New(); s.KeyWithBody = true; return s },
			"key-reused-other-payload", "2.7", "SHOULD", ContractUnmet, "", MoneyHarmed, "due the original once and the edit never, a move of 1; the witness moved by 2 (2 executions where 1 was due)"},
		{"a mismatch answered 400", func() http.Handler { s := payserver.New(); s.MismatchStatus = http.StatusBadRequest; return s },
			"key-reused-other-payload", "2.7", "SHOULD", ContractUnmet, "", MoneyClean, "the witness moved by"},
		{"a mismatch answered 409", func() http.Handler { s := payserver.New(); s.MismatchStatus = http.StatusConflict; return s },
			"key-reused-other-payload", "2.7", "SHOULD", ContractUnmet, "", MoneyClean, "the witness moved by"},
		{"24h told, 24ns kept: expiry", func() http.Handler {
			s := payserver.New()
			s.Retention, s.Told = 24*time.Nanosecond, 24*time.Hour
			return s
		}, "expiry-as-published", "2.3", "SHOULD", ContractMet, ContractUnmet, MoneyHarmed, "2 executions where 1 was due"},
		{"24h told, 24ns kept: retries", func() http.Handler {
			s := payserver.New()
			s.Retention, s.Told = 24*time.Nanosecond, 24*time.Hour
			return s
		}, "retry-replayed", "2.6", "SHOULD", ContractUnmet, "", MoneyHarmed, "4 executions where 2 were due"},
		{"a cache written after the handler", func() http.Handler {
			s := payserver.New()
			s.Naive = true
			return &storesAfter{n: copies, h: s}
		}, "concurrent-duplicates", "2.6", "MUST", ContractUnmet, ContractUnmet, MoneyHarmed, "8 executions where 1 was due"},
	} {
		r := runScenario(t, c.srv(), c.id)
		also := ""
		if r.Also != nil {
			also = r.Also.Contract
		}
		if r.Section != c.section || r.Level != c.level || r.Contract != c.contract || also != c.also || r.Money != c.money || !strings.Contains(r.Saw, c.saw) {
			t.Errorf("%s: %s %s §%s %s (also %q), money %s; want %s §%s %s (also %q), money %s, saw %q\n  got %s\n  saw %s",
				c.name, c.id, r.Level, r.Section, r.Contract, also, r.Money, c.level, c.section, c.contract, c.also, c.money, c.saw, r.Got, r.Saw)
		}
	}
}
