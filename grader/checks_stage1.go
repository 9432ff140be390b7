package grader

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"idemlab/kit/bank"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

const lesson1 = "docs/lessons/01-claim.md"

// The problem types the checks expect (docs/api.md, "Problem types").
var (
	pMissingKey   = problem.MissingIdempotencyKey.URI()
	pInvalidKey   = problem.InvalidIdempotencyKey.URI()
	pInProgress   = problem.RequestInProgress.URI()
	pKeyReused    = problem.IdempotencyKeyReused.URI()
	pInsufficient = problem.InsufficientFunds.URI()
	pUnavailable  = problem.Unavailable.URI()
)

func init() {
	register(
		Check{
			ID: "S1.sequential-retry", Stage: 1, Lesson: lesson1 + "#a-retry-is-not-a-new-request",
			Claim: "a retry with the same key, sent after the original answered, does not execute again",
			Why:   "the client retried because it never saw the first answer; executing the retry sends the customer's money twice",
			Run:   checkSequentialRetry,
		},
		Check{
			ID: "S1.concurrent-duplicates", Stage: 1, Lesson: lesson1 + "#the-race",
			Claim: "32 simultaneous requests with one key execute exactly once, and none of them gets a 5xx",
			Why:   "a double-click or an impatient retry races the original; two requests that both see \"no key yet\" both move money, and a 5xx tells the client nothing about whether it did",
			Run:   checkConcurrentDuplicates,
		},
		Check{
			ID: "S1.missing-key", Stage: 1, Lesson: lesson1 + "#no-key-no-money",
			Claim: "a transfer or deposit without Idempotency-Key gets 400 missing-idempotency-key and nothing moves",
			Why:   "without a key the server cannot tell a retry from a new request, so every lost answer becomes a possible double payment",
			Run:   checkMissingKey,
		},
		Check{
			ID: "S1.invalid-key", Stage: 1, Lesson: lesson1 + "#what-a-key-looks-like",
			Claim: "an empty, too long, non-ASCII, malformed or repeated Idempotency-Key gets 400 invalid-idempotency-key and nothing moves",
			Why:   "a key the server silently truncates, trims or picks one of is a key two clients can share, or one client can lose",
			Run:   checkInvalidKey,
		},
		Check{
			ID: "S1.key-forms", Stage: 1, Lesson: lesson1 + "#what-a-key-looks-like",
			Claim: "the quoted form (Idempotency-Key: \"k\") and the bare form (k) name the same key, up to 255 characters",
			Why:   "clients following the IETF draft quote the key and older ones do not; if the two spellings are two keys, a retry by another library executes again",
			Run:   checkKeyForms,
		},
		Check{
			ID: "S1.distinct-keys-same-body", Stage: 1, Lesson: lesson1 + "#one-key-one-operation",
			Claim: "two requests with different keys and the same body are two transfers, both executed",
			Why:   "paying the same rent twice in one month is the customer's decision; the key, not the body, says whether a request is a retry, and a server that guesses loses a real payment",
			Run:   checkDistinctKeysSameBody,
		},
		Check{
			ID: "S1.fail-closed", Stage: 1, Lesson: lesson1 + "#fail-closed",
			Claim: "when the key store fails, the request gets 503 unavailable and nothing executes; once it is back, the retry executes exactly once",
			Why:   "executing without a claim is executing without protection: the retry that follows the outage pays a second time",
			Run:   checkFailClosed,
		},
	)
}

// checkSequentialRetry catches a server without a claim (stage 0) and a
// claim that does not stop the retry: INSERT OR IGNORE or an upsert whose
// result is never read, a key stored but never looked at.
func checkSequentialRetry(t *T) error {
	const opening = 1_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	amount := t.Amount(1_000, 200_000)
	key, op := t.Key(), t.Op()
	req := Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	first := t.Do(req)
	if !first.Is(http.StatusCreated, "") {
		return t.Fail(req.String(), first.String(), "201 Created: the first request with a fresh key executes")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	retries := 1 + t.Rand().IntN(3)
	story := []string{req.String() + "  →  " + first.Short()}
	for i := range retries {
		r := t.Do(req)
		story = append(story, fmt.Sprintf("retry %d, the same request  →  %s", i+1, r.Short()))
		sent := strings.Join(story, "\n")
		if r.ServerFailed() {
			return t.Fail(sent, r.String(), "an answer that is not a 5xx: 409 duplicate-request (stages 1–3) or the stored 201 (stage 4 on); the retry must not execute")
		}
		if err := t.Reconcile(sent, "", books); err != nil {
			return err
		}
	}
	return nil
}

// checkConcurrentDuplicates catches check-then-insert (two requests both
// find no key before either inserts; with a core wait between the check
// and the insert the window is wide), INSERT OR IGNORE without reading the
// rows affected, and a lost race answered with a 5xx because the unique
// violation was not told apart from other errors.
func checkConcurrentDuplicates(t *T) error {
	const opening, n, rounds = 1_000_000, 32, 3
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	// A short core wait lines the racers up between the validation and the
	// write, as a slow core banking system does in production.
	if err := t.Configure(map[string]string{"core_latency": "50ms"}); err != nil {
		return err
	}
	books := t.NewBooks(opening, a.Accounts[0], a.Accounts[1], b.Accounts[0])
	for round := range rounds {
		from := a.Accounts[round%2]
		amount := t.Amount(1_000, 20_000)
		key, op := t.Key(), t.Op()
		req := Transfer(a, key, TransferBody(from, b.Accounts[0], amount, op))
		rs := t.Simultaneously(n, func(int) Request { return req })
		sent := fmt.Sprintf("%d× at once, behind a barrier (round %d of %d): %s", n, round+1, rounds, req.String())
		got := Summarize(rs)
		created := 0
		for _, r := range rs {
			if r.ServerFailed() {
				return t.Fail(sent, got, "no 5xx and no dropped connection: one 201, and for the others 409 (duplicate-request or request-in-progress) or the stored 201")
			}
			if r.Status == http.StatusCreated {
				created++
			}
		}
		if created == 0 {
			return t.Fail(sent, got, "one request executes and gets 201 Created")
		}
		books.Transfer(op, from, b.Accounts[0], amount)
		if err := t.Reconcile(sent, got, books); err != nil {
			return err
		}
	}
	return nil
}

// checkMissingKey catches a server that treats the key as optional and
// executes a request without one (stage 0 does).
func checkMissingKey(t *T) error {
	cs, err := t.Reset(2, 1_000_000)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	reqs := []Request{
		Transfer(a, "", TransferBody(a.Accounts[0], b.Accounts[0], t.Amount(1, 100_000), t.Op())),
		Deposit(a, "", DepositBody(a.Accounts[1], t.Amount(1, 100_000), t.Op())),
	}
	for _, req := range reqs {
		res := t.Do(req)
		if !res.Is(http.StatusBadRequest, pMissingKey) {
			return t.Fail(req.String()+"  (no Idempotency-Key header)", res.String(), "400 "+pMissingKey)
		}
		if err := t.unchanged(before, req.String()+"  (no Idempotency-Key header)", res); err != nil {
			return err
		}
	}
	return nil
}

// unchanged fails when the target's snapshot differs from before: a
// refused request moved money, ran an op or left a key row behind.
func (t *T) unchanged(before Snapshot, sent string, res Response) error {
	after, err := t.Snapshot()
	if err != nil {
		return err
	}
	if d := before.Diff(after); d != "" {
		return t.Fail(sent, res.Short()+", and "+d, "the refusal changes nothing: no money moves and no key row is stored")
	}
	return nil
}

// badKey is one Idempotency-Key header that must be refused.
type badKey struct {
	name   string
	values []string
}

// badKeys draws the malformed headers from the check's random source.
func badKeys(t *T) []badKey {
	long := t.Key() + strings.Repeat("x", 256)
	return []badKey{
		{"an empty bare key", []string{""}},
		{"an empty quoted key", []string{`""`}},
		{"256 characters", []string{long[:256]}},
		{"256 characters, quoted", []string{`"` + long[:256] + `"`}},
		{"a space inside", []string{t.Key() + " " + t.Key()}},
		{"a non-ASCII character", []string{t.Key() + "키"}},
		{"two Idempotency-Key fields", []string{t.Key(), t.Key()}},
		{"a quoted key with a parameter", []string{`"` + t.Key() + `";v=1`}},
		{"an unterminated quote", []string{`"` + t.Key()}},
		{"a quoted key with trailing data", []string{`"` + t.Key() + `" x`}},
	}
}

// checkInvalidKey catches a server that executes with a key it should have
// refused: one that trims, truncates, decodes or picks one of two fields,
// or takes any header value as a key (stage 0 ignores the header).
func checkInvalidKey(t *T) error {
	cs, err := t.Reset(2, 1_000_000)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	for _, bk := range badKeys(t) {
		req := Transfer(a, "", TransferBody(a.Accounts[0], b.Accounts[0], t.Amount(1, 100_000), t.Op()))
		req.Header = http.Header{"Idempotency-Key": bk.values}
		res := t.Do(req)
		sent := bk.name + ": " + req.String()
		if !res.Is(http.StatusBadRequest, pInvalidKey) {
			return t.Fail(sent, res.String(), "400 "+pInvalidKey+" (after unquoting, a key is 1–255 printable ASCII characters, 0x21–0x7E, in exactly one field)")
		}
		if err := t.unchanged(before, sent, res); err != nil {
			return err
		}
	}
	return nil
}

// checkKeyForms catches a server that compares the raw header value (the
// quoted and bare spellings become two keys, and the retry executes) and
// one that refuses a key of exactly 255 characters.
func checkKeyForms(t *T) error {
	const opening = 1_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	long := t.Key()
	long += strings.Repeat("z", 255-len(long))
	for _, key := range []string{t.Key(), long} {
		amount, op := t.Amount(1_000, 100_000), t.Op()
		bare := Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		quoted := bare
		quoted.Quote = true
		first, second := bare, quoted
		if t.Rand().IntN(2) == 0 {
			first, second = quoted, bare
		}
		r1 := t.Do(first)
		if !r1.Is(http.StatusCreated, "") {
			return t.Fail(first.String()+fmt.Sprintf("  (a %d-character key)", len(key)), r1.String(), "201 Created: keys of 1 to 255 printable ASCII characters are valid, bare or quoted")
		}
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		r2 := t.Do(second)
		sent := first.String() + "  →  " + r1.Short() + "\nthen the same key in the other form: " + second.String()
		if r2.ServerFailed() {
			return t.Fail(sent, r2.String(), "the same key: 409 duplicate-request (stages 1–3) or the stored 201 (stage 4 on)")
		}
		if err := t.Reconcile(sent, r2.Short(), books); err != nil {
			return err
		}
	}
	return nil
}

// checkDistinctKeysSameBody catches a server that deduplicates on the body
// (a hash of the request, or the op) instead of the key: the second of two
// identical payments is refused or answered with the first.
func checkDistinctKeysSameBody(t *T) error {
	const opening = 10_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	amount, op := t.Amount(1_000, 500_000), t.Op()
	body := TransferBody(a.Accounts[0], b.Accounts[0], amount, op)
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	ids := map[string]bool{}
	created := func(sent string, r Response) error {
		var tr bank.Transfer
		if !r.Is(http.StatusCreated, "") || r.Replayed() || json.Unmarshal(r.Body, &tr) != nil || tr.ID == "" {
			return t.Fail(sent, r.String(), "201 Created with a new transfer: a new key is a new operation, whatever its body")
		}
		if ids[tr.ID] {
			return t.Fail(sent, r.String(), "a new transfer id; "+tr.ID+" was the answer to the other key")
		}
		ids[tr.ID] = true
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		return nil
	}
	var story []string
	for range 2 {
		req := Transfer(a, t.Key(), body)
		r := t.Do(req)
		story = append(story, req.String()+"  →  "+r.Short())
		if err := created(strings.Join(story, "\n"), r); err != nil {
			return err
		}
	}
	pair := []Request{Transfer(a, t.Key(), body), Transfer(a, t.Key(), body)}
	rs := t.Simultaneously(len(pair), func(i int) Request { return pair[i] })
	for i, r := range rs {
		story = append(story, "at once: "+pair[i].String()+"  →  "+r.Short())
	}
	sent := strings.Join(story, "\n")
	for _, r := range rs {
		if err := created(sent, r); err != nil {
			return err
		}
	}
	return t.Reconcile(sent, "", books)
}

// checkFailClosed catches a server that fails open: when the key store
// errors it executes anyway (unprotected), or answers 500 instead of 503,
// or leaves the key in a state that a retry executes twice. The naive
// server fails it: it has no key store to fail.
func checkFailClosed(t *T) error {
	const opening = 2_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	books := t.NewBooks(opening, a.Accounts[0], a.Accounts[1], b.Accounts[0])
	lease, err := t.lease()
	if err != nil {
		return err
	}

	// The store is down for the whole request: 503, and nothing moves.
	for _, kind := range []string{"transfer", "deposit"} {
		amount, op := t.Amount(1_000, 100_000), t.Op()
		req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		if kind == "deposit" {
			req = Deposit(a, t.Key(), DepositBody(a.Accounts[1], amount, op))
		}
		before, err := t.Snapshot()
		if err != nil {
			return err
		}
		if err := t.Arm(labctl.StoreUnavailable, 1000); err != nil {
			return err
		}
		r := t.Do(req)
		if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
			return err
		}
		sent := req.String() + "\n(armed: store-unavailable, every statement on idempotency_keys fails)"
		if !r.Is(http.StatusServiceUnavailable, pUnavailable) {
			return t.Fail(sent, r.String(), "503 "+pUnavailable+": without a claim the request must not execute")
		}
		if err := t.unchanged(before, sent, r); err != nil {
			return err
		}
		final, story, err := t.retryUntilDone(req, lease)
		if err != nil {
			return err
		}
		story = sent + "  →  " + r.Short() + "\nthen the store is back" + story
		if !final.Is(http.StatusCreated, "") {
			return t.Fail(story, final.String(), "201 Created: the retry after the outage executes")
		}
		if kind == "deposit" {
			books.Deposit(op, a.Accounts[1], amount)
		} else {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
	}

	// The store fails part-way through a request: whatever the request
	// heard, its retries converge to one execution.
	for _, failures := range []int{1, 2, 3} {
		amount, op := t.Amount(1_000, 100_000), t.Op()
		req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		if err := t.Arm(labctl.StoreUnavailable, failures); err != nil {
			return err
		}
		r := t.Do(req)
		if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
			return err
		}
		sent := fmt.Sprintf("%s\n(armed: store-unavailable for the next %d statements on idempotency_keys)  →  %s", req.String(), failures, r.Short())
		if !r.Is(http.StatusCreated, "") && !r.Is(http.StatusServiceUnavailable, pUnavailable) {
			return t.Fail(sent, r.String(), "201 Created if the request got through, or 503 "+pUnavailable)
		}
		final, story, err := t.retryUntilDone(req, lease)
		if err != nil {
			return err
		}
		story = sent + "\nthen the store is back" + story
		if !final.Is(http.StatusCreated, "") {
			return t.Fail(story, final.String(), "201 Created")
		}
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
	}
	return nil
}
