package conform

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The scenarios of the key itself: present, written as the draft writes
// it, refused when it is not one, and never cut short or case-folded.

func keySFString(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	key := sf(r.key())
	a := r.send(ctx, r.client, o, key)
	res.Sent, res.Got = describe(r, key, 1), a.String()
	contract(res, a.ok(), "2xx: the key is a String, the draft's own syntax")
	return b.judge(ctx, res, expect{o, 1, "one operation"})
}

func missingKey(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	a := r.send(ctx, r.client, o, "")
	res.Sent, res.Got = describe(r, "", 1), a.String()
	contract(res, a.err == nil && a.status == http.StatusBadRequest, "400, with a link to the documentation")
	// Refused, nothing may move; taken (an API that does not demand a
	// key), it must have executed once.
	if a.ok() {
		return b.judge(ctx, res, expect{o, 1, "the request without a key, answered 2xx,"})
	}
	return b.judge(ctx, res, expect{o, 0, "the request without a key, refused,"})
}

// due is how many times an operation whose requests got answers must
// have executed: once if any was a 2xx, else never.
func due(answers ...answer) int {
	for _, a := range answers {
		if a.ok() {
			return 1
		}
	}
	return 0
}

func keyForms(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	key := r.key()
	quoted := r.send(ctx, r.client, o, sf(key))
	bare := r.send(ctx, r.client, o, key)
	res.Sent = describe(r, sf(key), 1) + ", then the same with Idempotency-Key: " + key
	res.Got = "quoted " + quoted.String() + "; bare " + bare.String()
	res.Expected = "the bare form refused (4xx), or taken as the same key: the operation executes once"
	return b.judge(ctx, res, expect{o, due(quoted, bare), "one operation, whose requests were answered " + statuses(quoted, bare) + ","})
}

// malformedKeys are the key fields malformedKey sends, each made from a
// fresh key k: none is a usable key. All but the empty one are no RFC
// 8941 String, so by RFC 8941 §4.2 the field fails to parse and the
// request has no key; the empty String parses, but names no request:
// every client that sends it sends the same.
var malformedKeys = []struct {
	name   string
	fields func(k string) []string
	// shared is whether every client, and every run, sends the field
	// alike, whatever key it drew: an API that takes it as a key holds
	// one key for them all (see sharedKey).
	shared bool
}{
	{name: "non-ASCII", fields: func(k string) []string { return []string{`"` + k + `-é"`} }},
	{name: "a control character", fields: func(k string) []string { return []string{`"` + k + "\t1" + `"`} }},
	{name: "unterminated", fields: func(k string) []string { return []string{`"` + k} }},
	{name: "two keys in one field", fields: func(k string) []string { return []string{sf(k+"-1") + ", " + sf(k+"-2")} }},
	{name: "the field twice", fields: func(k string) []string { return []string{sf(k + "-1"), sf(k + "-2")} }},
	{name: "empty", fields: func(string) []string { return []string{`""`} }, shared: true},
}

func malformedNames() string {
	var names []string
	for _, m := range malformedKeys {
		names = append(names, m.name)
	}
	return strings.Join(names, ", ")
}

func malformedKey(ctx context.Context, r *runner, res *Result) error {
	b, err := r.open(ctx)
	if err != nil {
		return err
	}
	var want []expect
	var sent, got []string
	var shares []sharing
	refused := true
	for _, m := range malformedKeys {
		o, err := r.newOp(0)
		if err != nil {
			return err
		}
		fields := m.fields(r.key())
		first := r.sendFields(ctx, r.client, o, fields)
		second := r.sendFields(ctx, r.client, o, fields)
		refused = refused && first.refused() && second.refused()
		sent = append(sent, fmt.Sprintf("%s: Idempotency-Key: %s", m.name, strings.Join(visible(fields), " and Idempotency-Key: ")))
		got = append(got, m.name+": "+statuses(first, second))
		want = append(want, expect{o, due(first, second), "the operation keyed " + m.name})
		if m.shared {
			other, err := r.newOp(0)
			if err != nil {
				return err
			}
			third := r.sendFields(ctx, r.client, other, fields)
			refused = refused && third.refused()
			sent[len(sent)-1] += ", then another operation with it"
			got[len(got)-1] += "; another operation " + statuses(third)
			want = append(want, expect{other, due(third), "another operation keyed " + m.name})
			shares = append(shares, sharedKey(r, m.name, first, third))
		}
	}
	res.Sent = fmt.Sprintf("%s %s twice with each of: %s", r.Profile.Operation.Method, r.Profile.Operation.Path, strings.Join(sent, "; "))
	res.Got = strings.Join(got, "; ")
	contract(res, refused, "4xx each time: an RFC 8941 field that fails to parse is ignored (RFC 8941 §4.2), and a request without a key gets 400 (§2.7); if taken anyway, the operation executes once, never again on its retry")
	if err := b.judge(ctx, res, want...); err != nil {
		return err
	}
	for _, s := range shares {
		if s.said == "" {
			continue
		}
		if s.harm {
			// Seen without a witness: the answers say it.
			res.Money = MoneyHarmed
		}
		res.Saw = s.said + "; " + res.Saw
	}
	return nil
}

// sharing is what sharedKey says, and whether it is a harm.
type sharing struct {
	said string
	harm bool
}

// sharedKey says what the answers to two operations of one principal,
// each sent with the field every client sends alike (named name), show
// of an API that takes that field as a key: the second handed the
// first one's result (a harm, which every client sending it meets once
// another has, and every run after the first meets on its own first
// operation), or refused as a key in use; nothing when they show
// neither. It lets the first run on a fresh API see what only later runs would,
// where the first operation keyed so finds the key an earlier one left.
func sharedKey(r *runner, name string, first, second answer) sharing {
	switch {
	case r.handedOver(first, second):
		return sharing{fmt.Sprintf("another operation keyed %s was answered with the first one's result: the API takes the %s field as a key, one every client that sends it shares, so every one after the first is told the first one's result", name, name), true}
	case first.ok() && heldKey(second):
		return sharing{fmt.Sprintf("another operation keyed %s was refused (%d) as if it reused the first one's key: the API takes the %s field as a key, one every client that sends it shares", name, second.status, name), false}
	}
	return sharing{}
}

// visible writes each field as sent, but for a control character or a
// byte beyond ASCII, written as a Go escape (\t, \u00e9) so that the
// report shows it.
func visible(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		var b strings.Builder
		for _, c := range f {
			if c < 0x20 || c > 0x7e {
				q := strconv.QuoteRuneToASCII(c)
				b.WriteString(q[1 : len(q)-1])
				continue
			}
			b.WriteRune(c)
		}
		out[i] = b.String()
	}
	return out
}

// longKey is how many characters long the keys of longKeys are.
const longKey = 4096

func longKeys(ctx context.Context, r *runner, res *Result) error {
	b, err := r.open(ctx)
	if err != nil {
		return err
	}
	base := r.key()
	base += strings.Repeat("x", longKey-len(base)-1)
	var ops [2]op
	var answers [2]answer
	for i, last := range []string{"a", "b"} {
		if ops[i], err = r.newOp(0); err != nil {
			return err
		}
		if i == 0 {
			answers[i] = r.send(ctx, r.client, ops[i], sf(base+last))
			continue
		}
		// A 409 tells its client to come back: the second does, as a
		// client would, before its answer is taken for a key held.
		answers[i] = r.untilFinal(ctx, ops[i], sf(base+last))
	}
	res.Sent = fmt.Sprintf("%s %s  Idempotency-Key: \"%sxxx…xa\" (%d characters), then another operation whose key ends in b instead: the same but for its last character",
		r.Profile.Operation.Method, r.Profile.Operation.Path, base[:strings.IndexByte(base, 'x')], longKey)
	res.Got = fmt.Sprintf("first %s; second %s", answers[0].String(), answers[1].String())
	res.Expected = "both refused (the API limits a key's length), or both 2xx, each with its own result"
	if err := b.judge(ctx, res, expect{ops[0], due(answers[0]), "the first"}, expect{ops[1], due(answers[1]), "the second"}); err != nil {
		return err
	}
	switch {
	case r.handedOver(answers[0], answers[1]):
		res.Money = MoneyHarmed
		res.Saw = "the second key was answered with the first one's result: the server cut the keys short and took them for one; " + res.Saw
	case answers[0].ok() && heldKey(answers[1]), answers[1].ok() && heldKey(answers[0]):
		res.Money = MoneyHarmed
		res.Saw = "one key was taken and the other, as long, refused as a key in use or reused: the server cut the keys short and took them for one; " + res.Saw
	}
	return nil
}

// keyCase sends a key with a capital letter, then the same key in lower
// case, the form every other scenario's keys take. Keys are
// case-sensitive (§2.1 makes a key an RFC 8941 String, and nothing in
// the draft folds its case); a key column
// whose collation ignores case takes the two for one, and a client
// whose keys are random letters of both cases loses an operation to it.
// The capital goes first so that an API that takes only lower-case keys
// refuses it (400), harmlessly, before its lower-case twin is taken.
func keyCase(ctx context.Context, r *runner, res *Result) error {
	b, err := r.open(ctx)
	if err != nil {
		return err
	}
	base := r.key() + "-"
	var ops [2]op
	var answers [2]answer
	for i, last := range []string{"K", "k"} {
		if ops[i], err = r.newOp(0); err != nil {
			return err
		}
		if i == 0 {
			answers[i] = r.send(ctx, r.client, ops[i], sf(base+last))
			continue
		}
		// A 409 tells its client to come back: the second does, as a
		// client would, before its answer is taken for a key held.
		answers[i] = r.untilFinal(ctx, ops[i], sf(base+last))
	}
	res.Sent = fmt.Sprintf("%s %s  Idempotency-Key: \"%sK\", then another operation under \"%sk\"",
		r.Profile.Operation.Method, r.Profile.Operation.Path, base, base)
	res.Got = fmt.Sprintf("first %s; second %s", answers[0].String(), answers[1].String())
	res.Expected = "both 2xx, each with its own result, or the first refused (the API takes no capitals) and the second 2xx"
	if err := b.judge(ctx, res, expect{ops[0], due(answers[0]), "the first"}, expect{ops[1], due(answers[1]), "the second"}); err != nil {
		return err
	}
	switch {
	case r.handedOver(answers[0], answers[1]):
		res.Money = MoneyHarmed
		res.Saw = "the second key was answered with the first one's result: the server folds the case of keys and took them for one (a key column with a case-insensitive collation does); " + res.Saw
	case answers[0].ok() && heldKey(answers[1]):
		res.Money = MoneyHarmed
		res.Saw = "the first key was taken and the second, the same in lower case, refused as a key in use or reused (" + strconv.Itoa(answers[1].status) + "): the server folds the case of keys and took them for one (a key column with a case-insensitive collation does); " + res.Saw
	}
	return nil
}

// heldKey reports whether a refused its request as an API refuses a key
// it holds: 409 (in use) or 422 (used with another payload). Another
// refusal, a rate limit or a key too long, says nothing of whether two
// keys were taken for one; the witness judges it.
func heldKey(a answer) bool {
	return a.err == nil && (a.status == http.StatusConflict || a.status == http.StatusUnprocessableEntity)
}

// statuses sums answers up by status only: "400, 400".
func statuses(answers ...answer) string {
	var out []string
	for _, a := range answers {
		if a.err != nil {
			out = append(out, "no answer")
			continue
		}
		out = append(out, strconv.Itoa(a.status))
	}
	return strings.Join(out, ", ")
}
