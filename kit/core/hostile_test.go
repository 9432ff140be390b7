package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// bankWithTransfers is a bank's database with its seeded customers and n
// executed transfers, returned as the postings that tell the core about
// them.
func bankWithTransfers(t *testing.T, n int) (*bank.Books, []core.Posting) {
	t.Helper()
	ctx := t.Context()
	db, err := labdb.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := bank.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	clk, err := clock.Open(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	p := bank.DefaultParams()
	cs := bank.Population(p)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := bank.Insert(ctx, tx, cs, p.OpeningBalance); err != nil {
		t.Fatal(err)
	}
	b := bank.New(db.DB, clk, &bank.Faults{}, func() time.Duration { return 0 })
	var ps []core.Posting
	for i := range n {
		tr, err := b.Transfer(ctx, tx, cs[0].ID, bank.TransferRequest{From: cs[0].Accounts[0], To: cs[1].Accounts[0], Amount: int64(1500 + i)})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, core.Posting{TransferID: tr.ID, From: tr.From, To: tr.To, Amount: tr.Amount})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return bank.NewBooks(db.DB), ps
}

// hostile is a body that is not a posting the core may apply, with the
// answer POST /postings gives it.
type hostile struct {
	name, body string
	want       int
	problem    string
}

// hostilePostings are bodies that are JSON values but not the bank's
// posting of real, a transfer it executed.
func hostilePostings(real core.Posting) []hostile {
	from, to, id := `"from":"`+real.From+`"`, `"to":"`+real.To+`"`, `"transfer_id":"`+real.TransferID+`"`
	good := `{` + id + `,` + from + `,` + to + `,"amount":1500}`
	return []hostile{
		{"a member twice, the last one wrong", `{` + id + `,` + from + `,` + to + `,"amount":1500,"amount":9}`, 400, "/problems/invalid-posting"},
		{"from equal to to", `{` + id + `,` + from + `,"to":"` + real.From + `","amount":1500}`, 400, "/problems/invalid-posting"},
		{"an amount of 9e18", `{` + id + `,` + from + `,` + to + `,"amount":9e18}`, 400, "/problems/invalid-posting"},
		{"a zero amount", `{` + id + `,` + from + `,` + to + `,"amount":0}`, 400, "/problems/invalid-posting"},
		{"half a won", `{` + id + `,` + from + `,` + to + `,"amount":0.5}`, 400, "/problems/invalid-posting"},
		{"an amount as a string", `{` + id + `,` + from + `,` + to + `,"amount":"1500"}`, 400, "/problems/invalid-posting"},
		{"invalid UTF-8", `{"transfer_id":"tr_` + "\xff\xfe" + `",` + from + `,` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"a NUL in the transfer id", `{"transfer_id":"tr_a\u0000",` + from + `,` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"a NUL in an account id", `{` + id + `,"from":"acc_a\u0000",` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"a lone surrogate", `{"transfer_id":"tr_\ud800",` + from + `,` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"an unknown member", `{` + id + `,` + from + `,` + to + `,"amount":1500,"memo":"x"}`, 400, "/problems/invalid-posting"},
		{"no transfer id", `{` + from + `,` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"a deposit's id", `{"transfer_id":"dp_1",` + from + `,` + to + `,"amount":1500}`, 400, "/problems/invalid-posting"},
		{"an array", `[` + good + `]`, 400, "/problems/invalid-posting"},
		{"a string", `"` + real.TransferID + `"`, 400, "/problems/invalid-posting"},
		{"a body over 16 KiB", `{` + id + `,` + from + `,` + to + `,"amount":1500` + strings.Repeat(" ", 17<<10) + `}`, 413, "/problems/request-too-large"},
		{"an unknown account", `{` + id + `,` + from + `,"to":"acc_nobody","amount":1500}`, 422, "/problems/unknown-account"},
		{"a transfer that never happened", `{"transfer_id":"tr_never",` + from + `,` + to + `,"amount":1500}`, 422, "/problems/unknown-transfer"},
		{"another amount than the transfer's", `{` + id + `,` + from + `,` + to + `,"amount":1501}`, 422, "/problems/posting-mismatch"},
		{"the accounts swapped", `{` + id + `,"from":"` + real.To + `","to":"` + real.From + `","amount":1500}`, 422, "/problems/posting-mismatch"},
	}
}

// TestPost_RefusesHostilePostings: every request that is not the lab
// server telling the core, in the bank's own terms, about a transfer the
// bank executed gets a 4xx problem and posts nothing; the real posting is
// then posted once. A core without the token check, with the lenient
// decoder it had (the last of two members won, trailing data was ignored,
// any Content-Type and any amount passed), or without its books (a posting
// for a transfer that never happened, or for another amount), fails.
func TestPost_RefusesHostilePostings(t *testing.T) {
	books, ps := bankWithTransfers(t, 1)
	real := ps[0]
	_, cl, token := startCoreWith(t, books)
	good := `{"transfer_id":"` + real.TransferID + `","from":"` + real.From + `","to":"` + real.To + `","amount":1500}`
	bearer := "Bearer " + token
	type request struct {
		name, auth, contentType, body string
		want                          int
		problem                       string
	}
	requests := []request{
		{"no token", "", "application/json", good, 401, "/problems/unauthorized"},
		{"a customer's token", "Bearer tok_customer", "application/json", good, 401, "/problems/unauthorized"},
		{"the token, not as Bearer", "Basic " + token, "application/json", good, 401, "/problems/unauthorized"},
		{"text/plain", bearer, "text/plain", good, 415, "/problems/unsupported-media-type"},
		{"no Content-Type", bearer, "", good, 415, "/problems/unsupported-media-type"},
		{"trailing garbage", bearer, "application/json", good + `x`, 400, "/problems/invalid-posting"},
		{"two values", bearer, "application/json", good + good, 400, "/problems/invalid-posting"},
	}
	for _, h := range hostilePostings(real) {
		requests = append(requests, request{h.name, bearer, "application/json", h.body, h.want, h.problem})
	}
	for i, tc := range requests {
		key := fmt.Sprintf("k-%d", i)
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, cl.URL()+"/postings", strings.NewReader(tc.body))
			req.Header.Set("Idempotency-Key", key)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			status, problemType := send(t, req)
			if status != tc.want || problemType != tc.problem {
				t.Errorf("%d %s, want %d %s", status, problemType, tc.want, tc.problem)
			}
		})
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Fatalf("hostile requests posted %v", n)
	}
	if _, _, err := cl.Post(t.Context(), "outbox-1", real); err != nil {
		t.Fatalf("the real posting: %v", err)
	}
	if n := postings(t, cl); n[real.TransferID] != 1 || len(n) != 1 {
		t.Fatalf("postings %v, want %s once", n, real.TransferID)
	}
}

// TestCore_ReadsOnlyWithTheToken: the postings and the health check are
// the lab server's too: 401 without the token, 200 with it. A core that
// guarded only POST fails.
func TestCore_ReadsOnlyWithTheToken(t *testing.T) {
	_, cl, token := startCoreWith(t, nil)
	for _, path := range []string{"/postings", "/healthz"} {
		for auth, want := range map[string]int{"": 401, "Bearer wrong": 401, "Bearer " + token: 200} {
			req, _ := http.NewRequest(http.MethodGet, cl.URL()+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			if status, _ := send(t, req); status != want {
				t.Errorf("GET %s with %q: %d, want %d", path, auth, status, want)
			}
		}
	}
}

// TestClient_WithoutTheTokenIsRefused: a client given the core's address
// without its token gets 401, and posts nothing.
func TestClient_WithoutTheTokenIsRefused(t *testing.T) {
	_, cl := startCore(t)
	stranger := core.NewClient(cl.URL(), nil)
	if _, _, err := stranger.Post(context.Background(), "k", posting); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a post without the token: %v, want 401", err)
	}
	if n := postings(t, cl); len(n) != 0 {
		t.Fatalf("posted %v", n)
	}
}

// send sends req and returns the status and the problem type it answered.
func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Type string }
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("a refusal as %q, not a problem", ct)
		}
		json.NewDecoder(resp.Body).Decode(&body)
	}
	return resp.StatusCode, body.Type
}

// countedBooks counts the reads of the bank's books a core makes.
type countedBooks struct {
	core.Books
	reads atomic.Int64
}

func (b *countedBooks) AccountExists(ctx context.Context, id string) (bool, error) {
	b.reads.Add(1)
	return b.Books.AccountExists(ctx, id)
}

func (b *countedBooks) Transfers(ctx context.Context, ids []string) (map[string]bank.TransferRecord, error) {
	b.reads.Add(1)
	return b.Books.Transfers(ctx, ids)
}

// TestPost_ARightPostingReadsTheBooksOnce: a posting that says what the
// bank's transfer says costs the core one read of the bank's books (its
// accounts exist since the transfer does); one naming an account the bank
// does not have is still told so. A core that read every account of every
// posting first, three reads, fails.
func TestPost_ARightPostingReadsTheBooksOnce(t *testing.T) {
	books, ps := bankWithTransfers(t, 1)
	real := ps[0]
	counted := &countedBooks{Books: books}
	_, cl, _ := startCoreWith(t, counted)
	if _, _, err := cl.Post(t.Context(), "k-1", real); err != nil {
		t.Fatal(err)
	}
	if n := counted.reads.Load(); n != 1 {
		t.Errorf("a right posting read the books %d times, want 1", n)
	}
	wrong := real
	wrong.To = "acc_nobody"
	_, _, err := cl.Post(t.Context(), "k-2", wrong)
	var r *core.Refusal
	if !errors.As(err, &r) || !strings.Contains(string(r.Body), problem.UnknownAccount.URI()) {
		t.Errorf("a posting to an account the bank does not have: %v, want %s", err, problem.UnknownAccount.URI())
	}
}

// TestPoisonNext_RefusesWhatIsNotOneCount: POST /faults/poison-next with a
// count twice, a second object after the first, trailing data, a count out
// of range or of another type, an unknown member or invalid UTF-8 gets 400
// invalid-request and arms nothing. A core that decoded the first object
// and ignored the rest, or took the last of two counts, armed one.
func TestPoisonNext_RefusesWhatIsNotOneCount(t *testing.T) {
	c, cl, token := startCoreWith(t, nil)
	for _, body := range []string{
		`{"count":1,"count":5}`, `{"count":1}{"count":5}`, `{"count":1} x`, `{"count":-1}`,
		`{"count":1000001}`, `{"count":"1"}`, `{"count":1.5}`, `{"count":1,"x":1}`, "{\"count\":1,\"\xff\":1}", `null`, ``,
	} {
		req, _ := http.NewRequest(http.MethodPost, cl.URL()+"/faults/poison-next", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if status, problemType := send(t, req); status != 400 || problemType != "/problems/invalid-request" {
			t.Errorf("POST /faults/poison-next %q: %d %s, want 400 /problems/invalid-request", body, status, problemType)
		}
	}
	if left := c.Faults.PoisonNextLeft(); left != 0 {
		t.Errorf("the refused requests armed %d postings", left)
	}
}
