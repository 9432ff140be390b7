package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/core"
)

// TestRefusal_FinalOrLater: a refusal tells "will never succeed" (the
// core read the posting and refuses it: 400, 413, 422) from "retry later"
// (5xx, 408, 409, 429, and the refusals of the request rather than of the
// posting: 401, 403, 404, 405, 415, and a batch of several refused whole),
// and an error that is no answer at all is never final. A relay that
// dead-lettered a 503, a lost answer or a wrong token would give up
// postings the core would have taken; one that retried a 422 for ever
// would stop behind it.
func TestRefusal_FinalOrLater(t *testing.T) {
	for _, tc := range []struct {
		status int
		whole  bool
		final  bool
	}{
		{http.StatusUnprocessableEntity, false, true},
		{http.StatusBadRequest, false, true},
		{http.StatusRequestEntityTooLarge, false, true},
		{http.StatusUnauthorized, false, false},
		{http.StatusForbidden, false, false},
		{http.StatusNotFound, false, false},
		{http.StatusMethodNotAllowed, false, false},
		{http.StatusUnsupportedMediaType, false, false},
		{http.StatusRequestTimeout, false, false},
		{http.StatusConflict, false, false},
		{http.StatusTooManyRequests, false, false},
		{http.StatusInternalServerError, false, false},
		{http.StatusServiceUnavailable, false, false},
		{http.StatusBadRequest, true, false},
		{http.StatusRequestEntityTooLarge, true, false},
		{http.StatusUnprocessableEntity, true, false},
	} {
		var err error = &core.Refusal{TransferID: "tr_1", Status: tc.status, Whole: tc.whole}
		if got := core.Final(err); got != tc.final {
			t.Errorf("status %d (a batch refused whole: %v): Final %v, want %v", tc.status, tc.whole, got, tc.final)
		}
	}
	if core.Final(errors.New("core: no answer to posting tr_1")) {
		t.Error("no answer taken for a refusal for good")
	}
}

// TestPostAll_AWrongTokenIsNotNow: a relay whose token the core does not
// know (rotated, mistyped) gets 401 for every posting, alone or in a
// batch: a refusal for now, so that the postings stay owed and go through
// once the token is mended, instead of each becoming a dead letter. A
// Final that took every 4xx but 408, 409 and 429 for good fails.
func TestPostAll_AWrongTokenIsNotNow(t *testing.T) {
	c, cl, _ := startCoreWith(t, nil)
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	wrong := core.NewClient(core.TokenURL(srv.URL, core.NewToken()), srv.Client())
	if _, _, err := wrong.Post(t.Context(), "k-tr_1", posting); err == nil || core.Final(err) {
		t.Errorf("one posting under a wrong token: %v, want a refusal for now", err)
	}
	for _, n := range []int{1, 3} {
		b := batch(n)
		wrong.PostAll(t.Context(), b, 1)
		for _, s := range b {
			var r *core.Refusal
			if !errors.As(s.Err, &r) || r.Status != http.StatusUnauthorized || core.Final(s.Err) {
				t.Errorf("a batch of %d under a wrong token, %s: %v, want a 401 for now", n, s.Posting.TransferID, s.Err)
			}
		}
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Errorf("postings %v under a wrong token, want none", n)
	}
}

// TestFaults_PoisonRejectsForGood: a poisoned posting is refused with 422
// posting-rejected under its key and under any other, Post returns the
// core's status and body as a final *Refusal, nothing is posted, and the
// other postings go through. PoisonNext poisons whichever posting comes
// next, and only that one.
func TestFaults_PoisonRejectsForGood(t *testing.T) {
	c, cl := startCore(t)
	ctx := t.Context()
	c.Faults.Poison("tr_1")
	for _, key := range []string{"outbox-1", "outbox-1", "another"} {
		_, _, err := cl.Post(ctx, key, posting)
		var r *core.Refusal
		if !errors.As(err, &r) || r.Status != http.StatusUnprocessableEntity || !core.Final(err) {
			t.Fatalf("poisoned posting under %s: %v, want a final 422 refusal", key, err)
		}
		if !strings.Contains(string(r.Body), `"/problems/posting-rejected"`) {
			t.Errorf("refusal body %s, want the core's problem", r.Body)
		}
	}
	c.Faults.PoisonNext()
	second := core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 10}
	third := core.Posting{TransferID: "tr_3", From: "acc_a", To: "acc_b", Amount: 10}
	if _, _, err := cl.Post(ctx, "outbox-2", second); !core.Final(err) {
		t.Fatalf("the next posting after PoisonNext: %v, want rejected for good", err)
	}
	if _, _, err := cl.Post(ctx, "outbox-3", third); err != nil {
		t.Fatalf("the posting after it: %v, want posted", err)
	}
	if _, _, err := cl.Post(ctx, "outbox-2", second); !core.Final(err) {
		t.Fatalf("the next posting sent again: %v, want rejected again", err)
	}
	if got := c.Faults.Poisoned(); !slices.Equal(got, []string{"tr_1", "tr_2"}) {
		t.Errorf("Poisoned %v, want [tr_1 tr_2]", got)
	}
	// Three sends of tr_1, two of tr_2; tr_3's is not counted.
	if n := c.Faults.PoisonedSends(); n != 5 {
		t.Errorf("PoisonedSends %d, want 5", n)
	}
	if n := postings(t, cl); n["tr_1"] != 0 || n["tr_2"] != 0 || n["tr_3"] != 1 {
		t.Errorf("postings %v, want only tr_3's", n)
	}
}

// TestFaults_LimitAmountRefusesForGood: a posting over the core's own
// limit is refused alone in its batch with 400 invalid-posting, for good,
// sent alone or again; the others are posted, and the first of them, not
// the one over the limit, is the one PoisonNext takes. Answer holds each
// refusal exactly as the client got it, status and body. A limit that
// spoiled the batch, a refusal for now, or an Answer that differs from
// what came fails.
func TestFaults_LimitAmountRefusesForGood(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.LimitAmount(10)
	c.Faults.PoisonNext()
	b := batch(5)
	b[0].Posting.Amount = 11
	cl.PostAll(t.Context(), b, 1)
	for i, s := range b {
		id := s.Posting.TransferID
		var r *core.Refusal
		switch {
		case i == 0 && !(errors.As(s.Err, &r) && r.Status == http.StatusBadRequest && core.Final(s.Err)):
			t.Errorf("%s, over the limit: %v, want refused for good with 400", id, s.Err)
		case i == 1 && !(errors.As(s.Err, &r) && r.Status == http.StatusUnprocessableEntity):
			t.Errorf("%s, the first PoisonNext could take: %v, want 422", id, s.Err)
		case i > 1 && s.Err != nil:
			t.Errorf("%s: %v, want acknowledged", id, s.Err)
		}
		if a, ok := c.Faults.Answer(id); r != nil && (!ok || a.Status != r.Status || !bytes.Equal(a.Body, r.Body)) {
			t.Errorf("Answer(%s) %d %s (%v), want what came: %d %s", id, a.Status, a.Body, ok, r.Status, r.Body)
		}
	}
	_, _, err := cl.Post(t.Context(), "another", b[0].Posting)
	var alone *core.Refusal
	if a, _ := c.Faults.Answer("tr_1"); !errors.As(err, &alone) || !alone.Final() || !bytes.Equal(alone.Body, a.Body) {
		t.Errorf("tr_1 sent alone under another key: %v, want refused for good as Answer says (%s)", err, a.Body)
	}
	if _, ok := c.Faults.Answer("tr_3"); ok {
		t.Error("Answer(tr_3) found, for a posting the core took")
	}
	if n := c.Faults.PoisonedSends(); n != 3 {
		t.Errorf("PoisonedSends %d, want 3 (tr_1 twice, tr_2)", n)
	}
	if n := postings(t, cl); len(n) != 3 || n["tr_1"] != 0 || n["tr_2"] != 0 {
		t.Errorf("postings %v, want tr_3 … tr_5", n)
	}
}

// batch makes n postings, tr_1 … tr_n, each under its own key.
func batch(n int) []core.Send {
	b := make([]core.Send, n)
	for i := range b {
		id := fmt.Sprintf("tr_%d", i+1)
		b[i] = core.Send{Key: "outbox-" + id, Posting: core.Posting{TransferID: id, From: "acc_a", To: "acc_b", Amount: int64(i + 1)}}
	}
	return b
}

// TestPostAll_SendsAgainWhileTheCoreFlaps: a core that refuses every
// other posting for now, inside a batch it answers, gets the refused ones
// again in the same call, under the same keys, once: of 8 postings sent
// in one batch into a core flapping for 12, the first round takes 4 and
// the second 2 of the 4 refused; the other 2 keep their 503. A PostAll
// that left all 4 for a later pass, or sent them again and again, fails.
func TestPostAll_SendsAgainWhileTheCoreFlaps(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Flap(12)
	b := batch(8)
	cl.PostAll(t.Context(), b, len(b))
	refused := 0
	for _, s := range b {
		var r *core.Refusal
		switch {
		case s.Err == nil:
		case errors.As(s.Err, &r) && r.Status == http.StatusServiceUnavailable:
			refused++
		default:
			t.Errorf("%s: %v, want acknowledged or 503", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 6 || refused != 2 {
		t.Errorf("%d transfers posted and %d refused, want 6 and 2", len(n), refused)
	}
	if got := c.Faults.Refused(); got != 6 {
		t.Errorf("the flapping core refused %d postings, want 6 (4, then 2 of the 4 sent again)", got)
	}
}

// TestPostAll_ACrashInASendReachesTheCaller: a lab server's simulated
// crash panics in the send that fires it; PostAll raises it in the
// caller, which the kit's relay driver recovers, rather than in a
// goroutine of its own, which would end the whole process.
func TestPostAll_ACrashInASendReachesTheCaller(t *testing.T) {
	_, cl := startCore(t)
	cl.Answered = func() { panic(http.ErrAbortHandler) }
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("PostAll raised %v, want the send's panic", v)
		}
	}()
	cl.PostAll(t.Context(), batch(3), 2)
	t.Error("PostAll returned after a send panicked")
}

// TestFaults_FlapAlternates: a flapping core refuses every other posting
// of the next n, first the first, and applies the others; then it is up.
// A relay that sends again under the same key gets each posted once.
func TestFaults_FlapAlternates(t *testing.T) {
	c, cl := startCore(t)
	ctx := t.Context()
	c.Faults.Flap(4)
	var got []bool
	for i := range 6 {
		_, _, err := cl.Post(ctx, fmt.Sprintf("k-%d", i), core.Posting{TransferID: fmt.Sprintf("tr_%d", i), From: "acc_a", To: "acc_b", Amount: 1})
		got = append(got, err == nil)
	}
	if want := []bool{false, true, false, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("postings applied %v, want %v", got, want)
	}
	if n := c.Faults.Refused(); n != 2 {
		t.Errorf("Refused %d, want 2", n)
	}
}

// TestFaults_FlapAnswersInTurn: a core flapping with answers refuses
// with each in turn, and the relay's client takes every one for now.
func TestFaults_FlapAnswersInTurn(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Flap(6, core.Failed, core.TooMany)
	var got []int
	for i := range 6 {
		_, _, err := cl.Post(t.Context(), fmt.Sprintf("k-%d", i), core.Posting{TransferID: fmt.Sprintf("tr_%d", i), From: "acc_a", To: "acc_b", Amount: 1})
		var r *core.Refusal
		switch {
		case err == nil:
		case errors.As(err, &r) && !r.Final():
			got = append(got, r.Status)
		default:
			t.Errorf("posting %d: %v, want applied or refused for now", i, err)
		}
	}
	if want := []int{500, 429, 500}; !slices.Equal(got, want) {
		t.Errorf("refused with %v, want %v", got, want)
	}
}

// TestFaults_FlapWithTheRouteWrong: a core flapping behind a deploy or
// a proxy that has its route wrong refuses with 404, 405 and 415, each a
// refusal of the request, for now; the same postings, sent again under
// the same keys, go through. A Final that took every 4xx for good, but
// for the ones a token or a busy core answers (401, 403, 408, 409, 429),
// fails.
func TestFaults_FlapWithTheRouteWrong(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Flap(6, core.RouteMissing, core.PostNotAllowed, core.MediaTypeLost)
	var got []int
	for i := range 3 {
		key, p := fmt.Sprintf("k-%d", i), core.Posting{TransferID: fmt.Sprintf("tr_%d", i), From: "acc_a", To: "acc_b", Amount: 1}
		_, _, err := cl.Post(t.Context(), key, p)
		var r *core.Refusal
		if !errors.As(err, &r) || r.Final() {
			t.Fatalf("posting %d, first try: %v, want a refusal for now", i, err)
		}
		got = append(got, r.Status)
		if _, _, err := cl.Post(t.Context(), key, p); err != nil {
			t.Errorf("posting %d sent again: %v, want it posted", i, err)
		}
	}
	if want := []int{404, 405, 415}; !slices.Equal(got, want) {
		t.Errorf("refused with %v, want %v", got, want)
	}
}

// TestFaults_HoldKeepsPostingsWaiting: a held core answers nothing and
// applies nothing: a caller that gives up waiting gets no answer, and
// the posting is not applied; after Release the same posting, under the
// same key, is applied once. A Hold that let postings through fails.
func TestFaults_HoldKeepsPostingsWaiting(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Hold()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := cl.Post(ctx, "outbox-1", posting); err == nil {
		t.Fatal("a held core answered")
	}
	if n := postings(t, cl); n["tr_1"] != 0 {
		t.Fatalf("a held core applied the posting")
	}
	c.Faults.Release()
	if _, _, err := cl.Post(t.Context(), "outbox-1", posting); err != nil {
		t.Fatalf("after Release: %v", err)
	}
	if n := postings(t, cl); n["tr_1"] != 1 {
		t.Errorf("postings after Release %v, want tr_1 once", n)
	}
}

// TestFaults_LetThroughHoldsTheNext: LetThrough lets the posting the held
// core keeps waiting through, applied, and holds the one sent after it
// until Release. A LetThrough that ended the hold (Release), or let
// nothing through, fails.
func TestFaults_LetThroughHoldsTheNext(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.Hold()
	defer c.Faults.Release()
	answered := make(chan error, 1)
	go func() {
		_, _, err := cl.Post(t.Context(), "outbox-1", posting)
		answered <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); c.Faults.Held() < 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	c.Faults.LetThrough()
	if err := <-answered; err != nil {
		t.Fatalf("the posting let through: %v", err)
	}
	next := core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 700}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := cl.Post(ctx, "outbox-2", next); err == nil {
		t.Fatal("the posting sent after LetThrough was answered: the core no longer held")
	}
	if n := postings(t, cl); n["tr_1"] != 1 || n["tr_2"] != 0 {
		t.Fatalf("postings %v, want tr_1 once and tr_2 not yet", n)
	}
	c.Faults.Release()
	if _, _, err := cl.Post(t.Context(), "outbox-2", next); err != nil {
		t.Fatalf("after Release: %v", err)
	}
}

// TestFaults_LeftCountsHeldRequestsDoneWith: a request the held core
// keeps waiting counts in Left once the core is done with it, after the
// Release, and not before, even if its caller gave it up meanwhile (the
// core reads nothing of a held request, so it sees no caller go); a
// request that never waited does not count. It catches a Left counted as
// requests arrive, which would have a check read the postings before the
// core had applied them.
func TestFaults_LeftCountsHeldRequestsDoneWith(t *testing.T) {
	c, cl := startCore(t)
	if _, _, err := cl.Post(t.Context(), "outbox-1", posting); err != nil {
		t.Fatal(err)
	}
	if n := c.Faults.Left(); n != 0 {
		t.Fatalf("Left %d after a request that never waited, want 0", n)
	}
	c.Faults.Hold()
	defer c.Faults.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := cl.Post(ctx, "outbox-2", posting); err == nil {
		t.Fatal("a held core answered")
	}
	answered := make(chan error, 1)
	go func() {
		_, _, err := cl.Post(t.Context(), "outbox-3", posting)
		answered <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); c.Faults.Held() < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	if n := c.Faults.Left(); n != 0 {
		t.Fatalf("Left %d while two requests wait (one given up by its caller), want 0", n)
	}
	c.Faults.Release()
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); c.Faults.Left() < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	if n := c.Faults.Left(); n != 2 {
		t.Errorf("Left %d once the requests let go were done with, want 2", n)
	}
}

// TestClient_CountsUnanswered: a posting of a transfer whose customer's
// request is still being served, given up on while the core held it, is
// counted unanswered, whoever sent it (the request under its own context
// or a fresh one, the relay's batch while the request waits for it). Not
// counted: one the core answered, with a receipt or a refusal; the relay's
// when no request waits for the transfer; one given up after the request
// was answered, or of a transfer made after it. A client that counted
// every error, or none, or judged by the context a posting was sent
// under, fails. Every request given up on counts in GivenUp, and every
// one the held core kept waiting in Held: a client that counted only the
// unanswered, or a core that counted the requests it answered, fails.
func TestClient_CountsUnanswered(t *testing.T) {
	c, cl := startCore(t)
	request, returned := cl.Serving(t.Context())
	bank.Made(request, posting.TransferID)
	c.Faults.SetDown(true)
	if _, _, err := cl.Post(request, "outbox-1", posting); err == nil {
		t.Fatal("a core down took the posting")
	}
	c.Faults.SetDown(false)
	if _, _, err := cl.Post(request, "outbox-1", posting); err != nil {
		t.Fatal(err)
	}
	if n := cl.Unanswered(); n != 0 {
		t.Fatalf("after a refusal and a receipt: Unanswered %d, want 0", n)
	}
	if n, h := cl.GivenUp(), c.Faults.Held(); n != 0 || h != 0 {
		t.Fatalf("after a refusal and a receipt: GivenUp %d, Held %d, want 0 and 0", n, h)
	}
	c.Faults.Hold()
	defer c.Faults.Release()
	var given int64
	later := core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 700}
	for _, p := range []struct {
		what   string
		answer bool // the request is answered first
		ctx    context.Context
		p      core.Posting
		batch  bool
		want   int64
	}{
		{"the relay's, no request waiting", false, t.Context(), later, true, 0},
		{"the request's", false, request, posting, false, 1},
		{"the request's, under a fresh context", false, t.Context(), posting, false, 2},
		{"the relay's, the request waiting", false, t.Context(), posting, true, 3},
		{"the request's, once answered", true, request, posting, false, 3},
		{"a transfer made once the request was answered", false, request, later, false, 3},
	} {
		if p.answer {
			returned()
			// As a goroutine the handler left running would make it.
			bank.Made(request, later.TransferID)
		}
		ctx, cancel := context.WithTimeout(p.ctx, 200*time.Millisecond)
		var err error
		if p.batch {
			batch := []core.Send{{Key: "outbox-" + p.p.TransferID, Posting: p.p}}
			cl.PostAll(ctx, batch, 1)
			err = batch[0].Err
		} else {
			_, _, err = cl.Post(ctx, "outbox-"+p.p.TransferID, p.p)
		}
		cancel()
		if err == nil {
			t.Fatal("a held core answered")
		}
		if n := cl.Unanswered(); n != p.want {
			t.Errorf("after %s given up on: Unanswered %d, want %d", p.what, n, p.want)
		}
		given++
		if n := cl.GivenUp(); n != given {
			t.Errorf("after %s given up on: GivenUp %d, want %d", p.what, n, given)
		}
	}
	if n := c.Faults.Held(); n != int(given) {
		t.Errorf("Held %d after %d requests came while the core held them, want %d", n, given, given)
	}
}

// TestPostAll_ABatchRefusedWholeIsNotNow: a batch request the core
// refuses as a whole (invalid-batch: cut short on the way, say) says
// nothing of its postings, alone or several: each keeps the refusal
// (Whole), for now. A 413 for a posting sent alone, which PostAll does
// only with one too large for any batch, is that posting's own, for good.
// A PostAll that marked a refusal whole only for several postings would
// make a dead letter of a lone good posting whose batch was cut short.
func TestPostAll_ABatchRefusedWholeIsNotNow(t *testing.T) {
	for _, tc := range []struct {
		status    int
		postings  int
		wantFinal bool
	}{
		{http.StatusBadRequest, 1, false},
		{http.StatusBadRequest, 3, false},
		{http.StatusRequestEntityTooLarge, 3, false},
		{http.StatusRequestEntityTooLarge, 1, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(tc.status)
			fmt.Fprintf(w, `{"type":"/problems/invalid-batch","status":%d}`, tc.status)
		}))
		cl := core.NewClient(core.TokenURL(srv.URL, core.NewToken()), srv.Client())
		b := batch(tc.postings)
		cl.PostAll(t.Context(), b, 1)
		srv.Close()
		for _, s := range b {
			var r *core.Refusal
			if !errors.As(s.Err, &r) || r.Status != tc.status || r.Whole == tc.wantFinal || core.Final(s.Err) != tc.wantFinal {
				t.Errorf("%d for a batch of %d, %s: %v (Whole %v), want Whole %v and Final %v", tc.status, tc.postings, s.Posting.TransferID, s.Err, r != nil && r.Whole, !tc.wantFinal, tc.wantFinal)
			}
		}
	}
}

// TestFaults_RefuseTokenIsARefusalOfTheCaller: while the core refuses its
// caller's token, every posting request, alone or in a batch, gets 401 or
// 403 in turn, for now, and nothing is posted; each request counts in
// Refused; once it takes the token again, the same postings under the same
// keys go through. A fault that answered anything else, or posted, fails.
func TestFaults_RefuseTokenIsARefusalOfTheCaller(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.RefuseToken(true)
	var first *core.Refusal
	if _, _, err := cl.Post(t.Context(), "k-tr_1", posting); !errors.As(err, &first) || first.Status != http.StatusUnauthorized || core.Final(err) {
		t.Errorf("one posting while the token is refused, the first request: %v, want a 401 for now", err)
	}
	b := batch(3)
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		var r *core.Refusal
		if !errors.As(s.Err, &r) || r.Status != http.StatusForbidden || core.Final(s.Err) {
			t.Errorf("%s while the token is refused, the second request: %v, want a 403 for now", s.Posting.TransferID, s.Err)
		}
	}
	if n := c.Faults.Refused(); n != 2 {
		t.Errorf("Refused %d after two refused requests, want 2", n)
	}
	c.Faults.RefuseToken(false)
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		if s.Err != nil {
			t.Errorf("%s once the token is taken again: %v", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 3 {
		t.Errorf("postings %v, want the batch's 3", n)
	}
}

// TestFaults_CutBatchesIsARefusalOfTheRequest: while the core cuts batch
// bodies short, every batch request, of one posting or of several, is
// refused whole with 400 invalid-batch, for now, and nothing is posted; a
// posting sent alone goes through; each cut request counts in Refused;
// once the bodies arrive whole, the same batches under the same keys go
// through. A fault that cut nothing, cut single postings, or posted part
// of a cut batch, fails.
func TestFaults_CutBatchesIsARefusalOfTheRequest(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.CutBatches(true)
	one, three := batch(1), batch(4)[1:]
	for _, b := range [][]core.Send{one, three} {
		cl.PostAll(t.Context(), b, 1)
		for i := range b {
			s := &b[i]
			var r *core.Refusal
			if !errors.As(s.Err, &r) || r.Status != http.StatusBadRequest || !r.Whole || core.Final(s.Err) ||
				!strings.Contains(string(r.Body), "invalid-batch") {
				t.Errorf("%s in a batch of %d cut short: %v, want the batch refused whole, 400 invalid-batch, for now", s.Posting.TransferID, len(b), s.Err)
			}
		}
	}
	if n := c.Faults.Refused(); n != 2 {
		t.Errorf("Refused %d after two batch requests cut short, want 2", n)
	}
	if got := postings(t, cl); len(got) != 0 {
		t.Errorf("postings %v while every batch is cut short, want none", got)
	}
	alone := core.Posting{TransferID: "tr_9", From: "acc_a", To: "acc_b", Amount: 9}
	if _, _, err := cl.Post(t.Context(), "outbox-tr_9", alone); err != nil {
		t.Errorf("a posting sent alone while batches are cut: %v, want it posted", err)
	}
	c.Faults.CutBatches(false)
	for _, b := range [][]core.Send{one, three} {
		cl.PostAll(t.Context(), b, 1)
		for i := range b {
			if s := b[i]; s.Err != nil {
				t.Errorf("%s once the bodies arrive whole: %v", s.Posting.TransferID, s.Err)
			}
		}
	}
	if got := postings(t, cl); len(got) != 5 {
		t.Errorf("postings %v, want the 4 of the batches and the one sent alone", got)
	}
}

// TestFaults_InProgressNextHoldsOneTransferBack: the transfer of the next
// posting received is answered 409 request-in-progress, for now and
// unapplied, alone or in a batch beside postings the core takes, each
// time counted in Refused, until EndInProgress; then the same key posts
// it once. A fault that held back another transfer, applied the held
// one, or held it for good, fails.
func TestFaults_InProgressNextHoldsOneTransferBack(t *testing.T) {
	c, cl := startCore(t)
	c.Faults.InProgressNext()
	b := batch(3)
	for range 2 {
		cl.PostAll(t.Context(), b, 1)
		var r *core.Refusal
		if !errors.As(b[0].Err, &r) || r.Status != http.StatusConflict || r.Whole || core.Final(b[0].Err) {
			t.Errorf("tr_1 held back: %v, want 409 for now, its own", b[0].Err)
		}
		if b[1].Err != nil || b[2].Err != nil {
			t.Errorf("beside it: %v, %v, want both taken", b[1].Err, b[2].Err)
		}
	}
	if got := c.Faults.InProgress(); got != "tr_1" {
		t.Errorf("InProgress %q, want tr_1", got)
	}
	// PostAll sends a posting refused for now beside others taken once
	// more in the same call: two calls, four refusals.
	if n := c.Faults.Refused(); n != 4 {
		t.Errorf("Refused %d, want 4", n)
	}
	if n := postings(t, cl); n["tr_1"] != 0 || n["tr_2"] != 1 || n["tr_3"] != 1 {
		t.Errorf("postings %v while tr_1 is held back, want tr_2 and tr_3 once", n)
	}
	c.Faults.EndInProgress()
	cl.PostAll(t.Context(), b, 1)
	for _, s := range b {
		if s.Err != nil {
			t.Errorf("%s once let through: %v", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); n["tr_1"] != 1 || n["tr_2"] != 1 || n["tr_3"] != 1 {
		t.Errorf("postings %v, want each once", n)
	}
}
