package core_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/kit/core"
	"idemlab/kit/labdb"
	"idemlab/kit/request"
)

// postBatch sends body to POST /postings/batch with token and returns
// the status, the results of an answered batch, and the problem type of
// a refused one.
func postBatch(t *testing.T, cl *core.Client, token, contentType, body string) (int, []core.Result, string) {
	t.Helper()
	status, results, problemType, err := sendBatch(cl, token, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, results, problemType
}

// sendBatch is postBatch for a goroutine of a test: it returns an error
// where postBatch ends the test (no answer, a refusal that is no problem,
// an answer that is no list of results).
func sendBatch(cl *core.Client, token, contentType, body string) (status int, results []core.Result, problemType string, err error) {
	return sendBatchFrom(cl, token, contentType, strings.NewReader(body))
}

// sendBatchFrom is sendBatch with a body the test may still be writing.
func sendBatchFrom(cl *core.Client, token, contentType string, body io.Reader) (status int, results []core.Result, problemType string, err error) {
	req, _ := http.NewRequest(http.MethodPost, cl.URL()+"/postings/batch", body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			return resp.StatusCode, nil, "", fmt.Errorf("a refused batch (%d) as %q, not a problem", resp.StatusCode, ct)
		}
		var p struct{ Type string }
		json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, nil, p.Type, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&results); err != nil {
		return resp.StatusCode, nil, "", fmt.Errorf("the batch's answer: %w", err)
	}
	return resp.StatusCode, results, "", nil
}

// member is the JSON of one member of a batch.
func member(key, posting string) string {
	return `{"key":"` + key + `","posting":` + posting + `}`
}

// postingJSON is p as a posting's JSON.
func postingJSON(p core.Posting) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// problemOf is the problem type of a result's body.
func problemOf(r core.Result) string {
	var p struct{ Type string }
	json.Unmarshal(r.Body, &p)
	return p.Type
}

// TestBatch_HostilePostingsAreRefusedAloneInPlace: every body POST
// /postings refuses, sent as a member of one batch beside the real
// posting, is refused in its place with the status and problem type POST
// /postings gives it alone; the real posting in the middle is posted,
// once, and nothing else is. A core that refused the whole batch for one
// bad member, or read members more leniently than a posting alone (the
// last of two members winning, invalid UTF-8 let through), fails.
func TestBatch_HostilePostingsAreRefusedAloneInPlace(t *testing.T) {
	books, ps := bankWithTransfers(t, 1)
	real := ps[0]
	_, cl, token := startCoreWith(t, books)
	hs := hostilePostings(real)
	middle := len(hs) / 2
	var members []string
	for i, h := range hs {
		if i == middle {
			members = append(members, member("real", postingJSON(real)))
		}
		members = append(members, member(fmt.Sprintf("k-%d", i), h.body))
	}
	status, results, _ := postBatch(t, cl, token, "application/json", "["+strings.Join(members, ",")+"]")
	if status != http.StatusOK || len(results) != len(hs)+1 {
		t.Fatalf("%d with %d results, want 200 with %d", status, len(results), len(hs)+1)
	}
	if got := results[middle]; got.Status != http.StatusCreated {
		t.Errorf("the real posting among hostile ones: %d %s, want 201", got.Status, got.Body)
	}
	results = append(results[:middle], results[middle+1:]...)
	for i, h := range hs {
		if got := results[i]; got.Status != h.want || problemOf(got) != h.problem {
			t.Errorf("%s: %d %s, want %d %s", h.name, got.Status, problemOf(got), h.want, h.problem)
		}
	}
	if n := postings(t, cl); n[real.TransferID] != 1 || len(n) != 1 {
		t.Fatalf("postings %v, want %s once", n, real.TransferID)
	}
}

// TestBatch_RefusedWholeChangesNothing: a request that is not a batch the
// core reads is refused whole with one problem, and posts nothing, not
// even the good postings it carries. A core that posted what it could
// read of a broken batch (the members before the garbage, the first of
// two arrays, the last of two keys) fails.
func TestBatch_RefusedWholeChangesNothing(t *testing.T) {
	_, cl, token := startCoreWith(t, nil)
	good := member("k-1", postingJSON(posting))
	other := member("k-2", postingJSON(core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 7}))
	var tooMany []string
	for i := range request.MaxBatch + 1 {
		tooMany = append(tooMany, member(fmt.Sprintf("k-%d", i), postingJSON(posting)))
	}
	for _, tc := range []struct {
		name, token, contentType, body string
		want                           int
		problem                        string
	}{
		{"no token", "", "application/json", "[" + good + "]", 401, "/problems/unauthorized"},
		{"another token", "tok_customer", "application/json", "[" + good + "]", 401, "/problems/unauthorized"},
		{"text/plain", token, "text/plain", "[" + good + "]", 415, "/problems/unsupported-media-type"},
		{"not an array", token, "application/json", good, 400, "/problems/invalid-batch"},
		{"an empty batch", token, "application/json", `[]`, 400, "/problems/invalid-batch"},
		{"an empty body", token, "application/json", ``, 400, "/problems/invalid-batch"},
		{"trailing garbage", token, "application/json", "[" + good + "]x", 400, "/problems/invalid-batch"},
		{"two arrays", token, "application/json", "[" + good + "][" + other + "]", 400, "/problems/invalid-batch"},
		{"cut short", token, "application/json", "[" + good + "," + other, 400, "/problems/invalid-batch"},
		{"a member that is no object", token, "application/json", "[" + good + `,"tr_2"]`, 400, "/problems/invalid-batch"},
		{"a member's key twice", token, "application/json", `[{"key":"k-9","key":"k-1","posting":` + postingJSON(posting) + `}]`, 400, "/problems/invalid-batch"},
		{"a member's posting twice", token, "application/json", `[{"key":"k-9","posting":{},"posting":` + postingJSON(posting) + `}]`, 400, "/problems/invalid-batch"},
		{"an unknown member", token, "application/json", `[{"key":"k-9","posting":` + postingJSON(posting) + `,"memo":"x"}]`, 400, "/problems/invalid-batch"},
		{"one posting over the count", token, "application/json", "[" + strings.Join(tooMany, ",") + "]", 413, "/problems/request-too-large"},
		{"a body over the size", token, "application/json", "[" + good + strings.Repeat(" ", request.MaxBatchBody) + "]", 413, "/problems/request-too-large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, problemType := postBatch(t, cl, tc.token, tc.contentType, tc.body)
			if status != tc.want || problemType != tc.problem {
				t.Errorf("%d %s, want %d %s", status, problemType, tc.want, tc.problem)
			}
		})
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Fatalf("refused batches posted %v", n)
	}
}

// TestBatch_MembersAnsweredInOrderAsIfSentOneByOne: each member is
// answered in its place as POST /postings would have answered it, sent
// after the members before it: a key already used gets the first receipt
// (200, replayed) with the same posting and 422 with another, the same
// key twice in one batch likewise, a member without a key or with a bad
// one 400. A core that answered in another order, applied a batch's
// duplicate twice, or let a reused key through, fails.
func TestBatch_MembersAnsweredInOrderAsIfSentOneByOne(t *testing.T) {
	_, cl, token := startCoreWith(t, nil)
	first, _, err := cl.Post(t.Context(), "k-1", posting)
	if err != nil {
		t.Fatal(err)
	}
	p2 := core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 7}
	p3 := core.Posting{TransferID: "tr_3", From: "acc_b", To: "acc_a", Amount: 9}
	body := "[" + strings.Join([]string{
		member("k-2", postingJSON(p2)),
		member("k-1", postingJSON(posting)),
		member("k-1", postingJSON(p3)),
		member("k-2", postingJSON(p2)),
		member("k-2", postingJSON(p3)),
		`{"posting":` + postingJSON(p3) + `}`,
		member("a key with spaces", postingJSON(p3)),
		`{"key":7,"posting":` + postingJSON(p3) + `}`,
		`{"key":"k-3"}`,
		member("k-3", postingJSON(p3)),
	}, ",") + "]"
	status, results, _ := postBatch(t, cl, token, "application/json", body)
	want := []struct {
		status   int
		replayed bool
		problem  string
	}{
		{201, false, ""},
		{200, true, ""},
		{422, false, "/problems/idempotency-key-reused"},
		{200, true, ""},
		{422, false, "/problems/idempotency-key-reused"},
		{400, false, "/problems/missing-idempotency-key"},
		{400, false, "/problems/invalid-idempotency-key"},
		{400, false, "/problems/invalid-idempotency-key"},
		{400, false, "/problems/invalid-posting"},
		{201, false, ""},
	}
	if status != http.StatusOK || len(results) != len(want) {
		t.Fatalf("%d with %d results, want 200 with %d", status, len(results), len(want))
	}
	for i, w := range want {
		if got := results[i]; got.Status != w.status || got.Replayed != w.replayed || problemOf(got) != w.problem {
			t.Errorf("member %d: %d replayed=%v %s %s, want %d replayed=%v %s", i, got.Status, got.Replayed, problemOf(got), got.Body, w.status, w.replayed, w.problem)
		}
	}
	var replay, created core.Receipt
	json.Unmarshal(results[1].Body, &replay)
	json.Unmarshal(results[0].Body, &created)
	if replay != first {
		t.Errorf("k-1 again: %+v, want the first receipt %+v", replay, first)
	}
	var again core.Receipt
	json.Unmarshal(results[3].Body, &again)
	if again != created || created.TransferID != "tr_2" || created.Key != "k-2" {
		t.Errorf("k-2 twice in one batch: %+v then %+v, want one posting of tr_2", created, again)
	}
	if n := postings(t, cl); n["tr_1"] != 1 || n["tr_2"] != 1 || n["tr_3"] != 1 || len(n) != 3 {
		t.Errorf("postings %v, want tr_1, tr_2 and tr_3 once each", n)
	}
}

// TestBatch_ReadsTheBooksOnce: a batch of right postings costs the core
// one read of the bank's books, not one per posting. A core that read
// each posting's transfer on its own fails.
func TestBatch_ReadsTheBooksOnce(t *testing.T) {
	books, ps := bankWithTransfers(t, 5)
	counted := &countedBooks{Books: books}
	_, cl, _ := startCoreWith(t, counted)
	b := make([]core.Send, len(ps))
	for i, p := range ps {
		b[i] = core.Send{Key: "k-" + p.TransferID, Posting: p}
	}
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		if s.Err != nil {
			t.Fatalf("%s: %v", s.Posting.TransferID, s.Err)
		}
	}
	if n := counted.reads.Load(); n != 1 {
		t.Errorf("a batch of %d right postings read the books %d times, want 1", len(ps), n)
	}
}

// TestPostAll_APoisonInTheMiddleLeavesTheOthersAcknowledged: a posting
// the core rejects for good in the middle of a batch carries its final
// refusal and the core's answer; the postings before and after it are
// acknowledged and posted once. A PostAll or a core that let the poison
// spoil its batch fails.
func TestPostAll_APoisonInTheMiddleLeavesTheOthersAcknowledged(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Poison("tr_4")
	b := batch(7)
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		var r *core.Refusal
		switch {
		case s.Posting.TransferID == "tr_4":
			if !errors.As(s.Err, &r) || !core.Final(s.Err) || !strings.Contains(string(r.Body), core.Rejected.URI()) {
				t.Errorf("tr_4: %v, want rejected for good with the core's answer", s.Err)
			}
		case s.Err != nil:
			t.Errorf("%s: %v, want acknowledged", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 6 || n["tr_4"] != 0 {
		t.Errorf("postings %v, want every transfer but tr_4", n)
	}
}

// TestPostAll_ALostAnswerThenTheResendGivesReplays: a batch whose answer
// is lost was applied all the same; the same batch sent again under the
// same keys is acknowledged with replays, and nothing is posted twice.
// Answered is called once per answer that acknowledged something, not
// for the lost one. A core that lost the answer before applying, or a
// resend that posted again, fails.
func TestPostAll_ALostAnswerThenTheResendGivesReplays(t *testing.T) {
	c, cl := startCore(t)
	answered := 0
	cl.Answered = func() { answered++ }
	c.Faults.LoseAnswers(2)
	b := batch(5)
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		if s.Err == nil || core.Final(s.Err) {
			t.Fatalf("%s after a lost answer: %v, want an error for now", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 5 || answered != 0 {
		t.Fatalf("after the lost answer: postings %v (want 5 transfers), Answered called %d times", n, answered)
	}
	again := batch(5)
	cl.PostAll(t.Context(), again, 1)
	for _, s := range again {
		if s.Err != nil {
			t.Errorf("%s sent again: %v", s.Posting.TransferID, s.Err)
		}
	}
	ps, err := cl.Postings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 || answered != 1 {
		t.Errorf("%d postings after the resend (want 5), Answered called %d times (want 1)", len(ps), answered)
	}
	if _, replayed, err := cl.Post(t.Context(), again[0].Key, again[0].Posting); err != nil || !replayed {
		t.Errorf("the first posting once more: %v, replayed %v", err, replayed)
	}
}

// TestPostAll_ALargeBatchGoesInChunksAndStopsWhileDown: more postings
// than a batch takes go in requests of request.MaxBatch; while the core
// is down the first request is refused whole, every posting it carried
// keeps the 503, and PostAll sends no more: the rest are not sent. Up
// again, every posting goes through. A PostAll that sent a request over
// the limit, or went on sending into a core that is down, fails.
func TestPostAll_ALargeBatchGoesInChunksAndStopsWhileDown(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.SetDown(true)
	b := batch(2*request.MaxBatch + 1)
	cl.PostAll(t.Context(), b, 1)
	for i, s := range b {
		var r *core.Refusal
		switch {
		case i < request.MaxBatch && (!errors.As(s.Err, &r) || r.Status != http.StatusServiceUnavailable || r.TransferID != s.Posting.TransferID):
			t.Fatalf("%s while down: %v, want its 503", s.Posting.TransferID, s.Err)
		case i >= request.MaxBatch && !errors.Is(s.Err, core.ErrNotSent):
			t.Fatalf("%s while down: %v, want not sent", s.Posting.TransferID, s.Err)
		}
	}
	if got := c.Faults.Refused(); got != request.MaxBatch {
		t.Errorf("the core down was sent %d postings, want one request's %d", got, request.MaxBatch)
	}
	c.Faults.SetDown(false)
	cl.PostAll(t.Context(), b, 2)
	for _, s := range b {
		if s.Err != nil {
			t.Fatalf("%s once up: %v", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != len(b) {
		t.Errorf("%d transfers posted, want %d", len(n), len(b))
	}
}

// TestFaults_DownIsDecidedBeforeTheBody: whether the core is down for a
// request is decided as the request arrives, or as the hold it waited in
// is released, not once its body has been read. A batch released while
// the core is down, whose body ends only after the core is back, is
// refused whole with 503 and nothing of it is applied; one released once
// the core is back is applied. A core that looked only after reading the
// body applied the first: a relay's pass that came while the core was
// down went through unheld after it came back, where S9.backlog counts
// on holding every pass that posts.
func TestFaults_DownIsDecidedBeforeTheBody(t *testing.T) {
	books, ps := bankWithTransfers(t, 2)
	c, cl, token := startCoreWith(t, books)
	for i, downAtRelease := range []bool{true, false} {
		p := ps[i]
		body := "[" + member(fmt.Sprintf("outbox-%d", i), postingJSON(p)) + "]"
		c.Faults.SetDown(true)
		c.Faults.Hold()
		held := c.Faults.Held()
		type answer struct {
			status      int
			problemType string
			err         error
		}
		answered := make(chan answer, 1)
		r, w := io.Pipe()
		go func() {
			status, _, problemType, err := sendBatchFrom(cl, token, "application/json", r)
			answered <- answer{status, problemType, err}
		}()
		// The request's headers reach the core before its body: it waits
		// in the hold. A core that read the body first never counts it.
		for deadline := time.Now().Add(10 * time.Second); c.Faults.Held() == held; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the batch never reached the held core before its body")
			}
		}
		if !downAtRelease {
			c.Faults.SetDown(false)
		}
		c.Faults.Release()
		c.Faults.SetDown(false)
		io.WriteString(w, body)
		w.Close()
		a := <-answered
		if a.err != nil {
			t.Fatal(a.err)
		}
		posted := postings(t, cl)[p.TransferID]
		switch {
		case downAtRelease && (a.status != http.StatusServiceUnavailable || a.problemType != core.Down.URI() || posted != 0):
			t.Errorf("released while down, the body sent once the core was back: %d %s, posted %d times; want 503 %s, nothing posted", a.status, a.problemType, posted, core.Down.URI())
		case !downAtRelease && (a.status != http.StatusOK || posted != 1):
			t.Errorf("released once the core was back: %d %s, posted %d times; want 200, posted once", a.status, a.problemType, posted)
		}
	}
}

// TestBatch_TheLimitsAreTheOnesPublished: docs/api.md states the batch's
// limits, and they are the ones the core keeps (the requests at and over
// them are in the tests above). A limit changed in one place only fails.
func TestBatch_TheLimitsAreTheOnesPublished(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("a JSON array of 1 to %d members", request.MaxBatch),
		fmt.Sprintf("body of at most %d MiB", request.MaxBatchBody>>20),
		fmt.Sprintf("more than %d postings, or a body over %d MiB", request.MaxBatch, request.MaxBatchBody>>20),
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
			t.Errorf("docs/api.md does not say %q", want)
		}
	}
}

// BenchmarkPostAll sends 4 batches' worth of postings, new ones each
// time, one request at a time and four at once: whether PostAll's
// parallel still pays once a request carries a batch.
func BenchmarkPostAll(b *testing.B) {
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			db, err := labdb.Open(b.Context(), ":memory:")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			token := core.NewToken()
			c, err := core.New(b.Context(), db.DB, core.Config{Token: token})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(c.Handler())
			defer srv.Close()
			cl := core.NewClient(core.TokenURL(srv.URL, token), srv.Client())
			for i := 0; b.Loop(); i++ {
				sends := batch(4 * request.MaxBatch)
				for j := range sends {
					sends[j].Key = fmt.Sprintf("%d-%s", i, sends[j].Key)
				}
				cl.PostAll(b.Context(), sends, parallel)
				if sends[0].Err != nil {
					b.Fatal(sends[0].Err)
				}
			}
		})
	}
}

// TestBatch_OverlappingBatchesInOppositeOrdersBothApply: two batches that
// hold the same keys, one in the reverse order of the other (one row
// re-sent by two relays), sent at once behind a barrier, round after
// round: both are answered, and every posting is applied once. On
// PostgreSQL a core that wrote a batch in the batch's order deadlocked:
// each batch held the row of one key and waited for a key the other held,
// and PostgreSQL aborted one (40P01), a 500 to a relay that did nothing
// wrong.
func TestBatch_OverlappingBatchesInOppositeOrdersBothApply(t *testing.T) {
	if labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL {
		t.Skip("SQLite runs one writer at a time: two batches never each hold a key the other waits for")
	}
	_, cl, token := startCoreWith(t, nil)
	const rounds, keys = 40, 16
	for r := range rounds {
		members := make([]string, keys)
		for i := range members {
			p := core.Posting{TransferID: fmt.Sprintf("tr_%d_%d", r, i), From: "acc_a", To: "acc_b", Amount: int64(i + 1)}
			members[i] = member(fmt.Sprintf("k-%d-%d", r, i), postingJSON(p))
		}
		reversed := slices.Clone(members)
		slices.Reverse(reversed)
		bodies := [2]string{"[" + strings.Join(members, ",") + "]", "[" + strings.Join(reversed, ",") + "]"}
		var statuses [2]int
		var results [2][]core.Result
		var problems [2]string
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, body := range bodies {
			wg.Go(func() {
				<-start
				statuses[i], results[i], problems[i], errs[i] = sendBatch(cl, token, "application/json", body)
			})
		}
		close(start)
		wg.Wait()
		for i := range bodies {
			if errs[i] != nil || statuses[i] != http.StatusOK {
				t.Fatalf("round %d, batch %d: %d %s %v, want 200: the two batches, holding the same keys, deadlocked", r, i, statuses[i], problems[i], errs[i])
			}
			for j, res := range results[i] {
				if res.Status != http.StatusCreated && res.Status != http.StatusOK {
					t.Fatalf("round %d, batch %d, member %d: %d %s, want posted", r, i, j, res.Status, res.Body)
				}
			}
		}
	}
	n := postings(t, cl)
	for r := range rounds {
		for i := range keys {
			if id := fmt.Sprintf("tr_%d_%d", r, i); n[id] != 1 {
				t.Fatalf("%s posted %d times, want once", id, n[id])
			}
		}
	}
}

// TestBatch_ARepeatedKeyKeepsItsOrderWhateverTheWriteOrder: a batch
// larger than a few members whose keys come in the reverse of the order
// the core writes them, each key sent twice with two different postings:
// the first of each is posted (201) and the second refused
// (idempotency-key-reused), in their places. A core that wrote the batch
// sorted by an unstable sort, which may put the second copy of a key
// before the first, fails.
func TestBatch_ARepeatedKeyKeepsItsOrderWhateverTheWriteOrder(t *testing.T) {
	_, cl, token := startCoreWith(t, nil)
	const keys = 40
	var members []string
	for i := keys - 1; i >= 0; i-- {
		key := fmt.Sprintf("k-%02d", i)
		first := core.Posting{TransferID: fmt.Sprintf("tr_%d", i), From: "acc_a", To: "acc_b", Amount: int64(i + 1)}
		second := core.Posting{TransferID: fmt.Sprintf("tr_%d", i), From: "acc_b", To: "acc_a", Amount: int64(i + 1)}
		members = append(members, member(key, postingJSON(first)), member(key, postingJSON(second)))
	}
	status, results, _ := postBatch(t, cl, token, "application/json", "["+strings.Join(members, ",")+"]")
	if status != http.StatusOK || len(results) != len(members) {
		t.Fatalf("%d with %d results, want 200 with %d", status, len(results), len(members))
	}
	for i := 0; i < len(results); i += 2 {
		if results[i].Status != http.StatusCreated || problemOf(results[i+1]) != "/problems/idempotency-key-reused" {
			t.Errorf("members %d and %d, one key: %d then %d %s, want 201 then 422 idempotency-key-reused", i, i+1, results[i].Status, results[i+1].Status, problemOf(results[i+1]))
		}
	}
}
