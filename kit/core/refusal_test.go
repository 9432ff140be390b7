package core_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"idemlab/kit/core"
)

// TestRefusal_FinalOrLater: a refusal tells "will never succeed" (a 4xx
// such as 422) from "retry later" (5xx, 408, 409, 429), and an error that
// is no answer at all is never final. A relay that dead-lettered a 503 or
// a lost answer would give up a posting the core would have taken; one
// that retried a 422 for ever would stop behind it.
func TestRefusal_FinalOrLater(t *testing.T) {
	for _, tc := range []struct {
		status int
		final  bool
	}{
		{http.StatusUnprocessableEntity, true},
		{http.StatusBadRequest, true},
		{http.StatusForbidden, true},
		{http.StatusRequestTimeout, false},
		{http.StatusConflict, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusServiceUnavailable, false},
	} {
		var err error = &core.Refusal{TransferID: "tr_1", Status: tc.status}
		if got := core.Final(err); got != tc.final {
			t.Errorf("status %d: Final %v, want %v", tc.status, got, tc.final)
		}
	}
	if core.Final(errors.New("core: no answer to posting tr_1")) {
		t.Error("no answer taken for a refusal for good")
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
	if n := postings(t, cl); n["tr_1"] != 0 || n["tr_2"] != 0 || n["tr_3"] != 1 {
		t.Errorf("postings %v, want only tr_3's", n)
	}
}
