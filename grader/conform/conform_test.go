package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/payserver"
)

// attack runs every scenario against srv with the payserver profile,
// changed by edit.
func attack(t *testing.T, srv *payserver.Server, edit func(*Profile), maxOps int) []Result {
	t.Helper()
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(p)
	}
	return runAgainstWithin(t, srv, p, maxOps)
}

// runAgainst runs every scenario against h with profile p.
func runAgainst(t *testing.T, h http.Handler, p *Profile) []Result {
	t.Helper()
	return runAgainstWithin(t, h, p, 100)
}

// runAgainstWithin runs every scenario against h with profile p, sending
// the operation at most maxOps times.
func runAgainstWithin(t *testing.T, h http.Handler, p *Profile, maxOps int) []Result {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	results, err := Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 7, MaxOperations: maxOps, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return results
}

func byID(results []Result) map[string]Result {
	out := make(map[string]Result)
	for _, r := range results {
		out[r.ID] = r
	}
	return out
}

// TestRun_KeyedServerIsValid: a server that keeps its keys right meets
// every MUST and every SHOULD it is asked, with its money clean, judged
// from the witness.
func TestRun_KeyedServerIsValid(t *testing.T) {
	results := attack(t, payserver.New(), nil, 100)
	for _, r := range results {
		if r.NotTried != "" {
			if r.ID != "retry-after-restart" {
				t.Errorf("%s not tried: %s", r.ID, r.NotTried)
			}
			continue
		}
		if r.Money != MoneyClean || r.Contract == ContractUnmet {
			t.Errorf("%s: money %s, contract %s\n  got %s\n  saw %s", r.ID, r.Money, r.Contract, r.Got, r.Saw)
		}
	}
	s := Summarize(results)
	if v := s.Valid(); v == nil || !*v || s.Must != 2 || s.Should != 7 {
		t.Errorf("summary %+v, valid %v; want 2/2 MUST, 7/7 SHOULD, valid", s, v)
	}
}

// TestRun_NaiveServerHarmsMoney: a server that ignores the key pays
// every duplicate; the witness shows it, and the concurrent copies'
// answers miss the MUST.
func TestRun_NaiveServerHarmsMoney(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	got := byID(attack(t, srv, nil, 100))
	for _, id := range []string{"retry-replayed", "key-reused-other-payload", "concurrent-duplicates", "lost-response", "two-principals-one-key"} {
		want := MoneyHarmed
		if id == "two-principals-one-key" {
			want = MoneyClean // each principal's payment made once: not a harm
		}
		if got[id].Money != want {
			t.Errorf("%s: money %s, want %s (saw %s)", id, got[id].Money, want, got[id].Saw)
		}
	}
	if r := got["concurrent-duplicates"]; r.Contract != ContractUnmet || !strings.Contains(r.Saw, "8 executions where 1 was due") {
		t.Errorf("concurrent-duplicates: contract %s, saw %s", r.Contract, r.Saw)
	}
	if v := Summarize(byIDList(got)).Valid(); v == nil || *v {
		t.Errorf("valid %v, want false", v)
	}
}

func byIDList(m map[string]Result) []Result {
	var out []Result
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// TestRun_WithoutAWitnessMoneyIsUnobserved: without a witness, no
// scenario calls the money clean (a naive server would pass otherwise),
// and a MUST missed still fails the run (docs/conform.md, step 5).
func TestRun_WithoutAWitnessMoneyIsUnobserved(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	results := attack(t, srv, func(p *Profile) { p.Witness = nil }, 100)
	for _, r := range results {
		if r.Money == MoneyClean {
			t.Errorf("%s: money clean without a witness", r.ID)
		}
	}
	if got := byID(results)["retry-replayed"]; got.Money != MoneyUnobserved {
		t.Errorf("retry-replayed: money %s, want %s", got.Money, MoneyUnobserved)
	}
	// The naive server misses the MUST of concurrent-duplicates, which
	// the answers alone show: the run fails, witness or not.
	if v := Summarize(results).Valid(); v == nil || *v {
		t.Errorf("valid %v, want false: a MUST missed is seen without a witness", v)
	}
}

// TestRun_MaxOperationsBoundsWhatIsCreated: with a budget of 3, the
// scenarios that would go over it are not tried, and the server holds
// at most 3 payments.
func TestRun_MaxOperationsBoundsWhatIsCreated(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	results := attack(t, srv, nil, 3)
	made := 0
	for _, who := range []string{"alice", "bob"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/payments", nil)
		req.Header.Set("X-Api-Key", who)
		srv.ServeHTTP(rec, req)
		var list struct{ Items []payserver.Payment }
		json.Unmarshal(rec.Body.Bytes(), &list)
		made += len(list.Items)
	}
	if made > 3 {
		t.Errorf("%d payments made under --max-operations 3", made)
	}
	if r := byID(results)["concurrent-duplicates"]; !strings.Contains(r.NotTried, "--max-operations") {
		t.Errorf("concurrent-duplicates ran over the budget: %+v", r)
	}
}

// TestReports: the JSON's valid is false for a naive server, and the
// JUnit suite fails the harmed scenarios and skips what was not tried
// (expiry-as-published and retry-after-restart, without the profile's
// expiry and restart).
func TestReports(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	results := attack(t, srv, func(p *Profile) { p.Expiry = nil }, 100)
	var js bytes.Buffer
	if err := WriteJSON(&js, "payserver", "http://x", 7, results); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Valid *bool }
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.Valid == nil || *doc.Valid {
		t.Errorf("json valid %v (%v), want false", doc.Valid, err)
	}
	var ju bytes.Buffer
	if err := WriteJUnit(&ju, "payserver", results); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(ju.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	if suite.Failures == 0 || suite.Skipped != 2 || suite.Tests != len(scenarios) {
		t.Errorf("junit: %d tests, %d failures, %d skipped; want %d tests, some failures, 2 skipped", suite.Tests, suite.Failures, suite.Skipped, len(scenarios))
	}
	var human bytes.Buffer
	WriteHuman(&human, "payserver", results)
	out := human.String()
	if !strings.HasPrefix(out, "money") || !strings.Contains(out, "✗ HARMED") || !strings.HasSuffix(out, "money harmed, 2 not tried\n") {
		t.Errorf("human report:\n%s", out)
	}
}

// TestRun_RefusesAnUnsetPlaceholderBeforeSending: a profile whose
// credentials come from an unset environment variable stops the run
// before a single request, instead of reporting an API that refused
// every one.
func TestRun_RefusesAnUnsetPlaceholderBeforeSending(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Principals[1].Headers["X-Api-Key"] = "{{env.CONFORM_TEST_UNSET}}"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, err = Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 1, MaxOperations: 100, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "CONFORM_TEST_UNSET") {
		t.Fatalf("err %v, want one naming CONFORM_TEST_UNSET", err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/payments", nil)
	req.Header.Set("X-Api-Key", "alice")
	srv.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Fatalf("payments were made: %s", rec.Body)
	}
}

// TestRun_KeySyntax: each way of misreading the Idempotency-Key field
// is caught by its scenario: a server that takes the field as sent (the
// quoted and bare forms two keys, a malformed field a key) pays twice
// for one operation and misses the 4xx; one that executes a malformed
// key's request unprotected pays again on its retry; one that cuts long
// keys short takes two keys for one, and so does one that folds their
// case.
func TestRun_KeySyntax(t *testing.T) {
	for _, c := range []struct {
		keys     payserver.KeyRule
		id       string
		money    string
		contract string
	}{
		{payserver.StrictKeys, "key-forms", MoneyClean, ""},
		{payserver.StrictKeys, "malformed-key", MoneyClean, ContractMet},
		{payserver.StrictKeys, "long-keys", MoneyClean, ""},
		{payserver.RawKeys, "key-forms", MoneyHarmed, ""},
		{payserver.RawKeys, "malformed-key", MoneyClean, ContractUnmet},
		{payserver.IgnoreMalformed, "malformed-key", MoneyHarmed, ContractUnmet},
		{payserver.CutKeys, "long-keys", MoneyHarmed, ""},
		{payserver.StrictKeys, "key-case", MoneyClean, ""},
		{payserver.FoldKeys, "key-case", MoneyHarmed, ""},
	} {
		srv := payserver.New()
		srv.Keys = c.keys
		r := byID(attack(t, srv, nil, 100))[c.id]
		if r.Money != c.money || r.Contract != c.contract {
			t.Errorf("keys %d, %s: money %s, contract %q; want money %s, contract %q\n  got %s\n  saw %s", c.keys, c.id, r.Money, r.Contract, c.money, c.contract, r.Got, r.Saw)
		}
	}
}

// TestRun_ExpiryAsPublished: a key honoured inside the published period
// and an Idempotency-Expires that agrees with it meet both SHOULDs; a
// server that forgets its keys at once pays the retry again and misses
// §2.6's (the retry gets the original's result), and §2.3's only if it
// tells an expiry that disagrees; one that tells another period than the
// profile's misses §2.3's alone; and a profile without an expiry leaves
// the scenario not tried. Each verdict cites what it rests on: §2.3
// asks only that the policy be published (it once judged the key
// honoured too).
func TestRun_ExpiryAsPublished(t *testing.T) {
	for _, c := range []struct {
		name      string
		retention time.Duration
		edit      func(*Profile)
		money     string
		published string // §2.3
		honoured  string // §2.6
	}{
		{"kept as published", 24 * time.Hour, nil, MoneyClean, ContractMet, ContractMet},
		{"published without a header", 24 * time.Hour, func(p *Profile) { p.Expiry.Header = "" }, MoneyClean, ContractMet, ContractMet},
		{"forgotten at once", time.Nanosecond, nil, MoneyHarmed, ContractUnmet, ContractUnmet},
		{"forgotten at once, no expiry told", time.Nanosecond, func(p *Profile) { p.Expiry.Header = "" }, MoneyHarmed, ContractMet, ContractUnmet},
		{"told another period", time.Hour, nil, MoneyClean, ContractUnmet, ContractMet},
		{"a header the API does not send", 24 * time.Hour, func(p *Profile) { p.Expiry.Header = "Key-Expires" }, MoneyClean, ContractUnmet, ContractMet},
		{"not published", 24 * time.Hour, func(p *Profile) { p.Expiry = nil }, "", "", ""},
	} {
		srv := payserver.New()
		srv.Retention = c.retention
		r := byID(attack(t, srv, c.edit, 100))["expiry-as-published"]
		honoured := ""
		if r.Also != nil {
			honoured = r.Also.Contract
		}
		if r.Money != c.money || r.Contract != c.published || honoured != c.honoured || (c.money == "") != (r.NotTried != "") {
			t.Errorf("%s: money %q, §2.3 %q, §2.6 %q, not tried %q; want money %q, §2.3 %q, §2.6 %q\n  got %s\n  saw %s", c.name, r.Money, r.Contract, honoured, r.NotTried, c.money, c.published, c.honoured, r.Got, r.Saw)
		}
		if r.Section != "2.3" || r.Also == nil || r.Also.Section != "2.6" || strings.Contains(r.ClaimContract, "honoured") || !strings.Contains(r.Also.Claim, "honoured") {
			t.Errorf("%s: §%s claims %q; §%v claims %v: the key honoured is §2.6's, the policy published §2.3's", c.name, r.Section, r.ClaimContract, r.Also, r.Also)
		}
		if c.money == MoneyClean && !strings.Contains(r.Saw, "could not observe whether the key is forgotten") {
			t.Errorf("%s: saw %q, which does not say what the run could not observe", c.name, r.Saw)
		}
	}
}

// TestRun_KeysScopedByPrincipal: a server whose keys are everyone's
// refuses the second principal's own payload under the first one's key,
// and hands it the first one's payment for the first one's exact
// request; both scenarios find the money harmed.
func TestRun_KeysScopedByPrincipal(t *testing.T) {
	srv := payserver.New()
	srv.Unscoped = true
	got := byID(attack(t, srv, nil, 100))
	for _, id := range []string{"two-principals-one-key", "two-principals-same-request"} {
		if got[id].Money != MoneyHarmed {
			t.Errorf("%s: money %s, want %s\n  got %s\n  saw %s", id, got[id].Money, MoneyHarmed, got[id].Got, got[id].Saw)
		}
	}
	// At once, either may win the race; one after the other, alice does.
	if r := got["two-principals-same-request"]; !strings.Contains(r.Saw, "(at once: ") || !strings.Contains(r.Saw, "one after the other: bob was handed alice's result") {
		t.Errorf("two-principals-same-request saw %q; want the leak found at once and one after the other", r.Saw)
	}
}

// TestRun_AnEmptyRetryAnswerIsNotAResult catches a lost-response scenario
// that counts any 2xx as the client learning its result: a server that
// answers a retry 201 with an empty body moved the money once (clean), but
// its client still does not know the result, a contract difference that
// names the empty answer.
func TestRun_AnEmptyRetryAnswerIsNotAResult(t *testing.T) {
	srv := payserver.New()
	var mu sync.Mutex
	seen := map[string]bool{}
	emptyRetries := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		retry := r.Method == http.MethodPost && key != "" && seen[key]
		seen[key] = true
		mu.Unlock()
		if !retry {
			srv.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		w.WriteHeader(rec.Code)
	})
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	r := byID(runAgainst(t, emptyRetries, p))["lost-response"]
	if r.Money != MoneyClean || r.Contract != ContractUnmet || !strings.Contains(r.Saw, "body empty or not JSON") || !strings.Contains(r.Saw, "the retry 201 with an empty body") {
		t.Fatalf("money %s, contract %s, saw %q; want clean money and an unmet contract naming the empty answer", r.Money, r.Contract, r.Saw)
	}
}

// TestExecutionsSaid: a witness that moved by whole executions says how
// many; one that moved by a fraction of an operation, or the other way,
// says in words that something else likely moves it, not a raw float.
func TestExecutionsSaid(t *testing.T) {
	const elsewhere = "no whole number of executions explains, where 1 was due: does something else move this witness"
	for _, c := range []struct {
		n    float64
		want string
	}{
		{8, "8 executions where 1 was due"},
		{0, "0 executions where 1 was due"},
		{math.Copysign(0, -1), "0 executions where 1 was due"},
		{0.1 * 3 / 0.1, "3 executions where 1 was due"},
		{0.33137254901960783, elsewhere},
		{-0.49560117302052786, elsewhere},
		{-2, elsewhere},
		{2.5, elsewhere},
	} {
		got := executionsSaid(c.n, 1)
		if c.want == elsewhere && !strings.Contains(got, c.want) || c.want != elsewhere && got != c.want {
			t.Errorf("executionsSaid(%v, 1) = %q, want it to say %q", c.n, got, c.want)
		}
	}
}

// TestSummary_NotTriedIsUnknownNeverMet: a MUST or money scenario left
// out (by --max-operations, or by a profile with one principal) leaves
// the verdict unknown, never met: the summary line counts what was not
// tried, valid is null in the JSON and the JUnit suite has errors.
func TestSummary_NotTriedIsUnknownNeverMet(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(*Profile)
		maxOps int
		line   string
	}{
		{"--max-operations 33", nil, 33, "1/2 MUST met, 3/7 SHOULD met, money clean, 7 not tried (4 of them a MUST or money scenario: the verdict is unknown)"},
		{"one principal", func(p *Profile) { p.Principals = p.Principals[:1] }, 100, "2/2 MUST met, 7/7 SHOULD met, money clean, 3 not tried (2 of them a MUST or money scenario: the verdict is unknown)"},
	} {
		results := attack(t, payserver.New(), c.edit, c.maxOps)
		s := Summarize(results)
		if v := s.Valid(); v != nil || s.Line() != c.line {
			t.Errorf("%s: valid %v, line %q; want null and %q", c.name, v, s.Line(), c.line)
		}
		var js bytes.Buffer
		if err := WriteJSON(&js, "payserver", "http://x", 7, results); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Valid   *bool
			Summary map[string]any
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.Valid != nil || doc.Summary["not_tried"] == nil || doc.Summary["must_met"] == nil {
			t.Errorf("%s: json valid %v, summary %v (%v); want null, snake_case counts with not_tried", c.name, doc.Valid, doc.Summary, err)
		}
		var ju bytes.Buffer
		if err := WriteJUnit(&ju, "payserver", results); err != nil {
			t.Fatal(err)
		}
		var suite junitSuite
		if err := xml.Unmarshal(ju.Bytes(), &suite); err != nil || suite.Errors != s.Undecided || suite.Errors == 0 {
			t.Errorf("%s: junit %d errors (%v), want %d: a scenario the verdict needs, not tried, is no pass", c.name, suite.Errors, err, s.Undecided)
		}
	}
}

// runScenario runs the one scenario id against h with the payserver
// profile.
func runScenario(t *testing.T, h http.Handler, id string) Result {
	t.Helper()
	return runScenarioWith(t, h, id, nil)
}

// runScenarioWith runs the one scenario id against h with the payserver
// profile, changed by edit.
func runScenarioWith(t *testing.T, h http.Handler, id string, edit func(*Profile)) Result {
	t.Helper()
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(p)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	r := newRunner(Options{URL: ts.URL, Profile: p, Seed: 7, MaxOperations: 100, Timeout: 10 * time.Second})
	for _, s := range scenarios {
		if s.ID == id {
			res := s.result()
			if err := s.Run(context.Background(), r, &res); err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatalf("no scenario %s", id)
	return Result{}
}

// serialized serves one request at a time: no copy ever meets another
// still running, as on a server without a lock whose operation is quick.
type serialized struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *serialized) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.ServeHTTP(w, r)
}

// overlapped holds the first POST until every other copy has arrived and
// been answered 409: each copy meets the original still running.
type overlapped struct {
	bare   bool // no Retry-After on the 409s
	status int  // the conflict's status, if not 409
	// garble, if set, says which arrivals (1 the original) get no
	// answer: the original runs, then each gets bytes that are no HTTP
	// response, a transport error to its client (one the client's
	// transport does not send again, as it would a connection closed).
	garble  func(n int) bool
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	h       http.Handler
}

// garbled answers w's request with bytes that are no HTTP response.
func garbled(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Write([]byte("no HTTP here\r\n\r\n"))
	conn.Close()
}

func (o *overlapped) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" {
		o.h.ServeHTTP(w, r)
		return
	}
	o.mu.Lock()
	o.arrived++
	n := o.arrived
	o.mu.Unlock()
	silent := o.garble != nil && o.garble(n)
	if n > 1 {
		if n == copies {
			defer close(o.all)
		}
		if silent {
			garbled(w)
			return
		}
		if !o.bare {
			w.Header().Set("Retry-After", "1")
		}
		status := o.status
		if status == 0 {
			status = http.StatusConflict
		}
		w.WriteHeader(status)
		return
	}
	<-o.all
	if silent {
		o.h.ServeHTTP(httptest.NewRecorder(), r)
		garbled(w)
		return
	}
	o.h.ServeHTTP(w, r)
}

// TestConcurrentDuplicates_SaysWhenNoCopyWasSeenInProgress: eight copies
// all answered as one, none 409, meet the MUST only as retries do: the
// result says the race may not have been reached (a server without a
// lock answers so when it is quick); copies seen in progress carry no
// such note, unless they carry no Retry-After, which the note names.
func TestConcurrentDuplicates_SaysWhenNoCopyWasSeenInProgress(t *testing.T) {
	r := runScenario(t, &serialized{h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractMet || !strings.Contains(r.Note, "no copy was seen while the original ran") {
		t.Errorf("serialized: contract %s, note %q; want met, with the race not seen", r.Contract, r.Note)
	}
	var human bytes.Buffer
	WriteHuman(&human, "x", []Result{r})
	if !strings.Contains(human.String(), "      but       no copy was seen") {
		t.Errorf("the report hides the note:\n%s", human.String())
	}
	r = runScenario(t, &overlapped{all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractMet || r.Note != "" {
		t.Errorf("overlapped: contract %s, note %q; want met, no note (got %s)", r.Contract, r.Note, r.Got)
	}
	r = runScenario(t, &overlapped{bare: true, all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractMet || !strings.Contains(r.Note, strconv.Itoa(copies-1)+" of the "+strconv.Itoa(copies-1)+" conflict errors carried no Retry-After") {
		t.Errorf("overlapped, 409s without Retry-After: contract %s, note %q; want met, with a note that names them", r.Contract, r.Note)
	}
}

// TestConcurrentDuplicates_AnyResourceConflictMeetsTheMust: §2.6's MUST
// is "a resource conflict error", §2.7's SHOULD the 409: copies that
// meet the original running and get 423 Locked meet the MUST and miss
// the SHOULD, each reported apart; a 429, a rate limit that says nothing
// of the resource, meets neither. The MUST once took 409 alone.
func TestConcurrentDuplicates_AnyResourceConflictMeetsTheMust(t *testing.T) {
	for _, c := range []struct {
		status       int
		must, should string
	}{
		{http.StatusConflict, ContractMet, ContractMet},
		{http.StatusLocked, ContractMet, ContractUnmet},
		{http.StatusTooManyRequests, ContractUnmet, ContractUnmet},
	} {
		r := runScenario(t, &overlapped{status: c.status, all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates")
		if r.Contract != c.must || r.Also == nil || r.Also.Contract != c.should || r.Money != MoneyClean {
			t.Errorf("%d: MUST %s, SHOULD %v, money %s; want MUST %s, SHOULD %s, clean (got %s)", c.status, r.Contract, r.Also, r.Money, c.must, c.should, r.Got)
			continue
		}
		var human bytes.Buffer
		WriteHuman(&human, "x", []Result{r})
		for _, want := range []string{
			contractMark(c.must) + " MUST   §2.6  concurrent-duplicates: ",
			contractMark(c.should) + " SHOULD §2.7  concurrent-duplicates: 8 copies sent at once: a copy that meets the original still running gets 409",
		} {
			if !strings.Contains(human.String(), want) {
				t.Errorf("%d: the report does not say %q:\n%s", c.status, want, human.String())
			}
		}
		if s := Summarize([]Result{r}); c.status == http.StatusLocked && (s.MustMet != 1 || s.Should != 1 || s.ShouldMet != 0 || *s.Valid() != true) {
			t.Errorf("423: summary %+v; want the MUST met, the SHOULD counted and missed, valid", s)
		}
	}
}

// TestConcurrentDuplicates_A503IsNoConflictError: copies that meet the
// original running and get 503 Service Unavailable got a server error,
// not the resource conflict error §2.6's MUST asks for, nor §2.7's 409:
// both are unmet, and the note says what a 503 told its client and,
// from the witness, that the copies did not execute; without a witness,
// that it could not be observed. A 503 once went unexplained, its
// copies neither named nor said to have run or not.
func TestConcurrentDuplicates_A503IsNoConflictError(t *testing.T) {
	for _, c := range []struct {
		witness bool
		money   string
		ran     string
	}{
		{true, MoneyClean, "the witness shows the operation executed once: they did not execute"},
		{false, MoneyUnobserved, "whether they executed could not be observed"},
	} {
		res := runScenarioWith(t, &overlapped{status: http.StatusServiceUnavailable, all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates", func(p *Profile) {
			if !c.witness {
				p.Witness = nil
			}
		})
		if res.Contract != ContractUnmet || res.Also.Contract != ContractUnmet || res.Money != c.money {
			t.Errorf("witness %v: MUST %s, SHOULD %s, money %s; want both unmet, money %s (got %s)", c.witness, res.Contract, res.Also.Contract, res.Money, c.money, res.Got)
		}
		for _, want := range []string{" got 503 Service Unavailable: a server error", "no resource conflict error (§2.6) and no 409 (§2.7)", c.ran} {
			if !strings.Contains(res.Note, want) {
				t.Errorf("witness %v: note %q does not say %q", c.witness, res.Note, want)
			}
		}
		var human bytes.Buffer
		WriteHuman(&human, "x", []Result{res})
		if !strings.Contains(human.String(), "      but       copies ") {
			t.Errorf("witness %v: the report hides the note under the unmet MUST:\n%s", c.witness, human.String())
		}
	}
}

// TestConcurrentDuplicates_ACopyWithoutAnAnswerIsNotUnmet: a copy that
// got no answer at all (a transport error) tells nothing of what the API
// chose to answer it: the MUST is judged on the copies answered, the
// note names the one that was not; with every copy unanswered, neither
// requirement could be observed and the run's verdict is unknown, while
// the money is still judged by the witness. Such a copy once made the
// MUST unmet.
func TestConcurrentDuplicates_ACopyWithoutAnAnswerIsNotUnmet(t *testing.T) {
	r := runScenario(t, &overlapped{garble: func(n int) bool { return n == 3 }, all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractMet || r.Also.Contract != ContractMet || r.Money != MoneyClean || !strings.Contains(r.Note, "got no answer at all") {
		t.Errorf("one copy unanswered: MUST %s, SHOULD %s, money %s, note %q; want both met, clean, the copy named (got %s)", r.Contract, r.Also.Contract, r.Money, r.Note, r.Got)
	}
	r = runScenario(t, &overlapped{garble: func(int) bool { return true }, all: make(chan struct{}), h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractUnobserved || r.Also.Contract != ContractUnobserved || r.Money != MoneyClean || !strings.Contains(r.Note, "no copy got an answer") {
		t.Errorf("every copy unanswered: MUST %s, SHOULD %s, money %s, note %q; want neither observed, money clean (got %s)", r.Contract, r.Also.Contract, r.Money, r.Note, r.Got)
	}
	s := Summarize([]Result{r})
	if s.Valid() != nil || s.MustUnobserved != 1 || s.MustUnmet != 0 || !strings.Contains(s.Line(), "1 not observed: the verdict is unknown") {
		t.Errorf("every copy unanswered: summary %+v, line %q; want the MUST not observed and the verdict unknown", s, s.Line())
	}
	var ju bytes.Buffer
	if err := WriteJUnit(&ju, "x", []Result{r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ju.String(), `<error message="could not observe MUST §2.6`) {
		t.Errorf("the JUnit case is no error:\n%s", ju.String())
	}
}

// bobFirst holds the first principal's POST of the first key it sees
// until the second principal's with that key has been served: the
// second wins the race, as it may on a server with one key for all.
type bobFirst struct {
	mu    sync.Mutex
	first string
	bob   chan struct{}
	h     http.Handler
}

func (b *bobFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method != "POST" || key == "" {
		b.h.ServeHTTP(w, r)
		return
	}
	b.mu.Lock()
	if b.first == "" {
		b.first = key
	}
	held := key == b.first
	b.mu.Unlock()
	switch {
	case held && r.Header.Get("X-Api-Key") == "alice":
		<-b.bob
	case held:
		defer close(b.bob)
	}
	b.h.ServeHTTP(w, r)
}

// TestTwoPrincipalsSameRequest_NamesWhoGotWhose: on a server with one key
// for every principal, whoever comes second is handed the other's result
// and its own operation never runs; the report says which, read from the
// witnesses, not who was sent second.
func TestTwoPrincipalsSameRequest_NamesWhoGotWhose(t *testing.T) {
	srv := payserver.New()
	srv.Unscoped = true
	r := runScenario(t, &bobFirst{bob: make(chan struct{}), h: srv}, "two-principals-same-request")
	for _, want := range []string{
		"at once: alice was handed bob's result, and alice's own operation never ran",
		"one after the other: bob was handed alice's result, and bob's own operation never ran",
	} {
		if r.Money != MoneyHarmed || !strings.Contains(r.Saw, want) {
			t.Errorf("money %s, saw %s\n  want %q (got %s)", r.Money, r.Saw, want, r.Got)
		}
	}
}

// TestBooks_SawSaysWhatWasDueAndWhatMoved: a scenario of several
// operations says how often each was due, what that moves the witness by,
// and then what it moved by, with the executions that make when they can
// be counted; "the edit 0×" once read as "the edit ran 0 times".
func TestBooks_SawSaysWhatWasDueAndWhatMoved(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	got := byID(attack(t, srv, nil, 100))
	for id, want := range map[string]string{
		"key-reused-other-payload": "alice: due the original once and the edit never, a move of 1; the witness moved by 3 (3 executions where 1 was due)",
		"lost-response":            "alice: due reset-after-processing once and response-withheld once, a move of 2; the witness moved by 4 (4 executions where 2 were due)",
		"retry-replayed":           "alice: due one operation once and the operation between once, a move of 2; the witness moved by 4 (4 executions where 2 were due)",
	} {
		if r := got[id]; !strings.Contains(r.Saw, want) {
			t.Errorf("%s saw %q\n  want %q", id, r.Saw, want)
		}
	}
}

// TestLongKeys_SaysWhatWasSent: the sent line shows the long key, cut,
// and says how the second differs; it once read "no Idempotency-Key".
func TestLongKeys_SaysWhatWasSent(t *testing.T) {
	r := runScenario(t, payserver.New(), "long-keys")
	if strings.Contains(r.Sent, "no Idempotency-Key") || !strings.Contains(r.Sent, `Idempotency-Key: "conform-`) || !strings.Contains(r.Sent, "xxx…xa\" (4096 characters), then another operation whose key ends in b instead") {
		t.Errorf("sent %q", r.Sent)
	}
}

// TestReport_EachVerdictWithItsOwnClaim: the money section says what the
// money showed, the contract section what the draft requires; neither
// claims what only the other saw. Without a witness, a MUST met says the
// key was taken, not that the operation executed once; a money line
// clean says nothing of a 400 the API never sent.
func TestReport_EachVerdictWithItsOwnClaim(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	var human bytes.Buffer
	WriteHuman(&human, "x", []Result{runScenario(t, srv, "missing-key")})
	blind := payserver.New()
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Witness = nil
	WriteHuman(&human, "x", runAgainstWithin(t, blind, p, 1))
	out := human.String()
	for _, want := range []string{
		"✓ clean   missing-key: a request without Idempotency-Key executes once if it is taken, never if it is refused\n",
		"✗ SHOULD §2.7  missing-key: a request without Idempotency-Key gets 400\n",
		"✓ MUST   §2.1  key-sf-string: a key sent as an RFC 8941 sf-string, the draft's form, is taken (2xx)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "✓ clean   missing-key: a request without Idempotency-Key gets 400") || strings.Contains(out, "is taken and the operation executes once") {
		t.Errorf("a verdict claims what it did not see:\n%s", out)
	}
}

// TestScenarios_AClaimSaysBothItsHalves: the --json document's claim is
// the whole of what a scenario claims, its halves claim_money and
// claim_contract apart: a scenario whose money half speaks of what
// executes says so in its claim too, never only what the draft requires
// (missing-key's claim once said only "gets 400").
func TestScenarios_AClaimSaysBothItsHalves(t *testing.T) {
	for _, s := range scenarios {
		if s.Requires == "" || s.Keeps == "" {
			continue
		}
		if s.Claim == s.Requires || strings.Contains(s.Keeps, "execut") && !strings.Contains(s.Claim, "execut") {
			t.Errorf("%s: claim %q says only what the draft requires, not %q", s.ID, s.Claim, s.Keeps)
		}
	}
}

// TestJUnit_AFailureNamesEveryVerdictItMissed: a case both harmed and
// short of a MUST says both, each with its own claim and the MUST's
// level; it once said only "money harmed".
func TestJUnit_AFailureNamesEveryVerdictItMissed(t *testing.T) {
	srv := payserver.New()
	srv.Naive = true
	r := runScenario(t, srv, "concurrent-duplicates")
	var ju bytes.Buffer
	if err := WriteJUnit(&ju, "payserver", []Result{r}); err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(ju.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	want := "money harmed: 8 copies sent at once: the operation executes once; MUST §2.6 unmet: 8 copies sent at once: a copy that meets the original still running gets a resource conflict error (409 Conflict or 423 Locked); SHOULD §2.7 unmet: 8 copies sent at once: a copy that meets the original still running gets 409"
	if f := suite.Cases[0].Failure; f == nil || f.Message != want {
		t.Errorf("failure %+v\n  want the message %q", f, want)
	}
}

// TestRun_SameSeedTwiceIsStillValid: a run repeated with the seed the
// report prints, against the same server, sends keys of its own. A key
// the server kept from the first run would make every operation of the
// second a retry, replayed and never executed: a right server harmed.
func TestRun_SameSeedTwiceIsStillValid(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(payserver.New())
	t.Cleanup(ts.Close)
	for run := range 2 {
		results, err := Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 7, MaxOperations: 100, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.NotTried == "" && (r.Money != MoneyClean || r.Contract == ContractUnmet) {
				t.Errorf("run %d, %s: money %s, contract %s\n  sent %s\n  saw %s", run+1, r.ID, r.Money, r.Contract, r.Sent, r.Saw)
			}
		}
	}
}

// TestRun_NoAPIAtTheURLCannotRun: without a witness to read first, an
// API that does not answer, a web page answering in its place (a wrong
// base URL behind a proxy), an operation that is not there or credentials
// it refuses stop the run after the first operation with what it met: nothing there says how the API treats
// money, and a verdict of "harmed" would blame an API never reached.
func TestRun_NoAPIAtTheURLCannotRun(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Witness = nil
	closed := httptest.NewServer(payserver.New())
	closed.Close()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body>Welcome to nginx!</body></html>"))
	}))
	defer page.Close()
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"unknown api key"}`))
	}))
	defer refused.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	for _, c := range []struct{ url, want string }{
		{closed.URL, "the API does not answer"},
		{page.URL, "answers a web page (text/html), not the API's JSON"},
		{refused.URL, "refuses alice's credentials (401)"},
		{missing.URL, "is not there (404)"},
	} {
		results, err := Run(context.Background(), Options{URL: c.url, Profile: p, Seed: 1, MaxOperations: 100, Timeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, results %d; want an error saying %q", c.url, err, len(results), c.want)
		}
	}
}

// acks answers every 2xx of h with one body that names no operation,
// {"status":"accepted"}, as an API that works asynchronously does.
func acks(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		if rec.Code >= 200 && rec.Code < 300 && r.Method == http.MethodPost {
			w.Write([]byte(`{"status":"accepted"}`))
			return
		}
		w.Write(rec.Body.Bytes())
	})
}

// TestRun_AlikeAnswersThatNameNoOperationAreNoLeak: an API whose every
// answer is the same acknowledgement answers two principals alike
// without handing either the other's result. With a witness that shows
// each principal's operation executed once, the money is clean; without
// one, it is not observed, never harmed on a guess.
func TestRun_AlikeAnswersThatNameNoOperationAreNoLeak(t *testing.T) {
	for _, witness := range []bool{true, false} {
		p, err := Load("testdata/profiles/payserver.json")
		if err != nil {
			t.Fatal(err)
		}
		p.Expiry = nil
		want := MoneyClean
		if !witness {
			p.Witness, want = nil, MoneyUnobserved
		}
		got := byID(runAgainst(t, acks(payserver.New()), p))
		for _, id := range []string{"two-principals-one-key", "two-principals-same-request"} {
			if r := got[id]; r.Money != want {
				t.Errorf("witness %v, %s: money %s, want %s\n  got %s\n  saw %s", witness, id, r.Money, want, r.Got, r.Saw)
			}
		}
	}
}

// TestRun_AWitnessNotReachedSaysWhatToCheck: the witness is read before
// anything is sent, so it meets a wrong --url or refused credentials
// first; its error says what to check, as the operation's does, and
// names the URL it asked, which shows a --url that repeats the path.
func TestRun_AWitnessNotReachedSaysWhatToCheck(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(payserver.New())
	defer srv.Close()
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"unknown api key"}`))
	}))
	defer refused.Close()
	closed := httptest.NewServer(payserver.New())
	closed.Close()
	for _, c := range []struct{ url, want string }{
		{closed.URL, "GET /v1/payments: no answer from " + closed.URL + "/v1/payments: is the API running at --url?"},
		{refused.URL, "GET /v1/payments: 403 {\"error\":\"unknown api key\"}: alice's credentials refused: check the principal's headers"},
		{srv.URL + "/v1", "GET /v1/payments: 404 404 page not found: nothing at " + srv.URL + "/v1/v1/payments: is --url the API's base URL and witness.path its path?"},
	} {
		_, err := Run(context.Background(), Options{URL: c.url, Profile: p, Seed: 1, MaxOperations: 100, Timeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v\n  want one saying %q", c.url, err, c.want)
		}
	}
}

// TestRun_ARecomputedReplayIsHarm: a server that answers a retry by
// rendering the operation again as its books are now, rather than with
// the answer it gave, answers a retry made at once as the original (the
// books have not moved) and one made after another operation otherwise:
// its client is told a result that was never its operation's. The retry
// after another operation shows it; the server that stores its answer
// stays clean.
//
// An API that renders every replay again, with an encoder of its own,
// answers the retry made at once in other bytes too: what each retry says
// decides, so that it is still found recomputed, and one that only
// respells the answer it stored is a contract difference, no harm.
func TestRun_ARecomputedReplayIsHarm(t *testing.T) {
	recomputes := payserver.New()
	recomputes.Recompute = true
	respells := payserver.New()
	respells.Respell = true
	both := payserver.New()
	both.Recompute, both.Respell = true, true
	for _, c := range []struct {
		name     string
		srv      *payserver.Server
		money    string
		contract string
	}{
		{"stored", payserver.New(), MoneyClean, ContractMet},
		{"recomputed", recomputes, MoneyHarmed, ContractUnmet},
		{"respelled", respells, MoneyClean, ContractUnmet},
		{"recomputed and respelled", both, MoneyHarmed, ContractUnmet},
	} {
		r := runScenario(t, c.srv, "retry-replayed")
		if r.Money != c.money || r.Contract != c.contract || (c.money == MoneyHarmed && !strings.Contains(r.Saw, "recomputed")) {
			t.Errorf("%s: money %s, contract %s; want %s, %s, saying recomputed\n  sent %s\n  got %s\n  saw %s", c.name, r.Money, r.Contract, c.money, c.contract, r.Sent, r.Got, r.Saw)
		}
	}
}

// newlineOnReplay answers every request to h whose key it has seen before
// with h's answer and a newline after it: the bytes of a replay differ
// from the original's only where the report, which trims a body, does
// not show them.
type newlineOnReplay struct {
	h    http.Handler
	mu   sync.Mutex
	seen map[string]bool
}

func (s *newlineOnReplay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	again := key != "" && s.seen[key]
	s.seen[key] = true
	s.mu.Unlock()
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	if again && r.Method == http.MethodPost {
		w.Write([]byte("\n"))
	}
}

// TestReport_BodiesThatPrintAlikeSayWhereTheyDiffer: a retry whose body
// differs from the original's only in what the report trims printed as
// the original's did, and the reader saw "original 201 {X}; retries 201
// {X}" called different; got now says where the bytes differ.
func TestReport_BodiesThatPrintAlikeSayWhereTheyDiffer(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	r := byID(runAgainst(t, &newlineOnReplay{h: payserver.New(), seen: map[string]bool{}}, p))["retry-replayed"]
	if want := `both retries: a body that prints alike but differs at byte `; r.Contract != ContractUnmet || !strings.Contains(r.Got, want) || !strings.Contains(r.Got, `\n"`) {
		t.Errorf("contract %s, got %s\n  want unmet, saying %q and showing the newline", r.Contract, r.Got, want)
	}
}

// TestHiddenDiff_SaysWhereBytesTheReportCutsDiffer: bodies that differ past
// what the report prints, or in white space it trims, are told apart with
// the bytes around the first difference; bodies that print differently,
// or are the same, need nothing more.
func TestHiddenDiff_SaysWhereBytesTheReportCutsDiffer(t *testing.T) {
	long := `{"id":"p1","note":"` + strings.Repeat("x", 200) + `","at":"12:00:01"}`
	for _, c := range []struct{ a, orig, want string }{
		{`{"id":1}` + "\n", `{"id":1}`, `differs at byte 8: "{\"id\":1}\n" (the original's "{\"id\":1}")`},
		{strings.Replace(long, "12:00:01", "12:00:09", 1), long, `differs at byte 234: …"at\":\"12:00:09\"}" (the original's …"at\":\"12:00:01\"}")`},
		{`{"id":2}`, `{"id":1}`, ""},
		{`{"id":1}`, `{"id":1}`, ""},
	} {
		a, orig := answer{status: 201, body: []byte(c.a)}, answer{status: 201, body: []byte(c.orig)}
		if got := a.hiddenDiff(orig, "the original's"); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("hiddenDiff(%q, %q) = %q, want %q", c.a, c.orig, got, c.want)
		}
	}
}

// limitSecond answers the second POST it sees 429 without passing it on,
// as a rate limit does.
type limitSecond struct {
	h     http.Handler
	mu    sync.Mutex
	posts int
}

func (l *limitSecond) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	if r.Method == http.MethodPost {
		l.posts++
	}
	second := r.Method == http.MethodPost && l.posts == 2
	l.mu.Unlock()
	if second {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":"slow down"}`))
		return
	}
	l.h.ServeHTTP(w, r)
}

// TestKeyCase_ARateLimitIsNoFolding: a second key refused 429 was not
// taken for the first; only 409 or 422, what an API answers a key it
// holds, says the case was folded, or long keys cut, and the witness
// judges the rest.
func TestKeyCase_ARateLimitIsNoFolding(t *testing.T) {
	for _, id := range []string{"key-case", "long-keys"} {
		srv := payserver.New()
		// RawKeys takes a key of any length, as the long keys need.
		srv.Keys = payserver.RawKeys
		r := runScenario(t, &limitSecond{h: srv}, id)
		if r.Money != MoneyClean {
			t.Errorf("%s: money %s, want clean: a 429 is no key taken for another\n  got %s\n  saw %s", id, r.Money, r.Got, r.Saw)
		}
	}
}

// busyOnce answers its nth POST 409 without passing it on, as a server
// that tells a client to come back later does (a lock it could not take,
// a queue full); the retry is served.
type busyOnce struct {
	h     http.Handler
	nth   int
	mu    sync.Mutex
	posts int
}

func (b *busyOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	if r.Method == http.MethodPost {
		b.posts++
	}
	busy := r.Method == http.MethodPost && b.posts == b.nth
	b.mu.Unlock()
	if busy {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"busy, try again"}`))
		return
	}
	b.h.ServeHTTP(w, r)
}

// TestKeysApart_A409IsRetriedBeforeItIsJudged: a 409 tells its client to
// come back, and conform does before it judges the answer; a second key
// answered 409 once and served on its retry was not taken for the first,
// and a principal answered 409 once and served on its retry lost nothing.
func TestKeysApart_A409IsRetriedBeforeItIsJudged(t *testing.T) {
	for _, tc := range []struct {
		id  string
		nth int
	}{{"key-case", 2}, {"long-keys", 2}, {"two-principals-one-key", 1}, {"two-principals-one-key", 2}} {
		srv := payserver.New()
		srv.Keys = payserver.RawKeys
		r := runScenario(t, &busyOnce{h: srv, nth: tc.nth}, tc.id)
		if r.Money != MoneyClean {
			t.Errorf("%s, POST %d answered 409 once: money %s, want clean\n  got %s\n  saw %s", tc.id, tc.nth, r.Money, r.Got, r.Saw)
		}
	}
}

// TestKeyReused_EachEditMember: an API whose fingerprint leaves out a
// member answers a resubmission that changes that member with the
// original's result. A profile whose edit names only a member the
// fingerprint covers cannot see it; one whose edit lists both members
// tries each under the original's key, and finds the one left out. An
// API that compares the whole payload refuses both.
func TestKeyReused_EachEditMember(t *testing.T) {
	both := func(p *Profile) { p.Edit = Edits{"cents", "note"} }
	for _, c := range []struct {
		name        string
		fingerprint []string
		edit        func(*Profile)
		money       string
		contract    string
	}{
		{"whole payload, both edits", nil, both, MoneyClean, ContractMet},
		{"payee and cents, cents edited", []string{"payee", "cents"}, nil, MoneyClean, ContractMet},
		{"payee and cents, both edits", []string{"payee", "cents"}, both, MoneyHarmed, ContractUnmet},
	} {
		srv := payserver.New()
		srv.Fingerprint = c.fingerprint
		r := byID(attack(t, srv, c.edit, 100))["key-reused-other-payload"]
		if r.Money != c.money || r.Contract != c.contract {
			t.Errorf("%s: money %s, contract %s; want %s, %s\n  sent %s\n  got %s\n  saw %s", c.name, r.Money, r.Contract, c.money, c.contract, r.Sent, r.Got, r.Saw)
		}
		if c.money == MoneyHarmed && (!strings.Contains(r.Sent, "then with note edited") || !strings.Contains(r.Saw, "note edited was answered 2xx")) {
			t.Errorf("%s: sent %s\n  saw %s\n  want each edit named", c.name, r.Sent, r.Saw)
		}
	}
}

// TestKeyReused_TheOriginalAgainAfterTheEdit: a refused edit must leave
// the key as it was. A server that forgets a key on every error it
// answers met the 422 and was clean, and the original's retry after the
// edit pays again; one that keeps the edit's payload as the key's
// refuses that retry, and its client never learns its result. The
// original sent again after the edits shows both.
func TestKeyReused_TheOriginalAgainAfterTheEdit(t *testing.T) {
	forgets, takes := payserver.New(), payserver.New()
	forgets.ForgetOnMismatch = true
	takes.TakeOnMismatch = true
	for _, c := range []struct {
		name  string
		srv   *payserver.Server
		money string
		saw   string
	}{
		{"the key kept", payserver.New(), MoneyClean, "due the original once and the edit never, a move of 1; the witness moved by 1"},
		{"the key forgotten", forgets, MoneyHarmed, "answered anew, not with its result: the refused edit made the API forget the key; alice: due the original once and the edit never, a move of 1; the witness moved by 2"},
		{"the edit's payload kept", takes, MoneyHarmed, "the original sent again after the edit was not answered 2xx"},
	} {
		r := runScenario(t, c.srv, "key-reused-other-payload")
		if r.Money != c.money || r.Contract != ContractMet || !strings.Contains(r.Saw, c.saw) || !strings.HasSuffix(r.Sent, ", then the original again") {
			t.Errorf("%s: money %s, contract %s; want %s, met, saying %q\n  sent %s\n  got %s\n  saw %s", c.name, r.Money, r.Contract, c.money, c.saw, r.Sent, r.Got, r.Saw)
		}
	}
}

// callerView serves payserver with each payment answer rendered for the
// caller who asked ("customer": its X-Api-Key). Unless scoped, it answers
// from a store of answers kept by key alone, the first one's kept: as an
// API that looks a key up by caller but stores its answer under a unique
// index on the key alone does. Each caller's payment executes, and the
// second is told the first one's, id and all, under its own name: the
// bytes differ, and the answers were once taken for each its own.
type callerView struct {
	h      http.Handler
	scoped bool
	mu     sync.Mutex
	stored map[string][]byte
}

func (s *callerView) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if r.Method == http.MethodPost && rec.Code == http.StatusCreated {
		key := r.Header.Get("Idempotency-Key")
		if s.scoped {
			key = r.Header.Get("X-Api-Key") + "\x00" + key
		}
		s.mu.Lock()
		if stored, ok := s.stored[key]; ok {
			body = stored
		} else {
			s.stored[key] = body
		}
		s.mu.Unlock()
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err == nil {
			doc["customer"] = r.Header.Get("X-Api-Key")
			body, _ = json.Marshal(doc)
		}
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// TestTwoPrincipals_TheOthersOperationUnderOwnName: a second principal
// answered with the first one's payment rendered under its own name was
// clean in both scenarios (its own payment executed too, and the bytes
// are not the first one's). two-principals-one-key now finds the first
// one's {{unique}} in the second's answer, and
// two-principals-same-request the first one's payment id, read from the
// witness's new items; the same server with its answers stored per
// caller is clean.
func TestTwoPrincipals_TheOthersOperationUnderOwnName(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, scoped := range []bool{true, false} {
		got := byID(runAgainst(t, &callerView{h: payserver.New(), scoped: scoped, stored: map[string][]byte{}}, p))
		for id, says := range map[string][]string{
			"two-principals-one-key":      {"the second principal was told the first one's operation: its answer carries \"", "the first one's {{unique}}, which it never sent"},
			"two-principals-same-request": {"at once: ", "one after the other: bob was handed alice's operation, its answer carrying the member \"id\": \"pay_", "which only alice's new item in the witness holds"},
		} {
			r := got[id]
			if scoped {
				if r.Money != MoneyClean {
					t.Errorf("scoped, %s: money %s, want clean\n  got %s\n  saw %s", id, r.Money, r.Got, r.Saw)
				}
				continue
			}
			for _, want := range says {
				if r.Money != MoneyHarmed || !strings.Contains(r.Saw, want) {
					t.Errorf("by key alone, %s: money %s, want harmed, saying %q\n  got %s\n  saw %s", id, r.Money, want, r.Got, r.Saw)
				}
			}
		}
		if v := Summarize(byIDList(got)).Valid(); v == nil || *v == !scoped {
			t.Errorf("scoped %v: valid %v", scoped, v)
		}
	}
}

// connections counts the POSTs that came over a connection which had
// carried a request before.
type connections struct {
	h          http.Handler
	mu         sync.Mutex
	used       map[string]bool
	posts, old int
}

func (c *connections) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	if r.Method == http.MethodPost {
		c.posts++
		if c.used[r.RemoteAddr] {
			c.old++
		}
	}
	c.used[r.RemoteAddr] = true
	c.mu.Unlock()
	c.h.ServeHTTP(w, r)
}

// TestConcurrentDuplicates_CopiesLeaveOverOpenConnections: the copies
// once went through one client whose pool keeps two connections idle, so
// six of them dialed first and reached the API as far apart as their
// dials (and, on an API behind TLS, their handshakes): a server whose
// check and write of the key are two steps, a few hundred microseconds
// apart, was seldom seen to pay twice, and every time once each copy had
// a connection of its own opened before the barrier. Every copy comes
// over a connection already open.
func TestConcurrentDuplicates_CopiesLeaveOverOpenConnections(t *testing.T) {
	c := &connections{h: payserver.New(), used: map[string]bool{}}
	r := runScenario(t, c, "concurrent-duplicates")
	if c.posts != copies || c.old != copies || r.Money != MoneyClean {
		t.Errorf("%d of %d copies over a connection already open, money %s; want all %d, clean\n  got %s", c.old, c.posts, r.Money, copies, r.Got)
	}
}

// duplicateAck answers a retry of a completed key 200
// {"status":"duplicate"}, as a server that stores that a key was used
// but not its answer does.
type duplicateAck struct {
	h    http.Handler
	mu   sync.Mutex
	done map[string]bool
}

func (s *duplicateAck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	key := r.Header.Get("X-Api-Key") + "\x00" + r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	again := r.Method == http.MethodPost && s.done[key]
	s.done[key] = s.done[key] || rec.Code == http.StatusCreated
	s.mu.Unlock()
	maps.Copy(w.Header(), rec.Header())
	if again && rec.Code == http.StatusCreated {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"status":"duplicate"}`))
		return
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// TestLostResponse_TheRetryIsToldWhatWasLost: a retry after a lost
// response answered 200 {"status":"duplicate"} is JSON, and was taken for
// the result; its client still does not know what the operation did. The
// answer the API gave the lost request, kept under the fault transport,
// is what the retry must be answered with.
func TestLostResponse_TheRetryIsToldWhatWasLost(t *testing.T) {
	for _, c := range []struct {
		name     string
		h        http.Handler
		contract string
	}{
		{"answers stored", payserver.New(), ""},
		{"a duplicate acknowledged", &duplicateAck{h: payserver.New(), done: map[string]bool{}}, ContractUnmet},
	} {
		r := runScenario(t, c.h, "lost-response")
		if r.Money != MoneyClean || r.Contract != c.contract || !strings.Contains(r.Got, "(the answer withheld: 201 {") {
			t.Errorf("%s: money %s, contract %q; want clean, %q\n  got %s\n  saw %s", c.name, r.Money, r.Contract, c.contract, r.Got, r.Saw)
		}
		if c.contract != "" && !strings.Contains(r.Saw, `response-withheld: the retry 200 {"status":"duplicate"}, where the answer lost was 201 {"id":"pay_`) {
			t.Errorf("%s: saw %s", c.name, r.Saw)
		}
	}
}

// replayed200 serializes the requests to h and answers a POST of a key
// it has answered before with 200 and that answer's body and headers: a
// replay whose status is not the original's.
type replayed200 struct {
	mu   sync.Mutex
	seen map[string]*httptest.ResponseRecorder
	h    http.Handler
}

func (s *replayed200) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if r.Method != "POST" || key == "" {
		s.h.ServeHTTP(w, r)
		return
	}
	if rec, ok := s.seen[key]; ok {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		w.Write(rec.Body.Bytes())
		return
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	s.seen[key] = rec
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// TestConcurrentDuplicates_AReplayIn200IsNoConflictMissed: copies
// answered 200 with the original's body, after it, are retries answered
// in another form, which retry-replayed judges (a SHOULD); none of them
// met the original running and was refused a conflict, so the MUST of
// concurrent-duplicates is met, with a note that names them.
func TestConcurrentDuplicates_AReplayIn200IsNoConflictMissed(t *testing.T) {
	r := runScenario(t, &replayed200{seen: map[string]*httptest.ResponseRecorder{}, h: payserver.New()}, "concurrent-duplicates")
	if r.Contract != ContractMet || r.Money != MoneyClean || !strings.Contains(r.Note, "the first 2xx's body and headers") {
		t.Errorf("contract %s, money %s, note %q; want met and clean, with a note on the copies' form (got %s)", r.Contract, r.Money, r.Note, r.Got)
	}
	if r := runScenario(t, &replayed200{seen: map[string]*httptest.ResponseRecorder{}, h: payserver.New()}, "retry-replayed"); r.Contract != ContractUnmet {
		t.Errorf("retry-replayed: contract %s, want %s: a replay in 200 is not the original's answer", r.Contract, ContractUnmet)
	}
}

// TestMalformedKey_AnEmptyKeySharedIsSeenInTheFirstRun: the empty
// String is the one key field every run sends alike. An API that takes
// it as a key once showed harmed only from the second run on, its first
// operation keyed empty answered with the result an earlier run left;
// on a fresh API the first run now sends a second operation keyed empty
// and sees it handed the first one's result (witness or not: the
// answers say it), or, an API that compares payloads, refused as if it
// reused the first one's key. The contract is unmet either way (a 2xx
// to an empty key), and an API that refuses it meets it, clean.
func TestMalformedKey_AnEmptyKeySharedIsSeenInTheFirstRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		keyOnly  bool
		witness  bool
		keys     payserver.KeyRule
		money    string
		contract string
		saw      string
	}{
		{"refused", false, true, payserver.StrictKeys, MoneyClean, ContractMet, ""},
		{"shared, answers by the key alone", true, true, payserver.EmptyKeys, MoneyHarmed, ContractUnmet, "another operation keyed empty was answered with the first one's result: the API takes the empty field as a key"},
		{"shared, no witness", true, false, payserver.EmptyKeys, MoneyHarmed, ContractUnmet, "another operation keyed empty was answered with the first one's result"},
		{"shared, payloads compared", false, true, payserver.EmptyKeys, MoneyClean, ContractUnmet, "another operation keyed empty was refused (422) as if it reused the first one's key"},
	} {
		srv := payserver.New()
		srv.Keys, srv.KeyOnly = c.keys, c.keyOnly
		r := runScenarioWith(t, srv, "malformed-key", func(p *Profile) {
			if !c.witness {
				p.Witness = nil
			}
		})
		if r.Money != c.money || r.Contract != c.contract || !strings.Contains(r.Saw, c.saw) {
			t.Errorf("%s, the first run: money %s, contract %s, saw %q; want money %s, contract %s, saw %q\n  got %s", c.name, r.Money, r.Contract, r.Saw, c.money, c.contract, c.saw, r.Got)
		}
		if !strings.Contains(r.Got, "empty: ") || !strings.Contains(r.Got, "; another operation ") {
			t.Errorf("%s: got %q does not give the second operation keyed empty its answer", c.name, r.Got)
		}
	}
}
