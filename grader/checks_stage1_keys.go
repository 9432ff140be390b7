package grader

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/labctl"
)

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
		{"a quoted key with an escape other than \\\" and \\\\", []string{`"` + t.Key() + `\q"`}},
		{"a quoted key with a \\u escape, which Go's and JSON's string syntax decode and RFC 8941 does not have", []string{`"` + t.Key() + `\u0041"`}},
		{"a quoted key with a raw quote inside", []string{`"` + t.Key() + `"` + t.Key() + `"`}},
		{"a quoted key with a space at each end, inside the quotes", []string{`" ` + t.Key() + ` "`}},
	}
}

// checkInvalidKey catches a server that executes with a key it should have
// refused: one that trims, truncates, decodes an escape RFC 8941 does not
// have (\q, or \u0041, which Go's and JSON's string syntax read as A) or
// picks one of two fields, or takes any header value as a key (stage 0
// ignores the header).
func checkInvalidKey(t *T, s Scenario) error {
	a, b := s.A, s.B
	for _, bk := range badKeys(t) {
		before, err := t.Snapshot()
		if err != nil {
			return err
		}
		req := Transfer(a, "", TransferBody(a.Accounts[0], b.Accounts[0], t.Amount(1, 100_000), t.Op()))
		req.Header = http.Header{"Idempotency-Key": bk.values}
		res := t.Do(req)
		sent := bk.name + ": " + req.String()
		if err := t.refusedUnchanged(before, sent, res, res.Is(http.StatusBadRequest, pInvalidKey),
			"400 "+pInvalidKey+" (after unquoting, a key is 1–255 printable ASCII characters, 0x21–0x7E, in exactly one field)"); err != nil {
			return err
		}
	}
	return nil
}

// keyPair is a legal key and a sibling that differs from it only in the
// way a careless server erases: letter case, a trailing character, the
// quotes around it, a leading zero.
type keyPair struct {
	what         string
	key, sibling string
}

// The printable ASCII characters a key may hold, by class.
const (
	keyLetters     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	keyDigits      = "0123456789"
	keyPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
)

// keyPairs draws the keys of checkKeyForms from the check's seed: every
// class of printable ASCII, " and \ (escaped in the quoted form), lengths
// 1 and 255, and a key of digits only, which a column that reads a key as
// a number (SQLite's NUMERIC affinity, given to a column declared STRING)
// stores as the number it spells.
func keyPairs(t *T) []keyPair {
	pick := func(from string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = from[t.Rand().IntN(len(from))]
		}
		return string(b)
	}
	swapCase := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			switch {
			case 'a' <= c && c <= 'z':
				b[i] = c - 'a' + 'A'
			case 'A' <= c && c <= 'Z':
				b[i] = c - 'A' + 'a'
			}
		}
		return string(b)
	}
	punct := []byte(keyPunctuation)
	t.Rand().Shuffle(len(punct), func(i, j int) { punct[i], punct[j] = punct[j], punct[i] })
	everyPunct := pick(keyLetters, 3) + string(punct)
	all := keyLetters + keyDigits + keyPunctuation
	long := pick(keyLetters+keyDigits, 1) + pick(all, 254)
	last := long[254]
	for long[254] == last {
		last = all[t.Rand().IntN(len(all))]
	}
	mixed := pick(keyLetters, 1) + pick(keyLetters+keyDigits+"-_", 23)
	letter := pick(keyLetters, 1)
	digits := pick("123456789", 1) + pick(keyDigits, 5+t.Rand().IntN(8))
	inner := t.Key()
	return []keyPair{
		{"one letter, and the same letter in the other case", letter, swapCase(letter)},
		{"every punctuation character (\" and \\ are escaped in the quoted form), and the same with one more at the end",
			everyPunct, everyPunct + pick(keyPunctuation, 1)},
		{"255 characters of every class, and the same but the last", long, long[:254] + string(last)},
		{"letters and digits, and the same with every letter in the other case", mixed, swapCase(mixed)},
		{"a key that starts and ends with \" (it can only be sent quoted), and the key inside the quotes", `"` + inner + `"`, inner},
		{"digits only, and the same digits after a 0 (two keys, though they spell one number)", digits, "0" + digits},
	}
}

// checkKeyForms catches a server that compares the raw header value (the
// quoted and bare spellings become two keys, and the retry executes), one
// that unquotes by hand (an escaped \" or \\ stays escaped), one that
// refuses a legal key (one character, 255, any punctuation), and one that
// folds, trims or truncates keys, or stores them as the numbers they
// spell, so that two clients' keys become one and the second client's
// operation never runs. Each key of a pair is retried once its sibling is
// in the table too (the first before the sibling is sent, the sibling
// after): a server that reads a key's row back loosely (with LIKE, which
// SQLite compares without regard to letter case, and where _ and % match
// other characters) finds the other key's row, and answers the retry with
// another operation's answer, or refuses it as another request.
func checkKeyForms(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	ids := map[string]bool{}
	pairs := keyPairs(t)
	t.Rand().Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	for _, p := range pairs {
		// send sends a new operation under key, in a form drawn at random
		// (quoted only, for a key that starts with a quote); it must execute.
		var story []string
		send := func(key string) (Request, Response, error) {
			amount, op := t.Amount(1_000, 100_000), t.Op()
			req := Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
			req.Quote = strings.HasPrefix(key, `"`) || t.Rand().IntN(2) == 0
			r := t.Do(req)
			story = append(story, fmt.Sprintf("%s  (a %d-character key)  →  %s", req.String(), len(key), r.Short()))
			record := func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }
			return req, r, t.mustExecute(p.what+":\n"+strings.Join(story, "\n"), []Response{r}, op, books, record, ids)
		}
		// retry sends req again, the key in the other form where it has
		// one: it must be answered as the retry of its own operation, whose
		// first answer was orig, whatever other keys are in the table.
		retry := func(req Request, orig Response) error {
			again := "the same request, the key in the other form: "
			if strings.HasPrefix(req.Key, `"`) {
				again = "the same request again, quoted as before (a key that starts with \" has no bare form): "
			} else {
				req.Quote = !req.Quote
			}
			const expected = "this request's own answer, under its own key: 409 duplicate-request (stages 1–3) or its stored 201 (stage 4 on)"
			r := t.Do(req)
			sending := again + req.String()
			asked := p.what + ":\n" + strings.Join(append(story, sending), "\n")
			story = append(story, sending+"  →  "+r.Short())
			// Told to wait, the client comes back, as the retry policy
			// says; what it is told in the end is what it knows.
			r, waited := t.untilAnswered(req, r, asked, expected)
			story[len(story)-1] += waited
			sent := p.what + ":\n" + strings.Join(story, "\n")
			if err := t.Reconcile(sent, r.Short(), books); err != nil {
				return err
			}
			switch {
			case r.Is(http.StatusConflict, pDuplicate) || sameOp(orig, r):
				return nil
			case r.Is(http.StatusCreated, ""):
				return t.Harmful(judging.WrongAnswer, sent, r.String(), expected+"; this 201 is another key's operation")
			case r.Is(http.StatusUnprocessableEntity, pKeyReused):
				return t.Harmful(judging.NoUsableAnswer, sent, r.String(), expected+"; refused as another request, the client can never learn that its money moved")
			case toldToComeBack(r):
				return t.stillInProgress(req.Key, sent, r, expected)
			}
			return t.Fail(sent, r.String(), expected)
		}
		first, orig, err := send(p.key)
		if err != nil {
			return err
		}
		if err := retry(first, orig); err != nil {
			return err
		}
		// The sibling is in the table beside the first key now: its own
		// retry must find its own row.
		sibling, orig, err := send(p.sibling)
		if err != nil {
			return err
		}
		if err := retry(sibling, orig); err != nil {
			return err
		}
	}
	return nil
}

// checkDistinctKeysSameBody catches a server that deduplicates on the body
// (a hash of the request, or the op) instead of the key: the second of two
// identical payments is refused or answered with the first. The payments
// come one after the other, at once behind a barrier, and a few
// milliseconds apart.
func checkDistinctKeysSameBody(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	amount, op := t.Amount(1_000, 200_000), t.Op()
	body := TransferBody(a.Accounts[0], b.Accounts[0], amount, op)
	ids := map[string]bool{}
	record := func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }
	var story []string
	for range 2 {
		req := Transfer(a, t.Key(), body)
		r := t.Do(req)
		story = append(story, req.String()+"  →  "+r.Short())
		if err := t.mustExecute(strings.Join(story, "\n"), []Response{r}, op, books, record, ids); err != nil {
			return err
		}
	}
	batches := []struct {
		how  string
		send func([]Request) []Response
	}{
		{"at once", func(reqs []Request) []Response {
			return t.Simultaneously(len(reqs), func(i int) Request { return reqs[i] })
		}},
		{"a few ms apart", func(reqs []Request) []Response {
			return t.Staggered(t.gaps(len(reqs), 2*time.Millisecond), func(i int) Request { return reqs[i] })
		}},
	}
	for _, batch := range batches {
		reqs := make([]Request, 2+t.Rand().IntN(5))
		for i := range reqs {
			reqs[i] = Transfer(a, t.Key(), body)
		}
		rs := batch.send(reqs)
		for i, r := range rs {
			story = append(story, batch.how+": "+reqs[i].String()+"  →  "+r.Short())
		}
		sent := strings.Join(story, "\n")
		if err := t.mustExecute(sent, rs, op, books, record, ids); err != nil {
			return err
		}
	}
	return nil
}

// checkSameKeyEditedBody catches a claim on more than the key: a UNIQUE
// constraint over the key and the body (or a hash of it) takes the same
// key with the amount edited for another operation, and executes it
// beside the first. The books show the op paid twice.
func checkSameKeyEditedBody(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	req, op, amount := s.Payment(t)
	first := t.Do(req)
	if !first.Is(http.StatusCreated, "") {
		return t.Fail(req.String(), first.String(), "201 Created: the first request with a fresh key executes")
	}
	books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	edited := Transfer(a, req.Key, TransferBody(a.Accounts[0], b.Accounts[0], amount+t.Amount(1, 9_999), op))
	r := t.Do(edited)
	sent := req.String() + "  →  " + first.Short() + "\nthen the same key with the amount edited: " + edited.String()
	if err := t.Reconcile(sent, r.Short(), books); err != nil {
		return err
	}
	if r.Is(http.StatusConflict, pDuplicate) || r.Is(http.StatusUnprocessableEntity, pKeyReused) {
		return nil
	}
	return t.Fail(sent, r.String(),
		"409 "+pDuplicate+" (stage 1), or from stage 2 422 "+pKeyReused+": the key names the first request, whatever the body, and nothing executes")
}

// why500 is why a key store's failure answered with a 5xx other than 503
// matters when nothing executed: the money is right, and the client
// cannot know it.
const why500 = "a 500 tells the client only that the server broke, not whether its money moved: a client that cannot tell gives up on a payment it could safely have retried; 503 unavailable says that nothing ran and that the same key may be sent again"

// checkFailClosed catches a server that fails open: when the key store
// errors it executes anyway (unprotected), or answers 500 instead of 503,
// or leaves the key in a state that a retry executes twice. The naive
// server fails it: it has no key store to fail.
func checkFailClosed(t *T, s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	lease, err := t.lease()
	if err != nil {
		return err
	}

	// The store is down for the whole request: 503, and nothing moves.
	for _, kind := range []string{"transfer", "deposit"} {
		req, op, amount := s.Payment(t)
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
		untouched := t.storeUntouched(1000, "what the server does when its key store fails")
		if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
			return err
		}
		sent := req.String() + "\n(armed: store-unavailable, every statement on idempotency_keys fails)"
		// What changed is told against the answer the request was due.
		changed := expecting("503 "+pUnavailable, t.unchanged(before, sent, r))
		if untouched != nil {
			return t.keysElsewhere(untouched, changed, req, op)
		}
		// A server that executed without a claim (and said so) differs
		// from the contract; its retry, which follows, must still not
		// execute a second time.
		if err := t.note(changed); err != nil {
			return err
		}
		failClosed := "503 " + pUnavailable + ": without a claim the request must not execute, and its client must hear that it may retry"
		switch {
		case r.Is(http.StatusConflict, ""):
			return t.toldDuplicate(sent, r.String(), failClosed)
		case r.Err == nil && r.Status >= 500 && r.Status != http.StatusServiceUnavailable:
			if err := t.note(because(t.Fail(sent, r.String(), failClosed), why500)); err != nil {
				return err
			}
		case !r.Is(http.StatusServiceUnavailable, pUnavailable) && !r.Is(http.StatusCreated, ""):
			t.Differ(sent, r.String(), failClosed)
		}
		const executes = "201 Created: the retry after the outage executes"
		final, story, err := t.retryUntilDone(req, lease, sent+"  →  "+r.Short()+"\nthen the store is back", executes)
		if err != nil {
			return err
		}
		story = sent + "  →  " + r.Short() + "\nthen the store is back" + story
		if !final.Is(http.StatusCreated, "") {
			return t.Fail(story, final.String(), executes)
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
		req, op, amount := s.Payment(t)
		if err := t.Arm(labctl.StoreUnavailable, failures); err != nil {
			return err
		}
		r := t.Do(req)
		if err := t.Arm(labctl.StoreUnavailable, 0); err != nil {
			return err
		}
		sent := fmt.Sprintf("%s\n(armed: store-unavailable for the next %d statements on idempotency_keys)  →  %s", req.String(), failures, r.Short())
		if !r.Is(http.StatusCreated, "") && !r.Is(http.StatusServiceUnavailable, pUnavailable) {
			err := t.Fail(sent, r.String(), "201 Created if the request got through, or 503 "+pUnavailable)
			if r.Err == nil && r.Status >= 500 && r.Status != http.StatusServiceUnavailable {
				err = because(err, why500)
			}
			return err
		}
		final, story, err := t.retryUntilDone(req, lease, sent+"\nthen the store is back", "201 Created")
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
