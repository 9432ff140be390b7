package core_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/kit/core"
	"idemlab/kit/labdb"
)

// startCore serves a core on a database of its own, without books (it
// checks a posting's form only), and returns it with a client that holds
// its token.
func startCore(t *testing.T) (*core.Core, *core.Client) {
	t.Helper()
	c, cl, _ := startCoreWith(t, nil)
	return c, cl
}

// startCoreWith is startCore with the bank's books; it returns the token
// too, for requests made by hand. The core's postings are in a database of
// the test's own on the engine labdb.TestTarget names: PostgreSQL where
// the environment gives a cluster, where a batch's failed insert must not
// end its transaction.
func startCoreWith(t *testing.T, books core.Books) (*core.Core, *core.Client, string) {
	t.Helper()
	db, err := labdb.OpenOwn(t.Context(), labdb.TestTarget())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	token := core.NewToken()
	c, err := core.New(t.Context(), db.DB, core.Config{Token: token, Books: books})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return c, core.NewClient(core.TokenURL(srv.URL, token), srv.Client()), token
}

var posting = core.Posting{TransferID: "tr_1", From: "acc_a", To: "acc_b", Amount: 1500}

// postings counts the core's postings per transfer.
func postings(t *testing.T, cl *core.Client) map[string]int {
	t.Helper()
	ps, err := cl.Postings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range ps {
		n[p.TransferID]++
	}
	return n
}

// TestPost_AKeyIsAppliedOnce: a posting sent again under its key gets the
// first receipt back, marked replayed, and is posted once; the same
// transfer under another key is another posting (the core trusts the key,
// which is why a relay must keep one key per outbox row). A core that
// applied every request, or deduplicated by transfer, fails.
func TestPost_AKeyIsAppliedOnce(t *testing.T) {
	_, cl := startCore(t)
	ctx := t.Context()
	first, replayed, err := cl.Post(ctx, "outbox-1", posting)
	if err != nil || replayed {
		t.Fatalf("first post: %v, replayed %v", err, replayed)
	}
	again, replayed, err := cl.Post(ctx, "outbox-1", posting)
	if err != nil || !replayed || again != first {
		t.Fatalf("the retry: %v, replayed %v, receipt %+v, want %+v", err, replayed, again, first)
	}
	if n := postings(t, cl)["tr_1"]; n != 1 {
		t.Fatalf("one posting sent twice under one key was posted %d times", n)
	}
	if _, _, err := cl.Post(ctx, "outbox-2", posting); err != nil {
		t.Fatal(err)
	}
	if n := postings(t, cl)["tr_1"]; n != 2 {
		t.Fatalf("the transfer under a second key: posted %d times, want 2", n)
	}
}

// TestPost_AKeyReusedForAnotherPostingIsRefused: 422, and nothing posted.
func TestPost_AKeyReusedForAnotherPostingIsRefused(t *testing.T) {
	_, cl := startCore(t)
	if _, _, err := cl.Post(t.Context(), "outbox-1", posting); err != nil {
		t.Fatal(err)
	}
	other := posting
	other.TransferID, other.Amount = "tr_2", 99
	if _, _, err := cl.Post(t.Context(), "outbox-1", other); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("another posting under a used key: %v, want 422", err)
	}
	if n := postings(t, cl); n["tr_2"] != 0 || n["tr_1"] != 1 {
		t.Fatalf("postings %v", n)
	}
}

// TestPost_SimultaneousRetriesPostOnce: 32 sends of one posting under one
// key at once: one posting, every answer its receipt, no error.
func TestPost_SimultaneousRetriesPostOnce(t *testing.T) {
	_, cl := startCore(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	receipts := make([]core.Receipt, 32)
	errs := make([]error, 32)
	for i := range receipts {
		wg.Go(func() {
			<-start
			receipts[i], _, errs[i] = cl.Post(context.Background(), "outbox-1", posting)
		})
	}
	close(start)
	wg.Wait()
	for i := range receipts {
		if errs[i] != nil || receipts[i] != receipts[0] {
			t.Fatalf("send %d: %v, receipt %+v, want %+v", i, errs[i], receipts[i], receipts[0])
		}
	}
	if n := postings(t, cl)["tr_1"]; n != 1 {
		t.Fatalf("posted %d times", n)
	}
}

// TestFaults_DownAppliesNothingAndALostAnswerWasApplied: while the core is
// down a posting gets 503 and is not posted; a lost answer is an error to
// the sender although the posting was applied, and sending it again under
// its key gets that posting's receipt. A core that applied while down, or
// lost the answer before applying, fails.
func TestFaults_DownAppliesNothingAndALostAnswerWasApplied(t *testing.T) {
	c, cl := startCore(t)
	ctx := t.Context()
	c.Faults.SetDown(true)
	if _, _, err := cl.Post(ctx, "outbox-1", posting); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a post while down: %v, want 503", err)
	}
	if n := postings(t, cl)["tr_1"]; n != 0 || c.Faults.Refused() != 1 {
		t.Fatalf("posted while down (%d), refusals counted %d", n, c.Faults.Refused())
	}
	c.Faults.SetDown(false)
	c.Faults.LoseAnswers(1)
	if _, _, err := cl.Post(ctx, "outbox-1", posting); err == nil {
		t.Fatal("a lost answer came back")
	}
	if n := postings(t, cl)["tr_1"]; n != 1 {
		t.Fatalf("a posting whose answer was lost: posted %d times, want 1", n)
	}
	rc, replayed, err := cl.Post(ctx, "outbox-1", posting)
	if err != nil || !replayed || rc.TransferID != "tr_1" {
		t.Fatalf("sent again: %v, replayed %v, %+v", err, replayed, rc)
	}
	if n := postings(t, cl)["tr_1"]; n != 1 {
		t.Fatalf("posted %d times after the resend", n)
	}
}

// TestFaults_SilenceTimesOutAndAppliesNothing: a posting request the
// core keeps silent on, alone or in a batch, is given up by a client
// that Hurried hurries, after core.HurriedTimeout, with a timeout error
// (context.DeadlineExceeded, as the client's own timeout gives), and
// nothing of it is posted; sent again under the same keys, unhurried, it
// is posted then, once. A core that applied what it kept silent on, or
// answered it, or a client that did not hurry (it would wait until the
// test's own deadline), fails.
func TestFaults_SilenceTimesOutAndAppliesNothing(t *testing.T) {
	c, cl := startCore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var hurried atomic.Int64
	hurried.Store(2)
	cl.Hurried = func() bool { return hurried.Add(-1) >= 0 }
	c.Faults.Silence(2)
	timedOut := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Client.Timeout") {
			t.Errorf("%s: %v, want the client's timeout", what, err)
		}
	}
	_, _, err := cl.Post(ctx, "outbox-1", posting)
	timedOut("a posting alone", err)
	b := []core.Send{
		{Key: "outbox-2", Posting: core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 2}},
		{Key: "outbox-3", Posting: core.Posting{TransferID: "tr_3", From: "acc_a", To: "acc_b", Amount: 3}},
	}
	cl.PostAll(ctx, b, 1)
	for _, s := range b {
		timedOut(s.Posting.TransferID+" of a batch", s.Err)
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Fatalf("postings %v after two requests the core kept silent on, want none", n)
	}
	postedOnceSentAgain(t, cl, b)
}

// TestFaults_DropUnappliedAppliesNothing: a posting request dropped
// before it is applied, alone or in a batch, is an error to the sender,
// just as a lost answer is, and nothing of it is posted; sent again under
// the same keys, it is posted then, once. A core that applied what it
// dropped, or answered, fails.
func TestFaults_DropUnappliedAppliesNothing(t *testing.T) {
	c, cl := startCore(t)
	ctx := t.Context()
	c.Faults.DropUnapplied(2)
	if _, _, err := cl.Post(ctx, "outbox-1", posting); err == nil {
		t.Fatal("a dropped posting was answered")
	}
	b := []core.Send{
		{Key: "outbox-2", Posting: core.Posting{TransferID: "tr_2", From: "acc_a", To: "acc_b", Amount: 2}},
		{Key: "outbox-3", Posting: core.Posting{TransferID: "tr_3", From: "acc_a", To: "acc_b", Amount: 3}},
	}
	cl.PostAll(ctx, b, 1)
	for _, s := range b {
		var r *core.Refusal
		if s.Err == nil || errors.As(s.Err, &r) {
			t.Errorf("%s of a dropped batch: %v, want no answer", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Fatalf("postings %v after two dropped requests, want none", n)
	}
	postedOnceSentAgain(t, cl, b)
}

// postedOnceSentAgain sends posting again under outbox-1, and batch b
// again under its keys, none of which the core applied: each is posted
// now, and tr_1, tr_2 and tr_3 are in the core once each.
func postedOnceSentAgain(t *testing.T, cl *core.Client, b []core.Send) {
	t.Helper()
	ctx := t.Context()
	if _, replayed, err := cl.Post(ctx, "outbox-1", posting); err != nil || replayed {
		t.Fatalf("sent again: %v, replayed %v, want posted now", err, replayed)
	}
	cl.PostAll(ctx, b, 1)
	for _, s := range b {
		if s.Err != nil {
			t.Errorf("%s sent again: %v", s.Posting.TransferID, s.Err)
		}
	}
	if n := postings(t, cl); len(n) != 3 || n["tr_1"] != 1 || n["tr_2"] != 1 || n["tr_3"] != 1 {
		t.Fatalf("postings %v, want tr_1, tr_2 and tr_3 once each", n)
	}
}
