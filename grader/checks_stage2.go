package grader

import (
	"fmt"
	"net/http"
	"strings"
)

const lesson2 = "docs/lessons/02-fingerprint.md"

func init() {
	register(
		Check{
			ID: "S2.edited-resubmission", Stage: 2, Lesson: lesson2 + "#same-key-another-request",
			Claim: "the same key with an edited body (another amount, another payee) gets 422 idempotency-key-reused and moves nothing",
			Why:   "a clerk who fixes the amount and resubmits with the old key believes the new amount went through; answering \"already done\" (or the old result) silently pays the wrong amount",
			Run:   checkEditedResubmission,
		},
		Check{
			ID: "S2.equivalent-bodies", Stage: 2, Lesson: lesson2 + "#the-canonical-form",
			Claim: "a retry whose body differs only in member order, whitespace, string escapes (\\u0041 for A) or number spelling (3e5 for 300000) is the same request, not a 422",
			Why:   "retries are rewritten by proxies, SDKs and other languages' JSON encoders; refusing one as \"a different request\" leaves the client unable to learn whether its money moved",
			Run:   checkEquivalentBodies,
		},
	)
}

// checkEditedResubmission catches a server without a fingerprint: it
// answers 409 duplicate-request (stages 1–3) or replays the original's 201
// (stage 4 on) to a request it never executed.
func checkEditedResubmission(t *T) error {
	const opening = 5_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	key, op := t.Key(), t.Op()
	amount := t.Amount(10_000, 500_000)
	orig := Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	if r := t.Do(orig); !r.Is(http.StatusCreated, "") {
		return t.Fail(orig.String(), r.String(), "201 Created: the first request with a fresh key executes")
	}
	dkey, dop, damount := t.Key(), t.Op(), t.Amount(1_000, 90_000)
	dep := Deposit(a, dkey, DepositBody(a.Accounts[1], damount, dop))
	if r := t.Do(dep); !r.Is(http.StatusCreated, "") {
		return t.Fail(dep.String(), r.String(), "201 Created: the first request with a fresh key executes")
	}
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	edits := []struct {
		what string
		req  Request
	}{
		{"the amount edited", Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount+t.Amount(1, 9_999), op))},
		{"another payee", Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[1], amount, op))},
		{"another source account", Transfer(a, key, TransferBody(a.Accounts[1], b.Accounts[0], amount, op))},
		{"the deposit's amount edited", Deposit(a, dkey, DepositBody(a.Accounts[1], damount*10, dop))},
	}
	for _, e := range edits {
		first := orig
		if strings.HasPrefix(e.req.Path, "/deposits") {
			first = dep
		}
		sent := first.String() + "  →  201\nthen the same key with " + e.what + ": " + e.req.String()
		r := t.Do(e.req)
		if !r.Is(http.StatusUnprocessableEntity, pKeyReused) {
			return t.Fail(sent, r.String(), "422 "+pKeyReused+": the key names the first request, and this is another one")
		}
		if err := t.unchanged(before, sent, r); err != nil {
			return err
		}
	}
	return nil
}

// spelling is one way of writing the same transfer body.
type spelling struct {
	what string
	body string
}

// spellings writes one transfer in several byte-different, canonically
// equal forms. amount is a multiple of 1000 so that it has an exponent form.
func spellings(from, to string, amount int64, memo, op, ref string) []spelling {
	plain := fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"memo":%q,"metadata":{"op":%q,"ref":%q}}`,
		from, to, amount, memo, op, ref)
	with := func(amountText, memoText string) string {
		return fmt.Sprintf(`{"from":%q,"to":%q,"amount":%s,"memo":%s,"metadata":{"op":%q,"ref":%q}}`,
			from, to, amountText, memoText, op, ref)
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return []spelling{
		{"the original spelling", plain},
		{"members in another order", fmt.Sprintf(`{"metadata":{"ref":%q,"op":%q},"memo":%q,"amount":%d,"to":%q,"from":%q}`,
			ref, op, memo, amount, to, from)},
		{"other whitespace", fmt.Sprintf("{\n\t\"from\" : %q,\r\n  \"to\":%q ,\n  \"amount\":\t%d,\n  \"memo\": %q,\n  \"metadata\": { \"op\": %q, \"ref\": %q }\n}\n",
			from, to, amount, memo, op, ref)},
		{"every memo character as a \\u escape", with(fmt.Sprint(amount), escapeAll(memo))},
		{"a solidus written \\/", with(fmt.Sprint(amount), strings.ReplaceAll(q(memo), "/", `\/`))},
		{fmt.Sprintf("the amount as %de3", amount/1000), with(fmt.Sprintf("%de3", amount/1000), q(memo))},
		{fmt.Sprintf("the amount as %d.0", amount), with(fmt.Sprintf("%d.0", amount), q(memo))},
		{fmt.Sprintf("the amount as %d.000E+3", amount/1000), with(fmt.Sprintf("%d.000E+3", amount/1000), q(memo))},
	}
}

// escapeAll writes s as a JSON string with every character escaped as
// \uXXXX (s must hold only characters of the Basic Multilingual Plane).
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// checkEquivalentBodies catches a fingerprint over the raw bytes, or over
// a re-encoding that is not canonical (one decoded with UseNumber or into
// json.RawMessage keeps 3e5 and 300000 apart; a string re-encoded by
// json.Marshal keeps Go's HTML escapes): one of the rewritten retries is
// refused as a different request.
func checkEquivalentBodies(t *T) error {
	const opening = 5_000_000
	cs, err := t.Reset(2, opening)
	if err != nil {
		return err
	}
	a, b := cs[0], cs[1]
	books := t.NewBooks(opening, a.Accounts[0], b.Accounts[0])
	key, op := t.Key(), t.Op()
	amount := 1000 * t.Amount(1, 900)
	memo := fmt.Sprintf("Apt %d 월세 %d/%d", t.Amount(1, 999), t.Amount(1, 12), t.Amount(1, 28))
	ref := fmt.Sprintf("inv-%06d", t.Amount(0, 999_999))
	forms := spellings(a.Accounts[0], b.Accounts[0], amount, memo, op, ref)
	// The original is one spelling drawn at random; every other is a retry.
	i := t.Rand().IntN(len(forms))
	forms[0], forms[i] = forms[i], forms[0]
	orig := Transfer(a, key, forms[0].body)
	r := t.Do(orig)
	if !r.Is(http.StatusCreated, "") {
		return t.Fail(orig.String()+"  ("+forms[0].what+")", r.String(), "201 Created: the first request with a fresh key executes")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	story := orig.String() + "  (" + forms[0].what + ")  →  201"
	for _, f := range forms[1:] {
		retry := Transfer(a, key, f.body)
		r := t.Do(retry)
		sent := story + "\nthen a retry with " + f.what + ": " + retry.String()
		if r.Is(http.StatusUnprocessableEntity, pKeyReused) || r.ServerFailed() || r.Status == http.StatusBadRequest {
			return t.Fail(sent, r.String(), "the same request, answered as a retry: 409 duplicate-request (stages 2–3) or the stored 201 (stage 4 on); the RFC 8785 canonical forms of the two bodies are identical")
		}
		if err := t.Reconcile(sent, r.Short(), books); err != nil {
			return err
		}
	}
	return nil
}
