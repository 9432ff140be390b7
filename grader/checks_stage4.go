package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/canonical"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/request"
)

// replayMismatch compares a replay with the answer it replays, orig, byte
// for byte, and says what differs, or "" if it is faithful. whose names
// orig in what it says ("the original", "the retry's"): "status 409, the
// retry's was 201". Bytes are S4.replay-byte-identical's question alone;
// every other check asks whether a replay is its client's own answer
// (ownAnswerMismatch; replayValueMismatch where its claim names Location).
// Retry-After is compared too: a first answer that moved money has none,
// and a replay that carries one (sent by the writer of the 409
// request-in-progress, say) tells its client to come back for an answer
// it is being given.
func replayMismatch(orig, replay Response, whose string) string {
	return replayDifference(orig, replay, whose, false, "Content-Type", "Location", "Retry-After")
}

// replayValueMismatch is replayMismatch for a check whose question is
// whether a replay is its client's own answer, not how it is spelled, and
// whose claim names the answer's Location (a refusal's, which has none; a
// 409 duplicate-reference's, which names the transfer that paid): the
// same status, Content-Type and Location, and a body with the same JSON
// value (its RFC 8785 form, as the day's reconciliation compares it). A
// replay that respells its stored answer (members in another order,
// another spacing) passes, which S4.replay-byte-identical and the day's
// mismatched_replays report; one recomputed (another balance_after or
// created_at) or another client's does not.
func replayValueMismatch(orig, replay Response, whose string) string {
	return replayDifference(orig, replay, whose, true, "Content-Type", "Location")
}

// ownAnswerMismatch is replayValueMismatch without Location: whether a
// replay tells its client its own operation's result (the same status,
// Content-Type and JSON value, whose id names the operation). Location is
// a matter of the contract that the first answer's check (S0.happy-path)
// and the replay's (S4.replay-byte-identical) own; a check about scope,
// retention or leases that compared it too would fail, for a replay
// without it, on a dimension that is not its own.
func ownAnswerMismatch(orig, replay Response, whose string) string {
	return replayDifference(orig, replay, whose, true, "Content-Type")
}

// replayDifference is replayMismatch, comparing bodies by what they say
// (canonical.Form) when byValue is set, and the headers named.
func replayDifference(orig, replay Response, whose string, byValue bool, headers ...string) string {
	if replay.Err != nil {
		return "no response: " + replay.Err.Error()
	}
	if replay.Status != orig.Status {
		return fmt.Sprintf("status %d, %s was %d", replay.Status, whose, orig.Status)
	}
	var d []string
	for _, h := range headers {
		if a, b := orig.Header.Get(h), replay.Header.Get(h); a != b {
			d = append(d, fmt.Sprintf("%s %q, %s was %q", h, b, whose, a))
		}
	}
	a, b, said := orig.Body, replay.Body, "body differs: "
	if byValue {
		a, b, said = canonical.Form(a), canonical.Form(b), "body says otherwise (their RFC 8785 forms, or bytes where one is not JSON): "
	}
	if !bytes.Equal(a, b) {
		d = append(d, said+firstDifference(a, b))
	}
	return strings.Join(d, "; ")
}

// replayHarm is what a replay that differs from the original answer does
// to its client: WrongAnswer when it tells the client something else
// (success for a refusal or the other way round, another value in the
// body: an id, a balance, a time); nothing when it says the same in other
// bytes, headers or another success status (200 for a 201, the same body),
// a contract difference: the client learns its own operation's result.
func replayHarm(orig, replay Response) judging.Harm {
	if replay.Err != nil {
		return ""
	}
	if !sameValue(orig.Body, replay.Body) || (replay.Status != orig.Status && !(success(orig) && success(replay))) {
		return judging.WrongAnswer
	}
	return ""
}

// untypedConflict reports whether r is a 409 with no problem type: a
// plain-text 409, as http.Error writes one.
func untypedConflict(r Response) bool {
	return r.Is(http.StatusConflict, "") && r.Problem() == ""
}

// success reports whether r is a 2xx.
func success(r Response) bool { return r.Err == nil && r.Status/100 == 2 }

// sameValue reports whether bodies a and b say the same, as
// replayValueMismatch and the day's reconciliation compare them: their
// RFC 8785 forms (canonical.Form), whatever their spelling (member order,
// spacing, escapes), and byte for byte where one is not JSON. Two bodies
// that are not JSON, in the same bytes, say the same.
func sameValue(a, b []byte) bool {
	return bytes.Equal(canonical.Form(a), canonical.Form(b))
}

// firstDifference shows where two bodies part ways.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-24)
	show := func(s []byte) string {
		end := min(len(s), i+40)
		if from >= end {
			return "(nothing)"
		}
		return string(s[from:end])
	}
	if i == len(b) && i < len(a) {
		return fmt.Sprintf("the replay ends at byte %d of the original's %d, after …%s", i, len(a), show(b))
	}
	return fmt.Sprintf("at byte %d the replay has …%s… where the original had …%s…", i, show(b), show(a))
}

// checkReplayByteIdentical catches a replay recomputed instead of stored:
// re-encoded from the transfer row (another member order, spacing or
// created_at), rebuilt without Location, answered with another status, or
// cut short: the third transfer's answer is as long as a transfer's answer
// can be, over 10 KiB, so that a body kept in fewer bytes is cut short,
// and one that a column of PostgreSQL refuses (VARCHAR(4096)) fails the
// payment itself. The last one sends the first one's body again
// under a key of its own, a second payment: a replay found by the body's
// fingerprint rather than by the key gives one of the two the other's
// answer, so the first is retried once more at the end (which of the two
// rows such a lookup finds first is the engine's choice).
func checkReplayByteIdentical(t *T, s Scenario) error {
	a, b := s.A, s.B
	amount, op := t.Amount(1_000, 500_000), t.Op()
	first := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	reqs := []Request{
		first,
		Deposit(a, t.Key(), DepositBody(a.Accounts[1], t.Amount(1_000, 500_000), t.Op())),
		Transfer(a, t.Key(), largestTransferBody(t, a.Accounts[0], b.Accounts[1], t.Amount(1_000, 500_000), t.Op())),
		Transfer(a, t.Key(), first.Body),
	}
	twin := fmt.Sprintf("  (the body of the first transfer, Idempotency-Key: %s, again under a new key: a second payment, which the customer chose)", first.Key)
	var firstOrig Response
	for i, req := range reqs {
		orig := t.Do(req)
		said := req.String()
		if i == len(reqs)-1 {
			said += twin
		}
		if !orig.Is(http.StatusCreated, "") {
			return t.Fail(said, orig.String(), "201 Created: the first request with a fresh key executes")
		}
		switch i {
		case 0:
			firstOrig = orig
			s.Books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		case len(reqs) - 1:
			// Its op is the first one's: the customer asked for it twice.
			s.Books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		// A second of lab time: a replay that is recomputed gets a new created_at.
		if err := t.Advance(time.Second); err != nil {
			return err
		}
		expected := "the stored response, byte for byte: status, body, Content-Type, Location and Retry-After as first sent"
		if i == len(reqs)-1 {
			expected += ", this key's own: another key with the same body is another payment, with an answer of its own"
		}
		// The first retry the server failed, if a second retry follows it.
		var failed error
		for i := range 2 {
			r := t.Do(req)
			sent := fmt.Sprintf("%s  →  %s\nthen retry %d, the same request", said, orig.String(), i+1)
			switch {
			case r.Is(http.StatusConflict, pInProgress):
				// Nothing was replayed, so nothing differs: the key
				// outlived the answer its original already sent.
				return t.Fail(sent, r.String()+"\n"+stillInProgress, expected)
			case r.ServerFailed() && failed == nil:
				// A client retries a 5xx: the next retry decides.
				failed = t.Fail(sent, r.String()+"\n"+replayFailed, expected)
				continue
			case r.ServerFailed():
				return t.Harmful(judging.NoUsableAnswer, sent, r.String()+"\n"+replayFailed+"; the retry before it failed too", expected)
			}
			if d := replayMismatch(orig, r, "the original"); d != "" {
				return t.Harmful(retryHarm(orig, r), sent, r.String()+"\nnot byte-identical: "+d, expected)
			}
		}
		if failed != nil {
			return failed
		}
	}
	// The first transfer once more, now that another key carries its body.
	r := t.Do(first)
	sent := fmt.Sprintf("%s  →  %s\nthen %s%s  →  201\nthen the retry of the first transfer, the same request under its own key",
		first.String(), firstOrig.String(), reqs[len(reqs)-1].String(), twin)
	const ownAnswer = "the stored response of this key, byte for byte: the key names the operation, and another key with the same body is another payment, with an answer of its own"
	if r.Err != nil || r.ServerFailed() || r.Is(http.StatusConflict, pInProgress) {
		return t.Fail(sent, r.String(), ownAnswer)
	}
	if d := replayMismatch(firstOrig, r, "the original"); d != "" {
		return t.Harmful(retryHarm(firstOrig, r), sent, r.String()+"\nnot byte-identical: "+d, ownAnswer)
	}
	return nil
}

// retryHarm is replayHarm for S4.replay-byte-identical, whose retries
// follow an answer that moved money: a retry refused as a duplicate (409
// duplicate-request, stage 3's answer) carries no result at all, and a
// client refused so on every retry never learns the transfer's id or its
// balance_after, no usable answer, as the day's reconciliation and
// S4.answer-stored-with-the-money count it; not another operation's
// answer.
func retryHarm(orig, retry Response) judging.Harm {
	if retry.Err == nil && retry.Is(http.StatusConflict, pDuplicate) {
		return judging.NoUsableAnswer
	}
	return replayHarm(orig, retry)
}

// largestTransferBody is a transfer body at the contract's limits, whose
// answer is as long as a transfer's answer can be: a memo of
// request.MaxMemo characters and request.MaxMetadata metadata members, op
// among them, with names and values as long as allowed (longMetadata),
// written, but for the memo's first word, in control characters, which
// every JSON encoder writes as \u0001: six bytes each in the answer for
// one in the request, whether or not the server escapes <, > and & too.
// The answer runs to over 10 KiB, so that an answer column or a copy cut
// at any round size below it cuts this one short.
func largestTransferBody(t *T, from, to string, amount int64, op string) string {
	memo := []rune(fmt.Sprintf("월세 %d ", t.Amount(1, 999)))
	controls := sixByteControls()
	for i := 0; len(memo) < request.MaxMemo; i++ {
		memo = append(memo, controls[i%len(controls)])
	}
	return object(member{"from", jsonString(from)}, member{"to", jsonString(to)}, member{"amount", fmt.Sprint(amount)},
		member{"memo", jsonString(string(memo))}, member{"metadata", longMetadata(op)})
}

// What S4.replay-byte-identical tells a student whose retry of a
// completed request was not answered with a replay at all, so that it
// is not read as a replay that differs.
const (
	stillInProgress = "nothing was replayed: the key was still in progress, though its original had already answered. " +
		"The key is completed, with its answer, only after that answer went out (or never): complete it in the transaction " +
		"that moves the money, before the first answer is sent (docs/lessons/04-replay.md#store-the-answer, \"Stored when?\")"
	replayFailed = "nothing was replayed: the server failed answering a retry of a completed key. Look at the replay path: " +
		"reading the stored status, Content-Type, Location and body back from the key's row, and sending them " +
		"(the server's log has the error)"
)

// checkReplayMarkerOnlyOnReplays catches a server that sets the marker on
// every answer (first answers included), or on none, and one that marks
// the answers it reads from the key table without replaying anything: a
// 422 idempotency-key-reused, a 409 request-in-progress (notAReplay).
func checkReplayMarkerOnlyOnReplays(t *T, s Scenario) error {
	a, b := s.A, s.B
	firsts := []Request{
		Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], t.Amount(1_000, 100_000), t.Op())),
		Deposit(a, t.Key(), DepositBody(a.Accounts[1], t.Amount(1_000, 100_000), t.Op())),
		// A refusal is a first answer too.
		Transfer(a, t.Key(), TransferBody(a.Accounts[1], b.Accounts[1], 10*s.Opening+t.Amount(1, 1_000), t.Op())),
	}
	for _, req := range firsts {
		r := t.Do(req)
		if r.ServerFailed() {
			return t.Fail(req.String(), r.String(), "201 Created, or 422 insufficient-funds for the transfer larger than the balance")
		}
		if v := r.Header.Values("Idempotent-Replayed"); len(v) > 0 {
			return t.Fail(req.String()+"  (a fresh key)", r.String(), "no Idempotent-Replayed header at all on a first answer")
		}
		again := t.Do(req)
		if v := again.Header.Values("Idempotent-Replayed"); len(v) != 1 || v[0] != "true" {
			return t.Fail(req.String()+"  →  "+r.Short()+"\nthen the retry, the same request", again.String(),
				"Idempotent-Replayed: true: the first answer, stored with its key, is replayed to the retry, with the marker (an answer without it is either a replay left unmarked or the request worked out again, a refusal included)")
		}
	}
	return notAReplay(t, s, firsts[0])
}

// notAReplay sends, under used keys, two answers that come from the key
// table and replay nothing: an edited copy of used (422
// idempotency-key-reused) and a retry of a transfer still waiting on the
// core (409 request-in-progress). Neither may carry the marker: a client
// that trusts it takes the refusal for its request's stored answer, and
// stops retrying a payment that is still running, or that did run. An
// answer of another kind is other checks' matter, and the retry is tried
// with a longer core wait when the machine was too slow to meet the
// original in flight (WhileHeld), until it could not observe.
func notAReplay(t *T, s Scenario, used Request) error {
	const expected = "no Idempotent-Replayed header: only the stored answer of a completed key is a replay; this answer replays nothing"
	marked := func(r Response) bool { return len(r.Header.Values("Idempotent-Replayed")) > 0 }
	edited := used
	edited.Body = TransferBody(s.A.Accounts[0], s.B.Accounts[0], 100_001+t.Amount(1, 1_000), t.Op())
	if r := t.Do(edited); r.Is(http.StatusUnprocessableEntity, pKeyReused) && marked(r) {
		return t.Fail(used.String()+"  →  201\nthen the same key with another body: "+edited.String(), r.String(), expected)
	}
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		req, op, amount := s.Payment(t)
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		retry := t.Do(req)
		orig := held.Wait()
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return false, err
		}
		sent := fmt.Sprintf("%s\n(the original waits %v on the core)\nthen, while it waits, the same request again", req.String(), latency)
		got := "the original answered " + orig.Short() + ", the retry " + retry.Short()
		// Money first: the payment runs once, whichever of the two ran it,
		// if either was told so (a 201, or another 2xx naming its op).
		if toldAnyRan(op, orig, retry) {
			s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
		} else {
			s.Books.Expect(op)
		}
		if err := t.Reconcile(sent, got, s.Books); err != nil {
			return true, err
		}
		// On a busy machine the retry can claim first, and the roles swap.
		waited := retry
		if orig.Is(http.StatusConflict, pInProgress) {
			waited = orig
		}
		if !waited.Is(http.StatusConflict, pInProgress) {
			return false, nil
		}
		if marked(waited) {
			return true, t.Fail(sent, got+"\n"+waited.String(), expected)
		}
		return true, nil
	})
}

// checkNoCookieReplayed catches a replay that stores the whole header map
// of the first answer and sends it again: the kit gives every answer a
// fresh session cookie, and the replay then carries the first one.
func checkNoCookieReplayed(t *T, s Scenario) error {
	a, b := s.A, s.B
	req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], t.Amount(1_000, 100_000), t.Op()))
	first := t.Do(req)
	if !first.Is(http.StatusCreated, "") {
		return t.Fail(req.String(), first.String(), "201 Created")
	}
	cookies := first.Header.Values("Set-Cookie")
	if len(cookies) == 0 {
		return fmt.Errorf("the first answer carries no session cookie: the kit sets one on every customer answer")
	}
	again := t.Do(req)
	sent := req.String() + "  →  " + first.Short() + ", Set-Cookie: " + strings.Join(cookies, "; ") + "\nthen the retry, the same request"
	// The cookie is what this check is for: it is looked at whatever else
	// the replay got wrong, and the rest is said beside it.
	var wrong []string
	for _, c := range again.Header.Values("Set-Cookie") {
		if slices.Contains(cookies, c) {
			wrong = append(wrong, "it carries the first answer's Set-Cookie: "+c)
		}
	}
	if len(wrong) > 0 {
		return t.Fail(sent, again.String()+"\n"+strings.Join(wrong, "; "),
			"the stored answer, and no Set-Cookie of the first answer (the replay's own session cookie, or none)")
	}
	return nil
}

// checkBalanceAfterUnchanged catches a replay rebuilt from current data:
// balance_after read from the account now, created_at from the clock now.
// A transfer and a deposit are replayed, each after the account has moved
// since: the two routes answer from two code paths.
func checkBalanceAfterUnchanged(t *T, s Scenario) error {
	a, b := s.A, s.B
	x, y := t.Amount(1_000, 500_000), t.Amount(1_000, 500_000)
	firsts := []struct {
		kind    string
		req     Request
		balance int64
		answer  receipt
	}{
		{kind: "transfer", req: Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], x, t.Op())), balance: s.Opening - x},
		{kind: "deposit", req: Deposit(a, t.Key(), DepositBody(a.Accounts[0], y, t.Op())), balance: s.Opening - x + y},
	}
	var story []string
	for i := range firsts {
		f := &firsts[i]
		r := t.Do(f.req)
		if !r.Is(http.StatusCreated, "") || json.Unmarshal(r.Body, &f.answer) != nil || f.answer.BalanceAfter != f.balance {
			return t.Fail(strings.Join(append(story, f.req.String()), "\nthen "), r.String(), fmt.Sprintf("201 Created with balance_after %d", f.balance))
		}
		story = append(story, f.req.String()+"  →  201, balance_after "+fmt.Sprint(f.answer.BalanceAfter))
	}
	later := []Request{
		Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[1], t.Amount(1_000, 500_000), t.Op())),
		Deposit(a, t.Key(), DepositBody(a.Accounts[0], t.Amount(1_000, 500_000), t.Op())),
	}
	for _, l := range later {
		r := t.Do(l)
		if !r.Is(http.StatusCreated, "") {
			return t.Fail(l.String(), r.String(), "201 Created")
		}
		story = append(story, l.String()+"  →  201")
	}
	if err := t.Advance(90 * time.Second); err != nil {
		return err
	}
	for _, f := range firsts {
		sent := strings.Join(story, "\nthen ") + "\nthen 90s of lab time, and the retry of the first " + f.kind
		r := t.Do(f.req)
		var replay receipt
		if err := json.Unmarshal(r.Body, &replay); err != nil || !r.Is(http.StatusCreated, "") {
			return t.Fail(sent, r.String(), fmt.Sprintf("the stored 201 of the first %s, balance_after %d and created_at %s as first answered", f.kind, f.answer.BalanceAfter, f.answer.CreatedAt))
		}
		if replay != f.answer {
			return t.Harmful(judging.WrongAnswer, sent,
				fmt.Sprintf("id %s, balance_after %d, created_at %s", replay.ID, replay.BalanceAfter, replay.CreatedAt),
				fmt.Sprintf("id %s, balance_after %d, created_at %s: what the first answer said", f.answer.ID, f.answer.BalanceAfter, f.answer.CreatedAt))
		}
	}
	return nil
}

// receipt is the part of a transfer's or a deposit's answer a replay
// must keep.
type receipt struct {
	ID           string `json:"id"`
	BalanceAfter int64  `json:"balance_after"`
	CreatedAt    string `json:"created_at"`
}

// checkInsufficientFundsReplayed catches a server that stores only
// successes: the refused transfer's retry executes once a deposit made it
// affordable, or the refusal is recomputed without the marker. It also
// catches a refusal stored like a success, with the Location of a
// transfer that was never made, and a key taken as free once its request
// was refused: the amount lowered under it executes, and the refused
// request's retry is told another request used its key.
func checkInsufficientFundsReplayed(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	amount, op := s.Opening+t.Amount(1, 50_000), t.Op()
	req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	orig := t.Do(req)
	if !orig.Is(http.StatusUnprocessableEntity, pInsufficient) {
		return t.Fail(req.String()+fmt.Sprintf("  (the account holds %d)", s.Opening), orig.String(), "422 "+pInsufficient)
	}
	if locs := orig.Header.Values("Location"); len(locs) > 0 {
		// Recorded, and the check goes on to its money probes: the
		// replay below carries the same header, so only the first answer
		// can show it. An empty one is a header all the same (a client
		// that follows it asks for the collection).
		loc := locs[0]
		if loc == "" {
			loc = `"" (an empty header)`
		}
		t.Differ(req.String()+fmt.Sprintf("  (the account holds %d)", s.Opening), orig.String()+"\nwith Location: "+loc,
			"422 "+pInsufficient+" with no Location header: the refusal created nothing, and a Location names the resource a request created (a refusal's stored answer has none)")
	}
	books.Expect(op)
	dop, damount := t.Op(), t.Amount(50_000, 200_000)
	dep := Deposit(a, t.Key(), DepositBody(a.Accounts[0], damount, dop))
	if r := t.Do(dep); !r.Is(http.StatusCreated, "") {
		return t.Fail(dep.String(), r.String(), "201 Created")
	}
	books.Deposit(dop, a.Accounts[0], damount)
	sent := fmt.Sprintf("%s  →  422 insufficient-funds\nthen %s  →  201 (the account now holds %d, enough)\nthen the retry of the transfer, the same request",
		req.String(), dep.String(), s.Opening+damount)
	r, sent, err := t.refusalRetried(req, orig, sent, books, "nothing executes")
	if err != nil {
		return err
	}
	// The clerk, told the account was short, lowers the amount and sends
	// it again under the same key. The refusal is that key's answer for
	// good, as a success would be: the correction is another request
	// under a used key, and the refused request's retry still gets its
	// refusal.
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	edited := req
	edited.Body = TransferBody(a.Accounts[0], b.Accounts[0], amount-s.Opening, op)
	sent = fmt.Sprintf("%s  →  %s\nthen the same key with the amount lowered to %d: %s",
		sent, r.Short(), amount-s.Opening, edited.String())
	keyStays := "422 " + pKeyReused + ": the key names the refused request, whose stored 422 is its answer for good, as a 201 would be; nothing executes, and a corrected request needs a new key"
	r = t.Do(edited)
	if r.Is(http.StatusCreated, "") {
		// Told it executed: the books hold it, and what differs is the
		// contract, which the refused request's client feels.
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount-s.Opening)
		if err := t.Reconcile(sent, r.Short(), books); err != nil {
			return err
		}
		// What the refused request's client now hears.
		again := t.Do(req)
		got := r.String() + "\nthen the retry of the refused transfer, the same request  →  " + again.Short()
		if err := t.Reconcile(sent, got, books); err != nil {
			return err
		}
		return t.Fail(sent, got+"\nthe correction executed under the refused request's key: the key now names two requests, and the refused one's retry no longer gets its refusal", keyStays)
	}
	if err := t.unchanged(before, sent, r); err != nil {
		return err
	}
	if !r.Is(http.StatusUnprocessableEntity, pKeyReused) {
		return t.Fail(sent, r.String(), keyStays)
	}
	sent += "  →  422 " + pKeyReused + "\nthen the retry of the refused transfer, the same request"
	_, _, err = t.refusalRetried(req, orig, sent, books, "a refused edit changes nothing")
	return err
}

// refusalRetried sends req, whose original was refused as orig (422
// insufficient-funds), again after sent, and judges what its client
// finally knows: told to wait (409 request-in-progress), it comes back as
// the retry policy says (untilAnswered), and must be answered the stored
// refusal. Still told to wait, its client never learns it was refused, and
// the key table says which harm that is (toldToWait): a key still in
// progress is held for good (a stuck key: the transfer never ran and
// cannot run); a completed one, or none in a table shown whole, is no
// usable answer. A plain-text 409 is a contract difference, recorded,
// and retried the same way (untilAnswered). It returns the answer and the
// story with the retry.
func (t *T) refusalRetried(req Request, orig Response, sent string, books *judging.Books, then string) (Response, string, error) {
	const stored = "the stored 422 insufficient-funds, its status, headers and JSON value"
	r := t.Do(req)
	if settled, waited := t.untilAnswered(req, r, sent, stored); waited != "" {
		sent += "  →  " + r.Short() + waited
		r = settled
	}
	if err := t.Reconcile(sent, r.Short(), books); err != nil {
		return r, sent, err
	}
	if toldToComeBack(r) {
		return r, sent, t.toldToWait(req.Key, sent, r, stored+": the refusal is the request's outcome", waitHarms{
			stuck: "yet its key is still in progress and every retry is told to wait, the key held for good: the transfer never ran and cannot run, and its client, which lost the 422, never learns that it was refused",
			done:  "its key is not in progress, yet every retry is still told to wait: its client, which lost the 422, never learns that it was refused",
		})
	}
	if d := replayValueMismatch(orig, r, "the original"); d != "" {
		return r, sent, t.Harmful(replayHarm(orig, r), sent, r.String()+"\n"+d, stored+"; "+then)
	}
	return r, sent, nil
}

// checkAnswerStoredWithTheMoney catches an answer stored after the
// business commit, in a statement or transaction of its own: a crash
// between the two leaves a completed key with no answer to replay, or an
// in-progress key whose money moved.
func checkAnswerStoredWithTheMoney(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	type attempt struct {
		req    Request
		op     string
		record func()
	}
	amount, op := t.Amount(1_000, 100_000), t.Op()
	damount, dop := t.Amount(1_000, 100_000), t.Op()
	reqs := []attempt{
		{Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op)), op,
			func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }},
		{Deposit(a, t.Key(), DepositBody(a.Accounts[1], damount, dop)), dop,
			func() { books.Deposit(dop, a.Accounts[1], damount) }},
	}
	for _, r := range reqs {
		if err := t.Arm(labctl.CrashAfterCommit, 1); err != nil {
			return err
		}
		first := t.Do(r.req)
		if t.target.Child != nil {
			if err := t.Restart(); err != nil {
				return err
			}
		}
		r.record()
		sent := r.req.String() + "\n(armed: crash-after-commit, the server dies right after the commit that moves the money)  →  " + first.Short()
		if err := t.Reconcile(sent, "", books); err != nil {
			return err
		}
		const stored = "the stored 201 of the operation: its money moved, and nothing runs any more"
		retry, n := t.retryUntilAnswered(r.req, time.Second, sent, stored)
		story := fmt.Sprintf("%s\nthen the same request again, while it is told to wait or gets no answer: %s", sent, counted(n, "retry", "retries"))
		if err := t.Reconcile(story, retry.Short(), books); err != nil {
			return err
		}
		var got struct {
			Metadata map[string]string `json:"metadata"`
		}
		own := json.Unmarshal(retry.Body, &got) == nil && got.Metadata["op"] == r.op
		switch {
		case toldToComeBack(retry):
			// Told to wait until it stopped, a plain-text 409 as a 409
			// request-in-progress (retryUntilAnswered): the key table
			// says which harm that is.
			return t.stillInProgress(r.req.Key, story, retry, stored)
		case !retry.Is(http.StatusCreated, "") && !(success(retry) && own):
			return t.Harmful(judging.NoUsableAnswer, story, retry.String(), "the stored 201 of the operation: its money moved, and the answer was stored with it")
		case !own:
			return t.Harmful(judging.WrongAnswer, story, retry.String(), "the stored 201 of operation "+r.op)
		case !retry.Is(http.StatusCreated, ""):
			// Its own operation in another success status (200 for the
			// stored 201): the client learns that its money moved.
			t.Differ(story, retry.String(), "the stored 201 of operation "+r.op+", in its status")
		}
	}
	return nil
}
