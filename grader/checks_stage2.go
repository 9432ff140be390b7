package grader

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"idemlab/grader/judging"
	"idemlab/kit/canonical"
	"idemlab/kit/labclient"
)

// member is one member of a JSON object: its name and its value, already
// written as JSON.
type member struct{ name, value string }

// object writes the members in the order given.
func object(members ...member) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = jsonString(m.name) + ":" + m.value
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// jsonString writes s as a JSON string with the fewest escapes: only ",
// \ and control characters; <, & and U+2028 stay as they are.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// body is a request body as a list of members, so that a check can edit
// one member, add one or drop one, and keep the others as they were.
type body []member

func (b body) String() string { return object(b...) }

// with returns b with member name set to value (appended if absent).
func (b body) with(name, value string) body {
	out := append(body{}, b...)
	for i, m := range out {
		if m.name == name {
			out[i].value = value
			return out
		}
	}
	return append(out, member{name, value})
}

// without returns b without member name.
func (b body) without(name string) body {
	var out body
	for _, m := range b {
		if m.name != name {
			out = append(out, m)
		}
	}
	return out
}

// metadata writes a metadata object from name, value pairs.
func metadata(pairs ...string) string {
	var ms []member
	for i := 0; i+1 < len(pairs); i += 2 {
		ms = append(ms, member{pairs[i], jsonString(pairs[i+1])})
	}
	return object(ms...)
}

// longMetadata is a metadata object as long in its canonical form as
// docs/api.md allows: op and 15 more members, each name of 40 characters
// and each value of 64, all of them control characters (U+0001 to
// U+001F but the five with a short escape), which RFC 8785 writes as
// \u0001, six bytes each, so that the canonical form runs to some 9 KiB
// for 16 members, and a fingerprint over its first 8 KiB misses what
// comes after.
func longMetadata(op string) string {
	controls := sixByteControls()
	pairs := []string{"op", op}
	for i := range 15 {
		// The first two characters spell i: the names differ.
		name := string([]rune{controls[i/len(controls)], controls[i%len(controls)]})
		pairs = append(pairs, name+strings.Repeat(string(controls[i%len(controls)]), 38), strings.Repeat(string(controls[(i+1)%len(controls)]), 64))
	}
	return metadata(pairs...)
}

// sixByteControls are the control characters U+0001 to U+001F but the
// five with a short escape (\b, \t, \n, \f, \r): every JSON encoder,
// RFC 8785's included, writes each of them as \u00XX, six bytes for one.
func sixByteControls() []rune {
	var controls []rune
	for c := rune(1); c < 0x20; c++ {
		if !strings.ContainsRune("\b\t\n\f\r", c) {
			controls = append(controls, c)
		}
	}
	return controls
}

// checkEditedResubmission edits every member of a transfer and of a
// deposit in turn and resubmits each edit under the original's key. It
// catches a server without a fingerprint (409 duplicate-request, or from
// stage 4 the original's 201, for a request it never executed), a
// fingerprint over part of the body (the money only, without the
// metadata, or, from stage 8, without the reference, which has a table of
// its own), a fingerprint that folds the case of the body or of its
// metadata (so that "Rent" and "rent", or "inv-7" and "INV-7", are one
// request), a claim that takes an edited body for a new request (UNIQUE
// over key and fingerprint, or a claim replaced) and executes it, a
// fingerprint over the first kilobytes of the canonical form only (the
// payee edited after a long metadata), a refusal that stores the edit's
// fingerprint as the key's (the first request's own retry is then refused
// as another request), and, from stage 3, a claim that reads the key's
// state before its fingerprint (see editedWhileRunning).
func checkEditedResubmission(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	num := func(n int64) string { return fmt.Sprint(n) }
	str := jsonString

	// Four originals: a transfer with a memo and two metadata members, one
	// with neither memo nor ref, a deposit, and a transfer whose metadata
	// is as long as the limits allow, whose payee comes last in its
	// canonical form, some 9 KiB in.
	amount, op, ref := t.Amount(10_000, 500_000), t.Op(), fmt.Sprintf("inv-%06d", t.Amount(0, 999_999))
	memo := fmt.Sprintf("rent %d/%d", t.Amount(1, 12), t.Amount(1, 28))
	full := body{{"from", str(a.Accounts[0])}, {"to", str(b.Accounts[0])}, {"amount", num(amount)},
		{"memo", str(memo)}, {"metadata", metadata("op", op, "ref", ref)}}
	amount2, op2 := t.Amount(10_000, 500_000), t.Op()
	bare := body{{"from", str(a.Accounts[0])}, {"to", str(b.Accounts[0])}, {"amount", num(amount2)}, {"metadata", metadata("op", op2)}}
	damount, dop := t.Amount(1_000, 90_000), t.Op()
	dep := body{{"account", str(a.Accounts[1])}, {"amount", num(damount)}, {"memo", str("salary")}, {"metadata", metadata("op", dop, "ref", ref)}}
	amount4, op4 := t.Amount(10_000, 500_000), t.Op()
	long := body{{"from", str(a.Accounts[0])}, {"to", str(b.Accounts[0])}, {"amount", num(amount4)}, {"metadata", longMetadata(op4)}}
	originals := []struct {
		req    Request
		record func()
	}{
		{Transfer(a, t.Key(), full.String()), func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }},
		{Transfer(a, t.Key(), bare.String()), func() { books.Transfer(op2, a.Accounts[0], b.Accounts[0], amount2) }},
		{Deposit(a, t.Key(), dep.String()), func() { books.Deposit(dop, a.Accounts[1], damount) }},
		{Transfer(a, t.Key(), long.String()), func() { books.Transfer(op4, a.Accounts[0], b.Accounts[0], amount4) }},
	}
	firsts := make([]Response, len(originals))
	for i, o := range originals {
		r := t.Do(o.req)
		firsts[i] = r
		if toldSentRan(r, o.req) {
			o.record()
		}
		if err := t.Reconcile(o.req.String(), r.Short(), books); err != nil {
			return err
		}
		if err := t.createdOrDiffers(r, o.req, o.req.String(), r.String(), createdFresh); err != nil {
			return err
		}
	}
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	other := t.Op()
	type edit struct {
		what     string
		original int
		body     body
	}
	edits := []edit{
		{"the amount edited", 0, full.with("amount", num(amount+t.Amount(1, 9_999)))},
		{"another payee", 0, full.with("to", str(b.Accounts[1]))},
		{"another source account", 0, full.with("from", str(a.Accounts[1]))},
		{"the memo changed", 0, full.with("memo", str("rent, corrected"))},
		{"the memo's letter case changed", 0, full.with("memo", str(strings.ToUpper(memo[:1])+memo[1:]))},
		{"the memo removed", 0, full.without("memo")},
		{"a metadata member changed", 0, full.with("metadata", metadata("op", op, "ref", ref+"-2"))},
		{"a metadata member's letter case changed", 0, full.with("metadata", metadata("op", op, "ref", strings.ToUpper(ref)))},
		{"a metadata member added", 0, full.with("metadata", metadata("op", op, "ref", ref, "note", "second try"))},
		{"a metadata member removed", 0, full.with("metadata", metadata("op", op))},
		{"metadata.op changed", 0, full.with("metadata", metadata("op", other, "ref", ref))},
		{"a memo added", 1, bare.with("memo", str("rent"))},
		// From stage 8 the reference is a business key, held in a table
		// of its own; it is still a member of the body, and the same key
		// with it added is another request.
		{"a reference added", 1, bare.with("reference", str(strings.ToUpper(ref)))},
		{"the deposit's amount edited", 2, dep.with("amount", num(damount*10))},
		{"the deposit into another account", 2, dep.with("account", str(a.Accounts[0]))},
		{"the deposit's memo changed", 2, dep.with("memo", str("bonus"))},
		{"a metadata member added to the deposit", 2, dep.with("metadata", metadata("op", dop, "ref", ref, "note", "x"))},
	}
	t.Rand().Shuffle(len(edits), func(i, j int) { edits[i], edits[j] = edits[j], edits[i] })
	// Last, so that a fingerprint wrong for every body shows a short one.
	edits = append(edits, edit{"another payee, after 16 metadata members, 15 of them at their longest (the payee sorts last in the canonical form, some 9 KiB in)", 3, long.with("to", str(b.Accounts[1]))})
	books.Expect(other)
	for _, e := range edits {
		first := originals[e.original].req
		req := first
		req.Body = e.body.String()
		sent := first.String() + "  →  " + firsts[e.original].Short() + "\nthen the same key with " + e.what + ": " + req.String()
		r := t.Do(req)
		if err := t.unchanged(before, sent, r); err != nil {
			return err
		}
		expected := "422 " + pKeyReused + ": the key names the first request, and this is another one; nothing executes"
		switch {
		case r.Is(http.StatusConflict, pDuplicate):
			return t.toldDuplicate(sent, r.String(), expected)
		case success(r):
			return t.Harmful(judging.WrongAnswer, sent, r.String(), fmt.Sprintf("%s; this %d is the first request's, not the edited one's", expected, r.Status))
		case !r.Is(http.StatusUnprocessableEntity, pKeyReused):
			return t.Fail(sent, r.String(), expected)
		}
	}
	// A refused edit changes nothing: the key still names the first
	// request, whose own retry is still a retry.
	// Replays in another status are one contract difference, recorded
	// after the last retry, or at whatever ends the check first.
	var replays otherStatuses
	defer replays.differ(t)
	for i, o := range originals {
		r := t.Do(o.req)
		replays.retries++
		sent := o.req.String() + "  →  " + firsts[i].Short() + "\nthen edits of it under its key, each answered 422\nthen the first request again, unchanged: " + o.req.String()
		if err := t.Reconcile(sent, r.Short(), books); err != nil {
			return err
		}
		expected := "the first request's retry, answered as a retry: 409 " + pDuplicate + " (stages 1–3) or its stored answer (stage 4 on); an edit refused with 422 changes nothing, and the key still names the first request"
		if r.Is(http.StatusConflict, pDuplicate) || replayed(&replays, sent, firsts[i], r, expected) {
			continue
		}
		if r.Is(http.StatusUnprocessableEntity, pKeyReused) {
			return t.Harmful(judging.NoUsableAnswer, sent, r.String(), expected+"; refused as another request, the client can never learn that its money moved")
		}
		return t.Fail(sent, r.String(), expected)
	}
	replays.differ(t)
	return t.editedWhileRunning(s)
}

// createdFresh is what the first request with a fresh key is expected to
// be answered (createdOrDiffers).
const createdFresh = "201 Created: the first request with a fresh key executes"

// editedWhileRunning sends a transfer with its amount edited under the key
// of an original that still waits on the core, its key in progress: the
// edited copy is another request whatever the key's state, and gets 422
// idempotency-key-reused as it would once the original has completed. It
// catches a claim that reads the state before the fingerprint and tells
// the clerk to wait and retry (409 request-in-progress), as if the request
// still running were the clerk's own, with its amount. A key never seen in
// progress (stages 1 and 2 claim with the money) leaves nothing to judge;
// one seen in progress too late every time to send the edit beside it (a
// busy machine) could not be observed.
func (t *T) editedWhileRunning(s Scenario) error {
	seenLate := false
	for _, latency := range heldLatencies {
		req, op, amount := s.Payment(t)
		held, err := t.Hold(req, latency)
		if err != nil {
			return err
		}
		edited := req
		edited.Body = TransferBody(s.A.Accounts[0], s.B.Accounts[0], amount+t.Amount(1, 9_999), op)
		var r Response
		conclusive := held.Seen && held.Early()
		if conclusive {
			r = t.Do(edited)
		}
		orig := held.Wait()
		seenLate = seenLate || held.Seen && !conclusive
		sent := fmt.Sprintf("%s\n(the original, waiting %v on the core; its key was not seen in progress early enough to send an edit beside it)", req.String(), latency)
		got := "the original answered " + orig.Short()
		if conclusive {
			sent = fmt.Sprintf("%s\n(the original is still waiting on the core, %v, its key in progress)\nthen the same key with the amount edited: %s", req.String(), latency, edited.String())
			got = r.Short() + "\nand the original answered " + orig.Short()
		}
		if toldRan(orig, op) {
			s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
		} else {
			s.Books.Expect(op)
		}
		if err := t.Reconcile(sent, got, s.Books); err != nil {
			return err
		}
		if !conclusive {
			continue
		}
		// Told it ran in another 2xx: a contract difference; the edit
		// beside it is still judged.
		if err := t.createdOrDiffers(orig, req, sent, got, "the original answers 201 Created once its core call returns"); err != nil {
			return err
		}
		expected := "422 " + pKeyReused + ": the key names the original, still running, and the edit is another request, whatever the key's state; nothing executes"
		switch {
		case r.Is(http.StatusConflict, pDuplicate):
			return t.toldDuplicate(sent, r.String(), expected)
		case !r.Is(http.StatusUnprocessableEntity, pKeyReused):
			err := t.Fail(sent, r.String(), expected)
			// What a used key answers in progress is stage 3's decision,
			// which lesson 2 does not explain.
			err.(*judging.Failure).Lesson = lesson3 + "#the-window"
			return err
		}
		return nil
	}
	if seenLate {
		// The key showed in progress, but too late every time to send
		// the edit while the original still ran: a busy machine.
		return t.CouldNotObserve("an edited request beside its original in progress: with core latencies of up to %v, the original's key showed in progress too late every time to send the edit while it still ran (a busy machine; run the check alone with RUN=… to tell)", heldLatencies[len(heldLatencies)-1])
	}
	return nil
}

// spelling is one way of writing the same transfer body.
type spelling struct {
	what string
	body string
}

// spellings writes one transfer in several byte-different, canonically
// equal forms. amount is a multiple of 1000 so that it has an exponent
// form; memo holds < > & (which Go's encoding/json writes as \u003c,
// \u003e, \u0026) and no other character that needs escaping.
func spellings(from, to string, amount int64, memo, op, ref string) []spelling {
	q := jsonString
	plain := fmt.Sprintf(`{"from":%s,"to":%s,"amount":%d,"memo":%s,"metadata":{"op":%s,"ref":%s}}`,
		q(from), q(to), amount, q(memo), q(op), q(ref))
	with := func(amountText, memoText string) string {
		return fmt.Sprintf(`{"from":%s,"to":%s,"amount":%s,"memo":%s,"metadata":{"op":%s,"ref":%s}}`,
			q(from), q(to), amountText, memoText, q(op), q(ref))
	}
	html := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`)
	return []spelling{
		{"the original spelling", plain},
		{"members in another order", fmt.Sprintf(`{"metadata":{"ref":%s,"op":%s},"memo":%s,"amount":%d,"to":%s,"from":%s}`,
			q(ref), q(op), q(memo), amount, q(to), q(from))},
		{"other whitespace", fmt.Sprintf("{\n\t\"from\" : %s,\r\n  \"to\":%s ,\n  \"amount\":\t%d,\n  \"memo\": %s,\n  \"metadata\": { \"op\": %s, \"ref\": %s }\n}\n",
			q(from), q(to), amount, q(memo), q(op), q(ref))},
		{"every memo character as a \\u escape", with(fmt.Sprint(amount), escapeAll(memo))},
		{"a solidus written \\/", with(fmt.Sprint(amount), strings.ReplaceAll(q(memo), "/", `\/`))},
		{"< > & written \\u003c \\u003e \\u0026, as Go's encoding/json writes them", with(fmt.Sprint(amount), html.Replace(q(memo)))},
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
// a re-encoding that is not canonical (json.Compact, or a decoding with
// UseNumber or into json.RawMessage, keeps 3e5 and 300000 apart and the
// escapes as they came): one of the rewritten retries is refused as a
// different request. A retry must be answered as a retry: 409
// duplicate-request until stage 3, the stored 201 (marked replayed) from
// stage 4; any refusal leaves its client without a usable answer.
func checkEquivalentBodies(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	key, op := t.Key(), t.Op()
	amount := 1000 * t.Amount(1, 900)
	memo := fmt.Sprintf("Apt %d 월세 %d/%d <rent> & fees", t.Amount(1, 999), t.Amount(1, 12), t.Amount(1, 28))
	ref := fmt.Sprintf("inv-%06d", t.Amount(0, 999_999))
	forms := spellings(a.Accounts[0], b.Accounts[0], amount, memo, op, ref)
	// The original is one spelling drawn at random; every other is a retry,
	// in an order drawn at random.
	t.Rand().Shuffle(len(forms), func(i, j int) { forms[i], forms[j] = forms[j], forms[i] })
	orig := Transfer(a, key, forms[0].body)
	r := t.Do(orig)
	first := r
	if toldRan(r, op) {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	}
	if err := t.Reconcile(orig.String()+"  ("+forms[0].what+")", r.Short(), books); err != nil {
		return err
	}
	if err := t.createdOrDiffers(r, orig, orig.String()+"  ("+forms[0].what+")", r.String(), createdFresh); err != nil {
		return err
	}
	story := orig.String() + "  (" + forms[0].what + ")  →  " + r.Short()
	var replays otherStatuses
	defer replays.differ(t)
	for _, f := range forms[1:] {
		retry := Transfer(a, key, f.body)
		r := t.Do(retry)
		replays.retries++
		sent := story + "\nthen a retry with " + f.what + ": " + retry.String()
		if err := t.Reconcile(sent, r.Short(), books); err != nil {
			return err
		}
		expected := "the same request, answered as a retry: 409 " + pDuplicate + " (stages 1–3) or the stored answer (stage 4 on); the RFC 8785 canonical forms of the two bodies are identical"
		if r.Is(http.StatusConflict, pDuplicate) || replayed(&replays, sent, first, r, expected) {
			continue
		}
		if r.Status == http.StatusUnprocessableEntity || r.Status == http.StatusBadRequest {
			return t.Harmful(judging.NoUsableAnswer, sent, r.String(), expected+"; refused as another request, the client can never learn that its money moved")
		}
		return t.Fail(sent, r.String(), expected)
	}
	return nil
}

// checkFingerprintIsRFC8785 sends bodies whose encoding/json forms differ
// from their RFC 8785 form (a memo with < > & and U+2028, metadata member
// names above U+FFFF, members out of order, escapes and an exponent in the
// input), a memo with a decomposed accent and one with spaces at both
// ends and one with a line break written \r\n, which RFC 8785 keeps as
// they are and a normalisation (Unicode NFC, trimming, rewriting line
// breaks) would change, and a body without the optional members, to
// which RFC 8785 adds none, and compares the
// fingerprint column of each key's row with the SHA-256 of the canonical
// form it computes itself. On one server a fingerprint over json.Marshal
// of the decoded body works (it is a function of the decoded value); next
// to a replica or a service that computes the RFC's, it refuses retries
// or accepts edits. A server that tells an edited body apart but keeps
// its fingerprint elsewhere than a fingerprint column could not be
// observed; one that does not tell it apart has no fingerprint at all,
// and fails.
func checkFingerprintIsRFC8785(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	str := jsonString
	n := t.Amount(1, 999)
	op1, op2, op3, op4, op6, op7, op9 := t.Op(), t.Op(), t.Op(), t.Op(), t.Op(), t.Op(), t.Op()
	amount1, amount2, amount3 := t.Amount(1_000, 90_000), 1000*t.Amount(1, 90), t.Amount(1_000, 90_000)
	amount4, amount5, amount6 := t.Amount(1_000, 90_000), t.Amount(1_000, 90_000), t.Amount(1_000, 90_000)
	amount7, amount8, amount9 := t.Amount(1_000, 90_000), t.Amount(1_000, 90_000), t.Amount(1_000, 90_000)
	type sample struct {
		what   string
		req    Request
		record func()
	}
	samples := []sample{
		{"members out of order, a memo with < > &, metadata member names above U+FFFF (UTF-16 order is not UTF-8 order)",
			Transfer(a, t.Key(), object(member{"to", str(b.Accounts[0])}, member{"metadata", object(
				member{"op", str(op1)}, member{"！", str("fullwidth")}, member{"😀", str("smile")}, member{"z", str("last")})},
				member{"amount", fmt.Sprint(amount1)}, member{"memo", str(fmt.Sprintf("<rent> & fees %d", n))}, member{"from", str(a.Accounts[0])})),
			func() { books.Transfer(op1, a.Accounts[0], b.Accounts[0], amount1) }},
		{"a memo with U+2028 and U+2029, \\u escapes and \\/ in the input, the amount as an exponent",
			Transfer(a, t.Key(), fmt.Sprintf(`{ "from" : %s, "amount" : %de3, "to" : %s, "memo" : "line\u2028sep\u2029para \u00e9t\u00e9 3\/4", "metadata" : { "op" : %s } }`,
				str(a.Accounts[0]), amount2/1000, str(b.Accounts[0]), str(op2))),
			func() { books.Transfer(op2, a.Accounts[0], b.Accounts[0], amount2) }},
		{"a deposit: members out of order, a memo with &, a metadata member name above U+FFFF",
			Deposit(a, t.Key(), object(member{"metadata", object(member{"𝄞", str("clef")}, member{"op", str(op3)}, member{"ｏ", str("o")})},
				member{"memo", str("salary & bonus")}, member{"amount", fmt.Sprint(amount3)}, member{"account", str(a.Accounts[1])})),
			func() { books.Deposit(op3, a.Accounts[1], amount3) }},
		{"an empty memo, which is a member of the body all the same (a struct's omitempty drops it)",
			Transfer(a, t.Key(), object(member{"from", str(a.Accounts[1])}, member{"to", str(b.Accounts[0])},
				member{"amount", fmt.Sprint(amount4)}, member{"memo", str("")}, member{"metadata", object(member{"op", str(op4)})})),
			func() { books.Transfer(op4, a.Accounts[1], b.Accounts[0], amount4) }},
		// With empty metadata the deposit names no op: its books are the
		// balance alone.
		{"a deposit with empty metadata, which is a member of the body all the same (a struct's omitempty drops it)",
			Deposit(a, t.Key(), object(member{"account", str(a.Accounts[0])}, member{"amount", fmt.Sprint(amount5)},
				member{"memo", str("tips")}, member{"metadata", "{}"})),
			func() { books.Balances[a.Accounts[0]] += amount5 }},
		{"a memo with a decomposed accent (e and U+0301): RFC 8785 keeps every code point as sent, and normalises nothing",
			Transfer(a, t.Key(), object(member{"from", str(a.Accounts[0])}, member{"to", str(b.Accounts[1])},
				member{"amount", fmt.Sprint(amount6)}, member{"memo", str(fmt.Sprintf("cafe\u0301 %d", n))}, member{"metadata", object(member{"op", str(op6)})})),
			func() { books.Transfer(op6, a.Accounts[0], b.Accounts[1], amount6) }},
		{"a memo with spaces at both ends: RFC 8785 keeps every character of a string, and trims nothing",
			Transfer(a, t.Key(), object(member{"from", str(a.Accounts[1])}, member{"to", str(b.Accounts[1])},
				member{"amount", fmt.Sprint(amount7)}, member{"memo", str(fmt.Sprintf("  rent %d  ", n))}, member{"metadata", object(member{"op", str(op7)})})),
			func() { books.Transfer(op7, a.Accounts[1], b.Accounts[1], amount7) }},
		{"a memo on two lines, its line break written \\r\\n as typed on Windows: RFC 8785 keeps every character of a string, and rewrites no line break",
			Transfer(a, t.Key(), fmt.Sprintf(`{"from":%s,"to":%s,"amount":%d,"memo":"rent %d\r\nthank you","metadata":{"op":%s}}`,
				str(a.Accounts[0]), str(b.Accounts[0]), amount9, n, str(op9))),
			func() { books.Transfer(op9, a.Accounts[0], b.Accounts[0], amount9) }},
		// With no metadata the deposit names no op: its books are the
		// balance alone.
		{"a deposit with neither memo nor metadata: RFC 8785 writes the members the body has, and adds no empty ones",
			Deposit(a, t.Key(), object(member{"account", str(a.Accounts[1])}, member{"amount", fmt.Sprint(amount8)})),
			func() { books.Balances[a.Accounts[1]] += amount8 }},
	}
	t.Rand().Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
	answers := make([]Response, len(samples))
	for i, s := range samples {
		r := t.Do(s.req)
		if toldSentRan(r, s.req) {
			s.record()
		}
		sent := s.req.String() + "  (" + s.what + ")"
		if err := t.Reconcile(sent, r.Short(), books); err != nil {
			return err
		}
		if err := t.createdOrDiffers(r, s.req, sent, r.String(), createdFresh); err != nil {
			return err
		}
		answers[i] = r
	}
	st, err := t.State()
	if err != nil {
		return err
	}
	for i, s := range samples {
		sent := s.req.String() + "  (" + s.what + ")  →  " + answers[i].Short()
		rows := judging.KeyRows(st, s.req.Key)
		if len(rows) == 0 {
			return t.CouldNotObserve("the key table: no row of idempotency_keys in GET /lab/state holds the key %s, so the fingerprint stored with it cannot be read", s.req.Key)
		}
		want, canon, err := rfc8785Fingerprint(s.req.Body)
		if err != nil {
			return fmt.Errorf("the check's own body has no canonical form: %w", err)
		}
		stored, ok := rows[0]["fingerprint"]
		if !ok {
			return t.noFingerprintColumn(s.req, sent, rows[0], books)
		}
		if got, _ := stored.(string); got != want {
			return t.Fail(sent, fmt.Sprintf("the key's row: fingerprint = %v%s", stored, knownForm(s.req.Body, stored)),
				fmt.Sprintf("fingerprint = %s, the lowercase hex SHA-256 of the body's RFC 8785 canonical form:\n%s", want, canon))
		}
	}
	return nil
}

// noFingerprintColumn judges a key row without a fingerprint column. It
// resubmits req with its amount edited under the same key: a server that
// refuses it with 422 keeps a fingerprint the check cannot see (could not
// observe); one that does not has no fingerprint at all (a failure).
func (t *T) noFingerprintColumn(req Request, sent string, row map[string]any, books *judging.Books) error {
	var v map[string]any
	if err := json.Unmarshal([]byte(req.Body), &v); err != nil {
		return err
	}
	v["amount"] = v["amount"].(float64) + 1
	edited := req
	b, _ := json.Marshal(v)
	edited.Body = string(b)
	r := t.Do(edited)
	sent += "\nthen the same key with the amount edited: " + edited.String()
	if err := t.Reconcile(sent, r.Short(), books); err != nil {
		return err
	}
	if r.Is(http.StatusUnprocessableEntity, pKeyReused) {
		return t.CouldNotObserve("the key table's fingerprint column: the server tells an edited body apart, but the key's row in idempotency_keys has no column named fingerprint (%s); docs/api.md asks for one holding the lowercase hex SHA-256 of the body's RFC 8785 form", judging.DescribeRows([]map[string]any{row}))
	}
	return t.Fail(sent, "the key's row: "+judging.DescribeRows([]map[string]any{row})+"\nthe edit: "+r.String(),
		"a fingerprint column with the lowercase hex SHA-256 of the body's RFC 8785 form, and 422 "+pKeyReused+" for the edit")
}

// knownForm names the encoding whose SHA-256 stored is, when it is one of
// the usual wrong turns; "" otherwise.
func knownForm(body string, stored any) string {
	s, _ := stored.(string)
	hash := func(b []byte) string {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	forms := []struct {
		what  string
		bytes func() ([]byte, error)
	}{
		{"the raw body", func() ([]byte, error) { return []byte(body), nil }},
		{"json.Compact of the raw body", func() ([]byte, error) {
			var buf bytes.Buffer
			err := json.Compact(&buf, []byte(body))
			return buf.Bytes(), err
		}},
		{"json.Marshal of the body decoded into any", func() ([]byte, error) {
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				return nil, err
			}
			return json.Marshal(v)
		}},
		{"the RFC 8785 form of the body without its empty memo or metadata, as a struct with omitempty writes it", func() ([]byte, error) {
			var v map[string]any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				return nil, err
			}
			if v["memo"] == "" {
				delete(v, "memo")
			}
			if m, ok := v["metadata"].(map[string]any); ok && len(m) == 0 {
				delete(v, "metadata")
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			return canonical.Transform(b)
		}},
		{"the RFC 8785 form of the body put into Unicode NFC, a normalisation RFC 8785 does not make", func() ([]byte, error) {
			return canonical.Transform(norm.NFC.Bytes([]byte(body)))
		}},
		{"the RFC 8785 form of the body with the spaces around its memo trimmed, which RFC 8785 does not do", func() ([]byte, error) {
			return withMembers(body, func(v map[string]any) {
				if m, ok := v["memo"].(string); ok {
					v["memo"] = strings.TrimSpace(m)
				}
			})
		}},
		{"the RFC 8785 form of the body with its memo's line breaks \\r\\n written \\n, which RFC 8785 does not do", func() ([]byte, error) {
			return withMembers(body, func(v map[string]any) {
				if m, ok := v["memo"].(string); ok {
					v["memo"] = strings.ReplaceAll(m, "\r\n", "\n")
				}
			})
		}},
		{"the RFC 8785 form of the body with an empty memo and empty metadata written in where it has none, which RFC 8785 does not do", func() ([]byte, error) {
			return withMembers(body, func(v map[string]any) {
				if _, ok := v["memo"]; !ok {
					v["memo"] = ""
				}
				if _, ok := v["metadata"]; !ok {
					v["metadata"] = map[string]any{}
				}
			})
		}},
	}
	for _, f := range forms {
		if b, err := f.bytes(); err == nil && strings.EqualFold(hash(b), s) {
			return "\n(that is the SHA-256 of " + f.what + ")"
		}
	}
	if want, _, err := rfc8785Fingerprint(body); err == nil && strings.EqualFold(want, s) {
		return "\n(the SHA-256 of the RFC 8785 form, but not in lowercase hex)"
	}
	return ""
}

// withMembers is the RFC 8785 form of body with its members changed by
// edit.
func withMembers(body string, edit func(map[string]any)) ([]byte, error) {
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, err
	}
	edit(v)
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonical.Transform(b)
}

// checkEditedRacesOriginal catches a claim that reads the stored
// fingerprint before its INSERT and takes a lost race for a retry: on
// PostgreSQL, an edited copy sent at the same moment as its original finds
// no row, loses at the INSERT, and is told "already executed" for money
// that never moved. Each round releases the original and the edited copy
// together behind a barrier, after a short core wait that lines them up.
func checkEditedRacesOriginal(t *T, s Scenario) error {
	const rounds = 6
	a, b, books := s.A, s.B, s.Books
	if err := t.Configure(labclient.Config{CoreLatency: 30 * time.Millisecond}); err != nil {
		return err
	}
	for round := range rounds {
		key, op := t.Key(), t.Op()
		amounts := []int64{t.Amount(1_000, 20_000), 0}
		amounts[1] = amounts[0] + t.Amount(1, 9_999)
		reqs := make([]Request, 2)
		for i, amount := range amounts {
			reqs[i] = Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		}
		rs := t.Simultaneously(2, func(i int) Request { return reqs[i] })
		sent := fmt.Sprintf("at once, behind a barrier (round %d of %d):\n%s  →  %s\nand the same key with the amount edited:\n%s  →  %s",
			round+1, rounds, reqs[0].String(), rs[0].Short(), reqs[1].String(), rs[1].Short())
		ran := -1
		for i, r := range rs {
			// Told that it ran: a 201, or another 2xx naming op.
			if toldRan(r, op) && ran < 0 {
				ran = i
				books.Transfer(op, a.Accounts[0], b.Accounts[0], amounts[i])
			}
		}
		if ran < 0 && !rs[0].ServerFailed() && !rs[1].ServerFailed() {
			books.Expect(op)
		}
		got := Summarize(rs)
		if err := t.Reconcile(sent, got, books); err != nil {
			return err
		}
		expected := "one of the two executes (201 Created); the other, another request under a used key, gets 422 " + pKeyReused + " (or 409 " + pInProgress + " when the first failed and gave its key back as the edit met it; while the first runs, the edit is another request all the same)"
		for i, r := range rs {
			switch {
			case i == ran && !r.Is(http.StatusCreated, ""):
				t.Differ(sent, r.String(), expected)
			case i == ran || r.Is(http.StatusUnprocessableEntity, pKeyReused) || r.Is(http.StatusConflict, pInProgress):
			case ran >= 0 && (r.Is(http.StatusConflict, pDuplicate) || r.Err == nil && r.Status >= 200 && r.Status < 300):
				return t.toldDuplicate(sent, r.String(), expected)
			default:
				t.Differ(sent, r.String(), expected)
			}
		}
		if ran < 0 {
			t.Differ(sent, got, expected)
		}
	}
	return nil
}
