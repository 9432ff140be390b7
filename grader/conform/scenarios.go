package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"idemlab/grader/dayplan"
)

// scenario is one attack: what it claims, what it cites, what it needs
// and how it runs.
type scenario struct {
	ID    string
	Claim string
	// Section and Level cite the draft; empty for a money scenario of the
	// course's own.
	Section, Level string
	// Principals is how many principals it needs; Edit whether it needs
	// the profile's edit member.
	Principals int
	Edit       bool
	// Expiry is whether it needs the profile's published expiry, Restart
	// its restart command.
	Expiry, Restart bool
	// Sends is the most requests it sends to the operation: each one
	// could create something on a server that ignores keys.
	Sends int
	// Requires and Keeps split the Claim of a scenario that cites the
	// draft: what the draft requires (the contract) and what the money
	// must show. The report pairs each verdict with its own half, so
	// that neither is said to hold on the other's evidence.
	Requires, Keeps string
	// Also is a second requirement of the draft its answers are judged
	// by, with its own citation: its verdict is left for Run to give.
	Also *Requirement
	// Run runs it and fills in res.
	Run func(ctx context.Context, r *runner, res *Result) error
}

// sends is the most requests s sends to the operation under profile p:
// its Sends, and one more for each edit past the first of a scenario
// that resubmits each.
func (s scenario) sends(p *Profile) int {
	if s.Edit && len(p.Edit) > 1 {
		return s.Sends + len(p.Edit) - 1
	}
	return s.Sends
}

// result is s's result before it runs: what it claims and cites.
func (s scenario) result() Result {
	res := Result{ID: s.ID, Claim: s.Claim, Section: s.Section, Level: s.Level, ClaimMoney: s.Keeps, ClaimContract: s.Requires}
	if s.Keeps == "" {
		res.ClaimMoney = s.Claim
	}
	if s.Also != nil {
		also := *s.Also
		res.Also = &also
	}
	return res
}

// replayed says what a retry answered with the original's result keeps
// of it (see replayHeaders).
var replayed = "the same status and body, with the same " + andList(replayHeaders)

// copies is how many simultaneous duplicates the concurrent scenario
// sends.
const copies = 8

// scenarios are every scenario, in the order they run and are reported.
var scenarios = []scenario{
	{ID: "key-sf-string", Section: "2.1", Level: "MUST", Principals: 1, Sends: 1,
		Claim:    "a key sent as an RFC 8941 sf-string, the draft's form, is taken and the operation executes once",
		Requires: "a key sent as an RFC 8941 sf-string, the draft's form, is taken (2xx)",
		Keeps:    "a key sent as an sf-string: the operation executes once",
		Run:      keySFString},
	{ID: "missing-key", Section: "2.7", Level: "SHOULD", Principals: 1, Sends: 1,
		Claim:    "a request without Idempotency-Key gets 400, and executes once if it is taken, never if it is refused",
		Requires: "a request without Idempotency-Key gets 400",
		Keeps:    "a request without Idempotency-Key executes once if it is taken, never if it is refused",
		Run:      missingKey},
	{ID: "key-forms", Principals: 1, Sends: 2,
		Claim: "one key sent as an sf-string and again bare (a Token, not the String §2.1 asks for): the bare form is refused, or it is the same key, and the operation executes once",
		Run:   keyForms},
	{ID: "malformed-key", Section: "2.7", Level: "SHOULD", Principals: 1, Sends: 2*len(malformedKeys) + 1,
		Claim:    "a key field that is not one RFC 8941 String (" + malformedNames() + ") gets 4xx, twice, and creates nothing; if taken anyway, it executes once, never again on its retry, and another operation keyed empty is never told the first one's result",
		Requires: "a key field that is not one RFC 8941 String (" + malformedNames() + ") gets 4xx, twice",
		Keeps:    "a key field that is not one RFC 8941 String creates nothing when refused, and if taken executes once, never again on its retry; another operation keyed empty is never told the first one's result",
		Run:      malformedKey},
	{ID: "long-keys", Principals: 1, Sends: 1 + retries,
		Claim: fmt.Sprintf("two keys of %d characters that differ only in their last: both refused, or two operations, each executed once with its own answer (a server that cuts keys short answers one with the other's result)", longKey),
		Run:   longKeys},
	{ID: "key-case", Principals: 1, Sends: 1 + retries,
		Claim: "two keys that differ only in the case of one letter: two operations, each executed once with its own answer, or the one with a capital refused (a server that folds case, as a case-insensitive key column does, answers the other with its result)",
		Run:   keyCase},
	{ID: "retry-replayed", Section: "2.6", Level: "SHOULD", Principals: 1, Sends: 4,
		Claim:    "retries after the original completed, one at once and one after another operation, get its result, and the operation executes once",
		Requires: "retries after the original completed get its result",
		Keeps:    "retries after the original completed: the operation executes once, and a retry after another operation is told the original's result, not one recomputed",
		Run:      retryReplayed},
	{ID: "key-reused-other-payload", Section: "2.7", Level: "SHOULD", Principals: 1, Edit: true, Sends: 2 + retries,
		Claim:    "the same key with an edited payload gets 422, and the edit never executes; the original sent again after it still gets its result and executes once",
		Requires: "the same key with an edited payload gets 422",
		Keeps:    "the same key with an edited payload: the edit never executes, and is never answered 2xx; the original sent again after it executes once and is answered 2xx",
		Run:      keyReused},
	{ID: "concurrent-duplicates", Section: "2.6", Level: "MUST", Principals: 1, Sends: copies,
		Claim:    fmt.Sprintf("%d copies sent at once: a copy that meets the original still running gets a resource conflict error (§2.6), 409 (§2.7), and the operation executes once", copies),
		Requires: fmt.Sprintf("%d copies sent at once: a copy that meets the original still running gets a resource conflict error (409 Conflict or 423 Locked)", copies),
		Keeps:    fmt.Sprintf("%d copies sent at once: the operation executes once", copies),
		Also: &Requirement{Section: "2.7", Level: "SHOULD",
			Claim: fmt.Sprintf("%d copies sent at once: a copy that meets the original still running gets 409", copies)},
		Run: concurrentDuplicates},
	{ID: "lost-response", Principals: 1, Sends: 2 * (1 + retries),
		Claim:    "a response lost after the server processed the request (the connection reset; or the answer too late, the client gave up waiting): the retry gets the result, and the operation executes once",
		Requires: "each retry's 2xx carries the operation's answer, JSON (or 204 No Content), the status and body the client lost: the client learns its result, not only that something succeeded",
		Run:      lostResponse},
	{ID: "retry-after-restart", Principals: 1, Restart: true, Sends: 1 + retries,
		Claim: "a retry after the API restarted (the profile's restart command) gets the result, and the operation executes once: keys kept only in a process's memory are lost with it",
		Run:   retryAfterRestart},
	{ID: "two-principals-one-key", Principals: 2, Sends: 2 * retries,
		Claim: "two principals who send the same key each get their own operation executed, never the other's answer",
		Run:   twoPrincipals},
	{ID: "two-principals-same-request", Principals: 2, Sends: 4 * retries,
		Claim: "the second principal sends the first one's exact request under the same key, at once and one after the other: neither is ever handed the other's result, and each operation answered 2xx executes once",
		Run:   twoPrincipalsSameRequest},
	{ID: "expiry-as-published", Section: "2.3", Level: "SHOULD", Principals: 1, Expiry: true, Sends: 2,
		Claim:    "a key is kept as the API publishes: an expiry the API tells agrees with the period it publishes (§2.3); reused well inside the period, the key is still honoured, its retry answered with the original's result (§2.6), and its operation executes once",
		Requires: "the API publishes how long it keeps a key (the profile's expiry, from its documentation), and an expiry it tells agrees with that period",
		Keeps:    "a key reused well inside the published period: the operation executes once",
		Also: &Requirement{Section: "2.6", Level: "SHOULD",
			Claim: "a key reused well inside the published period is still honoured: the retry gets the original's result"},
		Run: expiryAsPublished},
}

func retryReplayed(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	// Another operation between the two retries moves what the API
	// holds: an API that renders a replay again from its books, rather
	// than giving the answer it stored, answers the retry made at once
	// as the original and the one after otherwise.
	other, err := r.newOp(0)
	if err != nil {
		return err
	}
	key := sf(r.key())
	first := r.send(ctx, r.client, o, key)
	var got []string
	var answers []answer
	var between answer
	differ, hidden := map[string][]string{}, map[string][]string{}
	same := first.ok()
	for i, nth := range []string{"the first retry", "the second retry"} {
		if i == 1 {
			between = r.send(ctx, r.client, other, sf(r.key()))
		}
		a := r.send(ctx, r.client, o, key)
		answers = append(answers, a)
		got = append(got, a.String())
		same = same && a.replays(first)
		if d := a.headersDiffer(first, "the original's"); a.same(first) && d != "" {
			differ[d] = append(differ[d], nth)
		}
		if d := a.hiddenDiff(first, "the original's"); d != "" {
			hidden[d] = append(hidden[d], nth)
		}
	}
	res.Sent = describe(r, key, 3) + ", one after the other, and another operation under a fresh key before the last"
	res.Got = "original " + first.String() + "; retries " + strings.Join(got, "; ") + butHeaders(differ, "both retries") + butBodies(hidden, "both retries") + "; the operation between " + statuses(between)
	contract(res, same, "each retry answered as the original was: "+replayed)
	if err := b.judge(ctx, res, expect{o, 1, "one operation"}, expect{other, due(between), "the operation between"}); err != nil {
		return err
	}
	// What each retry says is compared, not its bytes: an API that renders
	// every replay again, from its books and with an encoder of its own,
	// answers even the retry made at once in other bytes than the
	// original, and only the retry after another operation with another
	// result.
	if res.Money != MoneyHarmed && answers[0].says(first) && first.ok() && between.ok() && !answers[1].says(first) && answers[1].status == first.status {
		res.Money = MoneyHarmed
		res.Saw = "the retry made at once was answered as the original, the retry after another operation otherwise: the API renders a replay again from what it holds now, and its client is told a recomputed result, not the operation's; store the answer given and replay it; " + res.Saw
	}
	return nil
}

func keyReused(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	// Each member the profile names is changed on a resubmission of its
	// own: an API whose fingerprint leaves one out answers that one as
	// the original, and a change to several at once would hide which.
	edits := make([]op, len(r.Profile.Edit))
	for i, member := range r.Profile.Edit {
		if edits[i], err = r.Profile.edited(o, member); err != nil {
			return err
		}
	}
	key := sf(r.key())
	first := r.send(ctx, r.client, o, key)
	sent := []string{describe(r, key, 1)}
	got := []string{"original " + first.String()}
	want := []expect{{o, 1, "the original"}}
	refused := true
	// told are the edits answered 2xx; replayedTo those answered with
	// the original's very answer, which shows, witness or not, that
	// their clients were told another operation's result.
	var told, replayedTo []string
	for i, e := range edits {
		a := r.send(ctx, r.client, e, key)
		what := r.Profile.Edit[i] + " edited"
		if len(edits) == 1 {
			what = "the edit"
		}
		sent = append(sent, "with "+r.Profile.Edit[i]+" edited")
		got = append(got, r.Profile.Edit[i]+" edited "+a.String())
		want = append(want, expect{e, 0, what})
		refused = refused && a.err == nil && a.status == http.StatusUnprocessableEntity
		if a.ok() {
			told = append(told, what)
		}
		if r.handedOver(first, a) {
			replayedTo = append(replayedTo, what)
		}
	}
	// The original sent again after the edits: a refused edit must leave
	// the key as it was. An API that forgets a key on every error it
	// answers, or takes the edit's payload for the key's, executes the
	// original again or refuses it, and only this retry shows it.
	// A 409 is "still running": it is retried as a client would, for
	// one 409 cannot tell a key held for good from one about to answer.
	again := r.untilFinal(ctx, o, key)
	res.Sent = sent[0] + ", then the same key " + strings.Join(sent[1:], ", then ") + ", then the original again"
	res.Got = strings.Join(got, "; ") + "; the original again " + again.String()
	expected := "422 for the edited payload"
	if len(edits) > 1 {
		expected = "422 for each edited payload"
	}
	contract(res, refused, expected)
	if err := b.judge(ctx, res, want...); err != nil {
		return err
	}
	switch {
	case first.ok() && again.err == nil && again.status == http.StatusConflict:
		res.Money = MoneyHarmed
		res.Saw = fmt.Sprintf("the original sent again after the edit was told 409 on each of %d tries, after it had answered 2xx: its client is never told its result (whether the edit holds the key or every retry is told 409, lost-response and retry-replayed tell); ", retries) + res.Saw
	case first.ok() && !again.ok():
		res.Money = MoneyHarmed
		res.Saw = "the original sent again after the edit was not answered 2xx: the edit took its key, and its client is never told its result; " + res.Saw
	case refused && res.Money == MoneyHarmed && first.ok() && !again.same(first):
		res.Saw = "the original sent again after the edit was answered anew, not with its result: the refused edit made the API forget the key; " + res.Saw
	}
	if b == nil && len(replayedTo) > 0 {
		res.Money = MoneyHarmed
		was := " was answered with the original's result (the same status and body): its client was told another operation's result"
		if len(replayedTo) > 1 {
			was = " were answered with the original's result (the same status and body): their clients were told another operation's result"
		}
		res.Saw = andList(replayedTo) + was + "; " + res.Saw
	}
	if b != nil && len(told) > 0 && res.Money == MoneyClean {
		res.Money = MoneyHarmed
		was := " was answered 2xx but never executed: its client was told another operation's result"
		if len(told) > 1 {
			was = " were answered 2xx but never executed: their clients were told another operation's result"
		}
		res.Saw += "; " + andList(told) + was
	}
	return nil
}

func concurrentDuplicates(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	key := sf(r.key())
	// Each copy goes through a connection of its own, opened before the
	// barrier: copies that each had to dial first would reach the API as
	// far apart as their dials, wider than the window of a server whose
	// check and write of the key are two steps.
	clients, closeAll := r.warmed(ctx, copies)
	defer closeAll()
	answers := make([]answer, copies)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			answers[i] = r.send(ctx, clients[i], o, key)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	// Every copy is either the original's answer or a resource conflict
	// error (§2.6's MUST), and that error 409 (§2.7's SHOULD). A copy
	// that got no answer at all tells nothing of what the API chose to
	// answer it: it counts for neither.
	var success *answer
	var first string
	differ, hidden := map[string][]string{}, map[string][]string{}
	ok := true
	var form, silent, not409 []string
	// failed are the copies answered with a server error (5xx), by
	// status: "copy 3 503".
	failed := map[int][]string{}
	conflicts, bare := 0, 0
	for i := range answers {
		a := answers[i]
		switch {
		case a.err != nil:
			silent = append(silent, fmt.Sprintf("copy %d", i+1))
		case a.ok() && success == nil:
			success, first = &answers[i], fmt.Sprintf("copy %d's", i+1)
		case a.ok() && !a.replays(*success) && bytes.Equal(a.body, success.body) && a.headersDiffer(*success, "") == "":
			// The first 2xx's body and headers under another 2xx
			// status (a replay in 200): a retry answered after the
			// original, in another form, which retry-replayed judges
			// (a SHOULD); it met no original running, and the MUST is
			// about one that did. A header that names another
			// resource is another answer, and counts here.
			form = append(form, fmt.Sprintf("copy %d", i+1))
		case a.ok() && !a.replays(*success):
			ok = false
			if d := a.headersDiffer(*success, first); a.same(*success) && d != "" {
				differ[d] = append(differ[d], fmt.Sprintf("copy %d", i+1))
			}
			if d := a.hiddenDiff(*success, first); d != "" {
				hidden[d] = append(hidden[d], fmt.Sprintf("copy %d", i+1))
			}
		case a.ok():
			// The first 2xx's answer again.
		case a.conflict():
			conflicts++
			if a.status != http.StatusConflict {
				not409 = append(not409, fmt.Sprintf("copy %d", i+1))
			}
			if a.header.Get("Retry-After") == "" {
				bare++
			}
		case a.status >= 500:
			// A server error, 503 Service Unavailable the likeliest: it
			// says the server could not take the request (RFC 9110
			// §15.6), not that the resource is busy with the original,
			// and a client told it cannot know whether its copy ran. It
			// is no resource conflict error, whoever sent it (the key's
			// code, or a limiter in front of it): its client meets it
			// the same way. The witness says whether it executed.
			ok = false
			failed[a.status] = append(failed[a.status], fmt.Sprintf("copy %d", i+1))
		default:
			ok = false
		}
	}
	res.Sent = describe(r, key, copies) + ", released together, each over a connection already open"
	res.Got = tally(answers) + butHeaders(differ, "") + butBodies(hidden, "")
	// Without a 2xx, the original's answer may be among those never
	// seen; with every copy unanswered, nothing was.
	answered := success != nil || len(silent) > 0
	contract(res, ok && answered, "one 2xx; every other copy a resource conflict error, 409 or 423 (the original still running), or the same answer as the 2xx: "+replayed)
	res.Also.Contract = ContractUnmet
	if ok && answered && len(not409) == 0 {
		res.Also.Contract = ContractMet
	}
	res.Also.Expected = "every copy refused while the original ran answered 409, as §2.7 asks, not another conflict error"
	note := func(n string) {
		if res.Note != "" {
			res.Note += "; "
		}
		res.Note += n
	}
	switch {
	case len(silent) == copies:
		res.Contract, res.Also.Contract = ContractUnobserved, ContractUnobserved
		note(fmt.Sprintf("no copy got an answer (%s): what the API chose to answer them could not be observed", res.Got))
	case len(silent) > 0:
		note(fmt.Sprintf("%s got no answer at all (a transport error or the timeout): what the API chose for them could not be observed, and neither requirement is judged on them", andList(silent)))
	}
	if res.Contract == ContractMet && conflicts == 0 {
		// Met, but only as retries are: the MUST is about a copy that
		// meets the original still running, and none was seen to. A
		// server without a lock passes the same way when its operation
		// is over before the next copy reads the key.
		note(fmt.Sprintf("no copy was seen while the original ran: all %d answered as one (%s), none a conflict error; the race may not have been reached, and a server without a lock answers so too when its operation is quicker than the copies' spread", copies-len(silent), res.Got))
	}
	if res.Contract == ContractMet && len(form) > 0 {
		note(fmt.Sprintf("%s answered another 2xx status with the first 2xx's body and headers (%s's): a retry's answer in another form, which retry-replayed judges (§2.6, a SHOULD), not this MUST", andList(form), strings.TrimSuffix(first, "'s")))
	}
	if res.Contract == ContractMet && bare > 0 {
		// The draft asks for the error only; a client that meets it
		// still has to guess when the original will be done.
		note(fmt.Sprintf("%d of the %d conflict errors carried no Retry-After: a client told the original is still running has to guess when to send again", bare, conflicts))
	}
	if res.Contract == ContractMet && len(not409) > 0 {
		note(fmt.Sprintf("%s got a conflict error other than 409: §2.6's MUST is met, §2.7's SHOULD (409) is not", andList(not409)))
	}
	if err := b.judge(ctx, res, expect{o, 1, "one operation"}); err != nil {
		return err
	}
	if len(failed) > 0 {
		note(serverErrors(failed, res.Money))
	}
	return nil
}

// serverErrors says, for the note of concurrent-duplicates, which copies
// got a server error and what that told their clients, with whether they
// executed as money (the scenario's money verdict) shows it.
func serverErrors(failed map[int][]string, money string) string {
	var said []string
	for _, status := range slices.Sorted(maps.Keys(failed)) {
		who := andList(failed[status])
		if len(failed[status]) > 1 {
			who = "copies " + strings.ReplaceAll(who, "copy ", "")
		}
		said = append(said, fmt.Sprintf("%s got %d %s", who, status, http.StatusText(status)))
	}
	ran := "whether they executed, the witness tells (money above)"
	switch money {
	case MoneyClean:
		ran = "the witness shows the operation executed once: they did not execute, and their clients, told the server failed, cannot know it and will send again"
	case MoneyUnobserved:
		ran = "whether they executed could not be observed"
	}
	return andList(said) + ": a server error, which says the server could not take the request, not that the original is still running, so it is no resource conflict error (§2.6) and no 409 (§2.7), whoever answered it (the API's key code, or a limiter or proxy in front of it); " + ran
}

func lostResponse(ctx context.Context, r *runner, res *Result) error {
	b, err := r.open(ctx)
	if err != nil {
		return err
	}
	var want []expect
	var sent, got, unreadable []string
	ok := true
	for _, p := range []dayplan.Point{dayplan.ResetAfterProcessing, dayplan.ResponseWithheld} {
		o, err := r.newOp(0)
		if err != nil {
			return err
		}
		key := sf(r.key())
		lost, held := r.lose(ctx, o, key, p)
		final := r.retryLost(ctx, o, key)
		ok = ok && final.ok()
		switch {
		case final.ok() && !final.readable():
			unreadable = append(unreadable, fmt.Sprintf("%s: the retry %s", p, final.String()))
		case final.ok() && held.ok() && !final.same(held):
			// A 2xx the client can read, but not the answer it lost: a
			// "duplicate request" acknowledgement tells it that something
			// succeeded, not what.
			unreadable = append(unreadable, fmt.Sprintf("%s: the retry %s, where the answer lost was %s", p, final.String(), held.String()))
		}
		sent = append(sent, fmt.Sprintf("%s (%s), then the same again until an answer", describe(r, key, 1), p))
		got = append(got, fmt.Sprintf("%s: %s (the answer withheld: %s); the retry %s", p, lost.String(), held.String(), final.String()))
		want = append(want, expect{o, 1, string(p)})
	}
	res.Sent, res.Got = strings.Join(sent, "; "), strings.Join(got, "; ")
	res.Expected = "each retry answered 2xx with the operation's answer: the client learns the result it lost"
	if err := b.judge(ctx, res, want...); err != nil {
		return err
	}
	if !ok {
		// Seen without a witness: the client's own answers say it.
		res.Money = MoneyHarmed
		res.Saw = "a client whose response was lost never learned its result; " + res.Saw
	}
	if len(unreadable) > 0 {
		// A 2xx that carries no answer tells the client that something
		// succeeded, not what: its result is still unknown to it.
		res.Contract = ContractUnmet
		res.Saw = "a 2xx without the operation's answer (its body empty or not JSON, or not the answer the client lost) leaves the client without its result (" +
			strings.Join(unreadable, "; ") + "); " + res.Saw
	}
	return nil
}

func twoPrincipals(ctx context.Context, r *runner, res *Result) error {
	b, err := r.open(ctx)
	if err != nil {
		return err
	}
	key := sf(r.key())
	var ops [2]op
	var answers [2]answer
	for i := range ops {
		if ops[i], err = r.newOp(i); err != nil {
			return err
		}
		// Each until an answer: a 409 tells its client to come back.
		answers[i] = r.untilFinal(ctx, ops[i], key)
	}
	res.Sent = fmt.Sprintf("%s %s as %s, then the same key as %s with a payload of its own", r.Profile.Operation.Method, r.Profile.Operation.Path,
		r.Profile.Principals[0].Name, r.Profile.Principals[1].Name)
	res.Got = fmt.Sprintf("%s: %s; %s: %s", r.Profile.Principals[0].Name, answers[0], r.Profile.Principals[1].Name, answers[1])
	res.Expected = "both answered 2xx, each with its own result"
	if err := b.judge(ctx, res, expect{ops[0], 1, "one operation"}, expect{ops[1], 1, "one operation"}); err != nil {
		return err
	}
	switch {
	case r.handedOver(answers[0], answers[1]):
		res.Money = MoneyHarmed
		res.Saw = "the second principal was told the first one's result; " + res.Saw
	case carries(answers[1], ops[0], ops[1]):
		// Not the same bytes, but the first one's operation: an API that
		// looks a key up by principal and stores its answer by key alone
		// renders the first one's for the second, with the second's name.
		res.Money = MoneyHarmed
		res.Saw = fmt.Sprintf("the second principal was told the first one's operation: its answer carries %q, the first one's {{unique}}, which it never sent; ", ops[0].unique) + res.Saw
	case !answers[1].ok():
		res.Money = MoneyHarmed
		res.Saw = "the second principal was refused for a key only the first had used; " + res.Saw
	}
	return nil
}

func twoPrincipalsSameRequest(ctx context.Context, r *runner, res *Result) error {
	names := [2]string{r.Profile.Principals[0].Name, r.Profile.Principals[1].Name}
	var got, saw, leaks []string
	harmed, blind := false, ""
	for _, when := range []string{"at once", "one after the other"} {
		b, err := r.open(ctx)
		if err != nil {
			return err
		}
		o, err := r.newOp(0)
		if err != nil {
			return err
		}
		theirs := o
		theirs.principal = 1
		key := sf(r.key())
		var answers [2]answer
		if when == "at once" {
			var done sync.WaitGroup
			start := make(chan struct{})
			for i, x := range []op{o, theirs} {
				done.Go(func() {
					<-start
					answers[i] = r.untilFinal(ctx, x, key)
				})
			}
			close(start)
			done.Wait()
		} else {
			answers[0] = r.untilFinal(ctx, o, key)
			answers[1] = r.untilFinal(ctx, theirs, key)
		}
		got = append(got, fmt.Sprintf("%s: %s %s; %s %s", when, names[0], answers[0], names[1], answers[1]))
		if r.handedOver(answers[0], answers[1]) {
			leak, err := whoseResult(ctx, b, names, o, theirs)
			if err != nil {
				return err
			}
			leaks = append(leaks, when+": "+leak)
		} else if b != nil {
			// Answered otherwise, but perhaps with the other's operation
			// rendered for each: an API that looks a key up by principal
			// and stores its answer by key alone gives the first one's
			// payment, id and all, with the second's name on it.
			who, value, err := b.handedItem(ctx, [2]op{o, theirs}, answers)
			if err != nil {
				return err
			}
			if who >= 0 {
				leaks = append(leaks, fmt.Sprintf("%s: %s was handed %s's operation, its answer carrying the member %s, which only %s's new item in the witness holds", when, names[who], names[1-who], value, names[1-who]))
			}
		}
		var round Result
		err = b.judge(ctx, &round,
			expect{o, due(answers[0]), names[0] + "'s operation"},
			expect{theirs, due(answers[1]), names[1] + "'s operation"})
		if err != nil {
			return err
		}
		harmed = harmed || round.Money == MoneyHarmed
		if round.Money == MoneyUnobserved {
			blind = round.Saw
		}
		saw = append(saw, when+": "+round.Saw)
	}
	res.Sent = fmt.Sprintf("%s %s as %s and, with the same key and body, as %s: at once, then one after the other (each until an answer)",
		r.Profile.Operation.Method, r.Profile.Operation.Path, names[0], names[1])
	res.Got = strings.Join(got, "; ")
	res.Expected = "each refused, or answered with a result of its own, never the other's; each operation answered 2xx executes once"
	res.Saw = strings.Join(saw, "; ")
	switch {
	case harmed:
		res.Money = MoneyHarmed
	case blind != "":
		res.Money = MoneyUnobserved
		if r.Profile.Witness == nil {
			// Each round says the same: no witness.
			res.Saw = blind
		}
	default:
		res.Money = MoneyClean
	}
	if len(leaks) > 0 {
		res.Money = MoneyHarmed
		res.Saw = "one principal shown another's operation (" + strings.Join(leaks, "; ") + "); " + res.Saw
	}
	return nil
}

// carries reports whether a, a 2xx answer to mine, carries theirs: the
// {{unique}} value theirs sent and mine did not. An answer that repeats
// what its request sent, a payee or a memo, names the operation it is
// about by it; a body without {{unique}} tells nothing.
func carries(a answer, theirs, mine op) bool {
	u := []byte(theirs.unique)
	return a.ok() && len(u) > 0 && bytes.Contains(theirs.body, u) && !bytes.Contains(mine.body, u) && bytes.Contains(a.body, u)
}

// handedItem says which of two principals, each answered 2xx for one
// request under one key, was answered with the other's operation: its
// answer holds a member (its name and value, a string or a number) of an
// item new in the other's witness list that is neither in its own new
// items nor, by value, in what it sent, such as the other's payment id.
// It returns -1 when neither was, or when the witness holds no list to
// read.
func (b *books) handedItem(ctx context.Context, ops [2]op, answers [2]answer) (int, string, error) {
	var fresh [2]map[string]bool
	for i := range fresh {
		after, err := b.r.witness(ctx, i)
		if err != nil {
			return -1, "", err
		}
		if after.items == nil {
			return -1, "", nil
		}
		old := map[string]int{}
		for _, item := range b.before[i].items {
			old[item]++
		}
		fresh[i] = map[string]bool{}
		for _, item := range after.items {
			if old[item] > 0 {
				old[item]--
				continue
			}
			for _, m := range members([]byte(item)) {
				fresh[i][m.String()] = true
			}
		}
	}
	for mine := range 2 {
		theirs := 1 - mine
		if !answers[mine].ok() {
			continue
		}
		for _, m := range members(answers[mine].body) {
			if fresh[theirs][m.String()] && !fresh[mine][m.String()] && !bytes.Contains(ops[mine].body, []byte(m.value)) {
				return mine, m.String(), nil
			}
		}
	}
	return -1, "", nil
}

// member is a string or number of a JSON document, as JSON, and the name
// of the member that holds it (of the array that does, for an item).
type member struct{ name, value string }

func (m member) String() string { return strconv.Quote(m.name) + ": " + m.value }

// members are the strings and numbers of a JSON document, in the order
// they come; none if doc is not JSON.
func members(doc []byte) []member {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	var out []member
	var walk func(string, any)
	walk = func(name string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(k, x[k])
			}
		case []any:
			for _, e := range x {
				walk(name, e)
			}
		case string, float64:
			b, _ := json.Marshal(x)
			out = append(out, member{name, string(b)})
		}
	}
	walk("", v)
	return out
}

// whoseResult says which of two principals, answered alike for one
// request under one key, was handed the other's result, read from whose
// witness moved: the one whose operation never ran was handed the
// other's, and lost its own. Without a witness it cannot be told.
func whoseResult(ctx context.Context, b *books, names [2]string, ops ...op) (string, error) {
	if b == nil {
		return fmt.Sprintf("%s and %s were answered alike, so one was handed the other's result; which, only a witness shows", names[0], names[1]), nil
	}
	var ran [2]bool
	for i := range ran {
		moved, err := b.moved(ctx, i)
		if err != nil {
			return "", err
		}
		ran[i] = moved == b.r.effect(ops[i])
	}
	switch {
	case ran[0] && !ran[1]:
		return fmt.Sprintf("%s was handed %s's result, and %s's own operation never ran", names[1], names[0], names[1]), nil
	case ran[1] && !ran[0]:
		return fmt.Sprintf("%s was handed %s's result, and %s's own operation never ran", names[0], names[1], names[0]), nil
	}
	return fmt.Sprintf("%s and %s were answered alike, so one was handed the other's result", names[0], names[1]), nil
}

func retryAfterRestart(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	key := sf(r.key())
	first := r.send(ctx, r.client, o, key)
	res.Sent = describe(r, key, 1) + ", then the profile's restart, then the same again until an answer"
	if err := r.restart(ctx); err != nil {
		res.Got = "original " + first.String()
		res.Money = MoneyUnobserved
		res.Saw = "could not observe: " + err.Error()
		return nil
	}
	final := r.untilFinal(ctx, o, key)
	res.Got = "original " + first.String() + "; after the restart " + final.String()
	res.Expected = "the retry answered 2xx: the client learns its result; the operation executes once"
	if err := b.judge(ctx, res, expect{o, due(first, final), "one operation"}); err != nil {
		return err
	}
	if first.ok() && !final.ok() {
		res.Money = MoneyHarmed
		res.Saw = "the client never learned the result of its operation after the restart; " + res.Saw
	}
	return nil
}

// expirySlack is how far an expiry the API tells may be from the
// published period after the first answer: clocks differ, and an
// HTTP-date holds whole seconds.
const expirySlack = time.Minute

func expiryAsPublished(ctx context.Context, r *runner, res *Result) error {
	b, o, err := r.begin(ctx)
	if err != nil {
		return err
	}
	e := r.Profile.Expiry
	key := sf(r.key())
	sentAt := time.Now()
	first := r.send(ctx, r.client, o, key)
	retry := r.send(ctx, r.client, o, key)
	res.Sent = describe(r, key, 2) + ", the second at once, well inside the " + e.After + " the API publishes"
	res.Got = "original " + first.String() + "; retry " + retry.String()
	if d := retry.headersDiffer(first, "the original's"); retry.same(first) && d != "" {
		res.Got += butHeaders(map[string][]string{d: {"the retry"}}, "")
	}
	if d := retry.hiddenDiff(first, "the original's"); d != "" {
		res.Got += butBodies(map[string][]string{d: {"the retry"}}, "")
	}
	// §2.3 is only that the policy be published; the key honoured
	// inside it is §2.6's retry answered with the original's result.
	res.Also.Contract = ContractUnmet
	if first.ok() && retry.replays(first) {
		res.Also.Contract = ContractMet
	}
	res.Also.Expected = "the retry answered as the original was (" + replayed + "): the key honoured inside the period"
	ok := true
	expected := "a period published (the profile's expiry.after); the API tells no expiry (the profile names no expiry.header), so nothing it says disagrees"
	if e.Header != "" {
		expected = fmt.Sprintf("%s on both answers, %s after the first (within %s)", e.Header, e.After, expirySlack)
		told, why := expiresAt(first, e.Header, sentAt, e.after)
		res.Got += fmt.Sprintf("; %s: %s", e.Header, told)
		if why != "" || retry.header.Get(e.Header) == "" {
			ok = false
			if why == "" {
				why = "the retry's answer has no " + e.Header
			}
			res.Got += " (" + why + ")"
		}
	}
	contract(res, ok, expected)
	if err := b.judge(ctx, res, expect{o, due(first, retry), "one operation"}); err != nil {
		return err
	}
	res.Saw += "; after " + e.After + ": could not observe whether the key is forgotten (the run does not wait it out)"
	return nil
}

// expiresAt reads the expiry a tells in header, and says why it does not
// agree with a period of after from the first answer ("" if it does).
// The first answer's Date header is when that was, or sentAt without one.
func expiresAt(a answer, header string, sentAt time.Time, after time.Duration) (told, why string) {
	if a.err != nil {
		return "no answer", "no answer to read it from"
	}
	v := a.header.Get(header)
	if v == "" {
		return "absent", "the API does not send it"
	}
	at, err := http.ParseTime(v)
	if err != nil {
		if at, err = time.Parse(time.RFC3339, v); err != nil {
			return v, "neither an HTTP-date nor an RFC 3339 time"
		}
	}
	now := sentAt
	if d, err := http.ParseTime(a.header.Get("Date")); err == nil {
		now = d
	}
	if gap := at.Sub(now); gap < after-expirySlack || gap > after+expirySlack {
		return v, fmt.Sprintf("%s after the first answer, not %s", gap.Round(time.Second), after)
	}
	return v, ""
}

// butHeaders says, for a Got line, which answers came with the status and
// body they were compared with but other headers: differ maps what
// headersDiffer said to the answers it said it of ("; the same status and
// body, but the first retry: Location …"). Answers that all differ alike
// are named once, as all if all is not empty. It is "" for no difference.
func butHeaders(differ map[string][]string, all string) string {
	if len(differ) == 0 {
		return ""
	}
	return "; the same status and body, but " + strings.Join(whoSaid(differ, all), "; ")
}

// butBodies says which answers had a body that prints as the original's
// and is not (see hiddenDiff), each with where: "; both retries: a body
// that prints alike but differs at byte 96: …". all is as for butHeaders.
func butBodies(hidden map[string][]string, all string) string {
	if len(hidden) == 0 {
		return ""
	}
	return "; " + strings.Join(whoSaid(hidden, all), "; ")
}

// whoSaid is each of said's sayings after whom it was said of, "copy 2
// and copy 5: …", with all for every one when it is every one.
func whoSaid(differ map[string][]string, all string) []string {
	var out []string
	for _, d := range slices.Sorted(maps.Keys(differ)) {
		who := andList(differ[d])
		if len(differ) == 1 && all != "" && len(differ[d]) > 1 {
			who = all
		}
		if len(differ[d]) > 1 && strings.HasPrefix(who, "copy ") {
			who = "copies " + strings.ReplaceAll(who, "copy ", "")
		}
		out = append(out, who+": "+d)
	}
	return out
}

// tally sums answers up: each distinct answer once, with how many
// times it came ("201 {…} ×1; 409 {…} ×7").
func tally(answers []answer) string {
	var distinct []answer
	var counts []int
	for _, a := range answers {
		found := false
		for i, d := range distinct {
			if a.same(d) || (a.err != nil && d.err != nil && a.err.Error() == d.err.Error()) {
				counts[i]++
				found = true
				break
			}
		}
		if !found {
			distinct = append(distinct, a)
			counts = append(counts, 1)
		}
	}
	var out []string
	for i, d := range distinct {
		out = append(out, fmt.Sprintf("%s ×%d", d, counts[i]))
	}
	if len(distinct) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d other answers", len(distinct)-3))
	}
	return strings.Join(out, "; ")
}

// begin reads the books and draws one operation for the first principal.
func (r *runner) begin(ctx context.Context) (*books, op, error) {
	b, err := r.open(ctx)
	if err != nil {
		return nil, op{}, err
	}
	o, err := r.newOp(0)
	return b, o, err
}

// describe is the request line of what a scenario sent: n times, with
// key (none if "").
func describe(r *runner, key string, n int) string {
	k := "no Idempotency-Key"
	if key != "" {
		k = "Idempotency-Key: " + key
	}
	times := ""
	if n > 1 {
		times = fmt.Sprintf(" ×%d", n)
	}
	return fmt.Sprintf("%s %s  %s%s", r.Profile.Operation.Method, r.Profile.Operation.Path, k, times)
}
