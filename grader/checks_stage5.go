package grader

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
)

// answerID reads the id of the transfer or deposit an answer names: its
// body's id or, in an answer without one, the last segment of its
// Location (a replay that kept the headers and lost the body still names
// its operation there).
func answerID(r Response) string {
	var v struct {
		ID string `json:"id"`
	}
	json.Unmarshal(r.Body, &v)
	if v.ID == "" && r.Header.Get("Location") != "" {
		return path.Base(r.Header.Get("Location"))
	}
	return v.ID
}

// answerOp is the op an answer's body names in its metadata, "" if none:
// whose operation a 2xx tells of, whatever its status.
func answerOp(r Response) string {
	var v struct {
		Metadata map[string]string `json:"metadata"`
	}
	json.Unmarshal(r.Body, &v)
	return v.Metadata["op"]
}

// checkCustomersScoped catches a scope without the customer: the second
// customer's request is refused (422 key reused, 409 in progress) or
// answered with the first customer's transfer or deposit. For transfers
// and then deposits, two customers send requests as alike as the
// contract allows (the same key, amount and memo; each from the
// customer's own account), at once and then one after the other: at once
// the second usually meets the first one's claim, and one after the other
// its stored answer. Each then retries, the first spelling its
// Authorization header another way and the second with its other token:
// the same customer, and a scope keyed by the header as sent or by the
// token pays again. Then the second customer sends the first customer's
// exact request, key and body: a server that looks up the key and the
// body's fingerprint before it looks at who is asking hands over the first
// customer's stored answer. Every probe runs: a refusal is a contract
// difference, recorded on the way.
//
// Then one customer's key expires while another customer's key of the
// same string is still live, and the first customer's late retry forgets
// its key: a claim that forgets by the key string alone forgets the
// other's too, and that customer's retry pays again. Last, one customer's
// request fails under the key another customer's transfer holds in
// progress: a release that finds the claim by the key string alone gives
// the other's key back too, and its retry pays while its original still
// runs.
func checkCustomersScoped(t *T, s Scenario) error {
	for _, kind := range []string{"transfer", "deposit"} {
		for _, together := range []bool{true, false} {
			if err := t.sameKeyTwoCustomers(s, kind, together); err != nil {
				return err
			}
		}
	}
	if err := t.forgetKeepsTheOtherKey(s); err != nil {
		return err
	}
	return t.releaseKeepsTheOtherClaim(s)
}

// sameKeyTransfers returns two transfers under key, of one amount up to
// most: the first customer's to the second, with the operation ops[0],
// and the second customer's to the first, with ops[1]. The books expect
// both operations.
func (t *T) sameKeyTransfers(s Scenario, key string, most int64) (first, second Request, ops []string, amount int64) {
	a, b := s.A, s.B
	amount, ops = t.Amount(1_000, most), []string{t.Op(), t.Op()}
	for _, op := range ops {
		s.Books.Expect(op)
	}
	return Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, ops[0])),
		Transfer(b, key, TransferBody(b.Accounts[0], a.Accounts[0], amount, ops[1])), ops, amount
}

// forgetKeepsTheOtherKey: the first customer pays under a key; 3h of lab
// time later the second customer pays under the same key string; then
// the retention is cut to 2h in the config, so that the first customer's
// key has expired and is still in the table (a move of the clock would
// purge it) while the second's has all of it left. The first customer's
// late retry is a new request, and may pay again; the second customer's
// retry replays its own stored answer. A claim that forgets an expired
// key by the key string alone deletes the second customer's key with the
// first one's, and that retry pays again.
func (t *T) forgetKeepsTheOtherKey(s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	key := t.Key()
	mine, theirs, ops, amount := t.sameKeyTransfers(s, key, 100_000)
	return t.forgetKeepsTheOther(s, key,
		keyHolder{"customer " + a.ID, mine, func() { books.Transfer(ops[0], a.Accounts[0], b.Accounts[0], amount) }},
		keyHolder{"customer " + b.ID, theirs, func() { books.Transfer(ops[1], b.Accounts[0], a.Accounts[0], amount) }},
		"a key belongs to the customer who sent it")
}

// keyHolder is one request of forgetKeepsTheOther: what the story calls it
// (its customer, or its endpoint), the request, and ran, which tells the
// books it executed.
type keyHolder struct {
	name string
	req  Request
	ran  func()
}

// forgetKeepsTheOther sends mine, then 3h of lab time later theirs, under
// the one key string key but in two scopes; then it cuts the retention to
// 2h in the config, so that mine's key has expired and is still in the
// table (a move of the clock would purge it) while theirs has all of it
// left. Mine's late retry is a new request, and may run again; theirs's
// retry replays its own stored answer. A claim that forgets an expired
// key by less than its whole scope deletes theirs's key with mine's, and
// that retry runs again. rule says why the two keys are two.
func (t *T) forgetKeepsTheOther(s Scenario, key string, mine, theirs keyHolder, rule string) error {
	// The retention must outlast the clients' retry horizon (an hour).
	const age, cut = 3 * time.Hour, 2 * time.Hour
	books := s.Books
	first := t.Do(mine.req)
	if toldRan(first, sentOp(mine.req)) {
		mine.ran()
	}
	sent := fmt.Sprintf("%s: %s  →  %s", mine.name, mine.req.String(), first.Short())
	if err := t.Reconcile(sent, "", books); err != nil {
		return err
	}
	if err := t.createdOrDiffers(first, mine.req, sent, first.String(), "201 Created"); err != nil {
		return err
	}
	if err := t.Advance(age); err != nil {
		return err
	}
	other := t.Do(theirs.req)
	if toldRan(other, sentOp(theirs.req)) {
		theirs.ran()
	}
	sent += fmt.Sprintf("\nthen %v of lab time, and %s under the same key string: %s  →  %s", age, theirs.name, theirs.req.String(), other.Short())
	if err := t.Reconcile(sent, "", books); err != nil {
		return err
	}
	if answerID(other) == answerID(first) {
		return t.Fail(sent, other.String(), "201 Created, its own operation: "+rule)
	}
	if err := t.createdOrDiffers(other, theirs.req, sent, other.String(), "201 Created, its own operation: "+rule); err != nil {
		return err
	}
	if err := t.Configure(labclient.Config{Retention: cut}); err != nil {
		return err
	}
	st, err := t.State()
	if err != nil {
		return err
	}
	if len(judging.KeyRows(st, key)) < 2 {
		return t.CouldNotObserve("two keys of one string in the table, the first one's expired: %s's rows were purged before %s's late retry (a busy machine, or a key table the lab cannot read)", key, mine.name)
	}
	late := t.Do(mine.req)
	if toldRan(late, sentOp(mine.req)) && answerID(late) != answerID(first) {
		// Its key has expired: the same key is a new request, and runs
		// (a 201, or another 2xx naming its op).
		mine.ran()
	}
	// Its key is live: a retry that runs again is a double, whatever it
	// answers.
	again := t.Do(theirs.req)
	sent += fmt.Sprintf("\nthen the retention cut to %v in the config: %s's key expired and is still in the table, %s's has all of it left"+
		"\nthen %s's late retry  →  %s\nthen %s's retry, the same request  →  %s", cut, mine.name, theirs.name, mine.name, late.Short(), theirs.name, again.Short())
	if err := t.Reconcile(sent, theirs.name+"'s retry "+again.Short(), books); err != nil {
		return because(err, theirs.name+"'s retry ran again right after "+mine.name+"'s late retry forgot its own expired key of the same string: a claim that forgets an expired key by less than its scope (customer, method, route and key) takes a live key of that string in another scope with it")
	}
	const live = ": its key is within its retention, whatever became of the expired key of the same string in another scope"
	if !other.Is(http.StatusCreated, "") {
		return t.replayOfAnother2xx(sent, other, again, "the original", theirs.name+"'s own "+firstGiven(other)+live)
	}
	if d := ownAnswerMismatch(other, again, "the original"); d != "" {
		return t.Fail(sent, again.String()+"\n"+d, theirs.name+"'s own stored 201"+live)
	}
	return nil
}

// releaseTheOtherLatency is how long the second customer's transfer
// waits on the core in releaseKeepsTheOtherClaim: long enough for the
// first customer's failing request and the second's retry to come and
// go while it waits, on a busy machine too.
const releaseTheOtherLatency = 600 * time.Millisecond

// releaseKeepsTheOtherClaim: the second customer's transfer waits on the
// core under a key; the first customer's transfer under the same key
// string fails in its business write (releaseKeepsTheOther).
func (t *T) releaseKeepsTheOtherClaim(s Scenario) error {
	a, b, books := s.A, s.B, s.Books
	return t.releaseKeepsTheOther(func() (failing, theirs keyHolder) {
		key := t.Key()
		mine, other, ops, amount := t.sameKeyTransfers(s, key, 500_000)
		return keyHolder{"customer " + a.ID + "'s transfer", mine, func() { books.Transfer(ops[0], a.Accounts[0], b.Accounts[0], amount) }},
			keyHolder{"customer " + b.ID + "'s transfer", other, func() { books.Transfer(ops[1], b.Accounts[0], a.Accounts[0], amount) }}
	}, books)
}

// releaseKeepsTheOther: theirs waits on the core under a key; failing,
// under the same key string in another scope, fails in its business write
// (fail-in-transfer), no money moved, and its key is given back; then
// theirs's client, its answer not come yet, retries. The retry is told to
// wait, or replays the original's answer: theirs executes once. pair
// makes the two requests under a fresh key for each try: if the original
// had answered before the retry was sent (a machine too busy for the
// core's wait), it tries again, releaseTries times at most.
func (t *T) releaseKeepsTheOther(pair func() (failing, theirs keyHolder), books *judging.Books) error {
	var theirs keyHolder
	for range releaseTries {
		var failing keyHolder
		failing, theirs = pair()
		held, err := t.Hold(theirs.req, releaseTheOtherLatency)
		if err != nil {
			return err
		}
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return err
		}
		if err := t.Arm(labctl.FailInTransfer, 1); err != nil {
			return err
		}
		failed := t.Do(failing.req)
		if err := t.Arm(labctl.FailInTransfer, 0); err != nil {
			return err
		}
		early := !held.Done()
		retry := t.Do(theirs.req)
		orig := held.Wait()
		again := t.Do(theirs.req)
		sent := fmt.Sprintf("%s, waiting %v on the core: %s\nwhile it waits, %s under the same key string, its business write failing (armed: fail-in-transfer), so that no money moves and its key is given back: %s\nthen the client of %s, its answer not come, retries; once it has answered, once more",
			theirs.name, releaseTheOtherLatency, theirs.req.String(), failing.name, failing.req.String(), theirs.name)
		got := fmt.Sprintf("%s got %s; the retry of %s got %s, its original %s, its last retry %s", failing.name, failed.Short(), theirs.name, retry.Short(), orig.Short(), again.Short())
		if toldRan(failed, sentOp(failing.req)) {
			failing.ran()
		}
		theirOp := sentOp(theirs.req)
		if toldAnyRan(theirOp, orig, retry, again) {
			theirs.ran()
		}
		if err := t.Reconcile(sent, got, books); err != nil {
			if early && toldOps(theirOp, orig, retry, again) > 1 {
				return because(err, "the retry of "+theirs.name+" executed while its original was still running, right after "+failing.name+" under the same key string failed and gave its key back: the release found the claim to give back by less than the claim's own row (its scope: customer, method, route and key), and gave the claim in the other scope back with it")
			}
			return err
		}
		if early {
			return nil
		}
	}
	return t.CouldNotObserve("a release beside a claim in another scope: in %d tries %s, waiting %v on the core, had answered before its retry was sent (a busy machine)", releaseTries, theirs.name, releaseTheOtherLatency)
}

// sameKeyTwoCustomers is one round of checkCustomersScoped: a transfer or
// a deposit, sent at once (together) or one after the other.
func (t *T) sameKeyTwoCustomers(s Scenario, kind string, together bool) error {
	a, b, books := s.A, s.B, s.Books
	who := []string{"customer " + a.ID, "customer " + b.ID}
	key := t.Key()
	amount := t.Amount(1_000, 500_000)
	ops := []string{t.Op(), t.Op()}
	reqs := []Request{
		Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], amount, ops[0])),
		Transfer(b, key, TransferBody(b.Accounts[0], a.Accounts[0], amount, ops[1])),
	}
	record := []func(){
		func() { books.Transfer(ops[0], a.Accounts[0], b.Accounts[0], amount) },
		func() { books.Transfer(ops[1], b.Accounts[0], a.Accounts[0], amount) },
	}
	if kind == "deposit" {
		reqs = []Request{
			Deposit(a, key, DepositBody(a.Accounts[1], amount, ops[0])),
			Deposit(b, key, DepositBody(b.Accounts[1], amount, ops[1])),
		}
		record = []func(){
			func() { books.Deposit(ops[0], a.Accounts[1], amount) },
			func() { books.Deposit(ops[1], b.Accounts[1], amount) },
		}
	}
	for _, op := range ops {
		books.Expect(op)
	}
	how := "one after the other"
	var rs []Response
	if together {
		how = "at once"
		rs = t.Simultaneously(2, func(i int) Request { return reqs[i] })
	} else {
		rs = []Response{t.Do(reqs[0]), t.Do(reqs[1])}
	}
	sent := fmt.Sprintf("%s, a %s under the same key %s from two customers:\n%s: %s\n%s: %s", how, kind, key, who[0], reqs[0].String(), who[1], reqs[1].String())
	// A customer told 201, or another 2xx naming its op, was told its own
	// operation executed; a 2xx naming the other's op is a wrong answer.
	for i, r := range rs {
		if toldRan(r, ops[i]) {
			record[i]()
		}
	}
	answers := who[0] + " got " + rs[0].Short() + "; " + who[1] + " got " + rs[1].Short()
	if err := t.leakedAnswer(sent, answers, rs, who, ops, books); err != nil {
		return err
	}
	if err := t.Reconcile(sent, answers, books); err != nil {
		return err
	}
	const own = "201 Created for each: a key belongs to the customer who sent it"
	for i, r := range rs {
		switch {
		case r.Is(http.StatusConflict, pDuplicate):
			return t.toldDuplicate(sent, who[i]+" got "+r.String(), own)
		case !r.Is(http.StatusCreated, ""):
			t.Differ(sent, who[i]+" got "+r.String(), own)
		}
	}

	// The first customer's retry spells its credential another way, as
	// another HTTP client may: the scheme is case-insensitive, and the
	// token is the same. The second customer's retry carries its other
	// token, as a retry from its phone of what its web session sent, or
	// one sent after its token was rotated, does. Each is the same
	// customer, and the same scope.
	respelled := reqs[0]
	spelling := []string{"bearer ", "BEARER ", "Bearer  "}[t.Rand().IntN(3)]
	respelled.Header = http.Header{"Authorization": {spelling + a.Token}}
	otherToken := reqs[1]
	otherToken.Token = b.OtherToken
	retries := []Response{t.Do(respelled), t.Do(otherToken)}
	retried := fmt.Sprintf("%s\nthen each retries its own request (%s with the header Authorization: %q, its own token; %s with its other token)", sent, who[0], spelling+"<token>", who[1])
	answers = who[0] + " got " + retries[0].Short() + "; " + who[1] + " got " + retries[1].Short()
	// A retry of a refused request may execute now; one of an executed
	// request (told so: a 201, or another 2xx naming its op) must not
	// execute again.
	for i, r := range retries {
		if !toldRan(rs[i], ops[i]) && toldRan(r, ops[i]) {
			record[i]()
		}
	}
	if err := t.leakedAnswer(retried, answers, retries, who, ops, books, rs...); err != nil {
		return err
	}
	if err := t.Reconcile(retried, answers, books); err != nil {
		if id := answerID(retries[0]); rs[0].Is(http.StatusCreated, "") && retries[0].Is(http.StatusCreated, "") && id != answerID(rs[0]) {
			// The retry differs from its original in the header's
			// spelling alone; the why names that, and the likely cause,
			// without claiming it (a server that forgets keys at once
			// pays again too).
			return because(err, "the retry that paid again differs from the first request only in how its Authorization header is spelled: the customer in a key's scope is the authenticated caller (auth.Customer), not the header as sent; the scheme is case-insensitive, and a retry whose header is spelled otherwise is the same customer's retry")
		}
		if id := answerID(retries[1]); rs[1].Is(http.StatusCreated, "") && retries[1].Is(http.StatusCreated, "") && id != answerID(rs[1]) {
			// Likewise: the retry differs only in its token.
			return because(err, "the retry that paid again differs from the first request only in its token, the customer's other one: the customer in a key's scope is the authenticated caller (auth.Customer), not the credential it sent; a customer may hold several tokens (a phone and a web session, a token and the one that replaces it), and a retry with any of them is the same customer's retry")
		}
		return err
	}
	// Each retry is compared with what its customer was first told: the
	// stored 201, or the other 2xx that told it its payment ran.
	for i, r := range retries {
		if d := ownAnswerMismatch(rs[i], r, "the original"); toldRan(rs[i], ops[i]) && d != "" {
			expected := who[i] + "'s own stored 201"
			if !rs[i].Is(http.StatusCreated, "") {
				expected = who[i] + "'s own " + firstGiven(rs[i])
			}
			t.Differ(retried, who[i]+" got "+r.String()+"\n"+d, expected)
		}
	}

	// The second customer now sends the first one's request, byte for
	// byte: the key, and a body naming the first customer's account; at
	// once with the first customer's own retry, or after it.
	copied := reqs[0]
	copied.Token = b.Token
	// A refusal of any kind is right: 403 (the account is not theirs), or
	// 422 (the second customer used the key for its own request).
	probe := retried + "\nthen " + who[1] + " sends " + who[0] + "'s exact request (its key and body, with " + who[1] + "'s token), " + how + " with " + who[0] + "'s retry: " + copied.String()
	var r Response
	if together {
		r = t.Simultaneously(2, func(i int) Request { return []Request{reqs[0], copied}[i] })[1]
	} else {
		t.Do(reqs[0])
		r = t.Do(copied)
	}
	refused := "403 " + pForbidden + " (the account is not theirs), and never " + who[0] + "'s stored answer: a key and a body match only within the scope of the customer who sent them"
	if id := answerID(r); id != "" && r.Status >= 200 && r.Status < 300 && slices.ContainsFunc([]Response{rs[1], retries[1]}, func(own Response) bool { return answerID(own) == id }) {
		// Its own scope, its own stored answer, whatever the body: no
		// leak, but no fingerprint either (S2.edited-resubmission's
		// dimension), and a 201 for a request that never ran.
		return t.Harmful(judging.WrongAnswer, probe, r.String()+"\n"+who[1]+" was answered with its own earlier operation "+id+", for a request with another body, which never ran: the key is scoped by customer, and its fingerprint is not checked (S2.edited-resubmission)", refused)
	}
	if r.Status >= 200 && r.Status < 300 {
		return t.Harmful(judging.Leak, probe, r.String(), refused)
	}
	return t.Reconcile(probe, r.Short(), books)
}

// leakedAnswer returns a Leak if customer i's answer in rs names a
// transfer or deposit that another customer's answer (in rs or in
// earlier) named: one customer was shown another's operation, and the
// operation it asked for did not run (the books say whether its money
// moved). ops are the customers' own operations, in rs's order: the one
// the operation belongs to (operationOwner) is never the one said to be
// given another's.
func (t *T) leakedAnswer(sent, answers string, rs []Response, who, ops []string, books *judging.Books, earlier ...Response) error {
	all := append(append([]Response{}, rs...), earlier...)
	for i, r := range rs {
		id := answerID(r)
		if id == "" {
			continue
		}
		for j, other := range all {
			if j%len(rs) == i || answerID(other) != id {
				continue
			}
			money := ""
			if err := t.Reconcile(sent, "", books); err != nil {
				var f *judging.Failure
				if errors.As(err, &f) {
					money = "\nand " + f.Got
				}
			}
			given := fmt.Sprintf("%s and %s were both answered with operation %s", who[i], who[j%len(rs)], id)
			if owner := t.operationOwner(id, all, ops); owner >= 0 {
				given = fmt.Sprintf("%s was given %s's operation %s", who[1-owner], who[owner], id)
			}
			return t.Harmful(judging.Leak, sent, fmt.Sprintf("%s\n%s%s", answers, given, money),
				"each customer answered with its own operation: a key belongs to the customer who sent it")
		}
	}
	return nil
}

// operationOwner returns the index in ops (two customers' own operations)
// of the one whose transfer or deposit id is: the operation an answer
// naming id carries in its body's metadata or, when none does (a replay
// without its body), the only one of the two the books show executed; -1
// if neither tells.
func (t *T) operationOwner(id string, rs []Response, ops []string) int {
	for _, r := range rs {
		if answerID(r) != id {
			continue
		}
		var v struct {
			Metadata struct {
				Op string `json:"op"`
			} `json:"metadata"`
		}
		json.Unmarshal(r.Body, &v)
		if k := slices.Index(ops, v.Metadata.Op); k >= 0 && v.Metadata.Op != "" {
			return k
		}
	}
	st, err := t.State()
	if err != nil {
		return -1
	}
	switch ran0, ran1 := st.Executions[ops[0]] > 0, st.Executions[ops[1]] > 0; {
	case ran0 && !ran1:
		return 0
	case ran1 && !ran0:
		return 1
	}
	return -1
}

// checkEndpointsScoped catches a scope without the method and route: the
// deposit is refused as a reused key, or answered with the transfer (and
// never executed). The money is reconciled first: a client told 201 was
// told its own operation executed. Then one endpoint's key expires while
// the other's of the same string is still live
// (forgetKeepsTheOtherEndpoint), and one endpoint's request fails while
// the other's of the same key string is in progress.
func checkEndpointsScoped(t *T, s Scenario) error {
	books := s.Books
	_, holders := t.sameKeyBothEndpoints(s, 500_000)
	reqs := []Request{holders[0].req, holders[1].req}
	record := []func(){holders[0].ran, holders[1].ran}
	var firsts []Response
	var story []string
	for i, req := range reqs {
		r := t.Do(req)
		story = append(story, req.String()+"  →  "+r.Short())
		if toldRan(r, sentOp(req)) {
			record[i]()
		}
		firsts = append(firsts, r)
	}
	sent := strings.Join(story, "\n")
	if id := answerID(firsts[1]); id != "" && id == answerID(firsts[0]) {
		money := ""
		if err := t.Reconcile(sent, "", books); err != nil {
			var f *judging.Failure
			if errors.As(err, &f) {
				money = "\nand " + f.Got
			}
		}
		return t.Harmful(judging.WrongAnswer, sent, fmt.Sprintf("%s\nthe %s was answered with the %s %s%s", firsts[1].String(), endpointName(reqs[1]), endpointName(reqs[0]), id, money),
			"201 Created for the "+endpointName(reqs[1])+", its own operation: the same key on another endpoint is another operation")
	}
	if err := t.Reconcile(sent, "", books); err != nil {
		return err
	}
	for i, r := range firsts {
		if err := t.createdOrDiffers(r, reqs[i], sent, reqs[i].Path+" got "+r.String(), "201 Created: the same key on another endpoint is another operation"); err != nil {
			return err
		}
	}
	for i, req := range reqs {
		r := t.Do(req)
		retry := sent + "\nthen the retry of " + req.String()
		if err := t.Reconcile(retry, r.Short(), books); err != nil {
			return err
		}
		if !firsts[i].Is(http.StatusCreated, "") {
			if err := t.replayOfAnother2xx(retry, firsts[i], r, "the original", "the "+firstGiven(firsts[i])+" of that endpoint's own request"); err != nil {
				return err
			}
		} else if d := ownAnswerMismatch(firsts[i], r, "the original"); d != "" {
			harm := judging.Harm("")
			if id := answerID(r); id != "" && id == answerID(firsts[1-i]) {
				harm = judging.WrongAnswer
			}
			f := t.Fail(retry, r.String()+"\n"+d, "the stored 201 of that endpoint's own request")
			f.(*judging.Failure).Harm = harm
			return f
		}
	}
	return t.forgetKeepsTheOtherEndpoint(s)
}

// forgetKeepsTheOtherEndpoint: one customer sends a transfer and a
// deposit under one key string, 3h of lab time apart, in an order drawn
// from the seed; the first one's key then expires and stays in the table
// (forgetKeepsTheOther), and its late retry forgets it. A claim that
// forgets an expired key by the customer and the key string, the method
// and route left out, deletes the other endpoint's live key with it, and
// that request's retry runs again.
func (t *T) forgetKeepsTheOtherEndpoint(s Scenario) error {
	key, holders := t.sameKeyBothEndpoints(s, 100_000)
	if err := t.forgetKeepsTheOther(s, key, holders[0], holders[1], "the same key on another endpoint is another operation"); err != nil {
		return err
	}
	// One endpoint's request fails under the key the other's holds in
	// progress: a release that finds the claim by the customer and the
	// key string gives the other endpoint's claim back too.
	return t.releaseKeepsTheOther(func() (failing, theirs keyHolder) {
		_, holders := t.sameKeyBothEndpoints(s, 500_000)
		return holders[0], holders[1]
	}, s.Books)
}

// sameKeyBothEndpoints returns a fresh key and, under it, the first
// customer's transfer to the second and deposit into its own second
// account, each of an amount up to most, in an order drawn from the
// seed. The books expect both operations.
func (t *T) sameKeyBothEndpoints(s Scenario, most int64) (string, []keyHolder) {
	a, b, books := s.A, s.B, s.Books
	key := t.Key()
	opT, opD := t.Op(), t.Op()
	books.Expect(opT)
	books.Expect(opD)
	x, y := t.Amount(1_000, most), t.Amount(1_000, most)
	holders := []keyHolder{
		{"the transfer", Transfer(a, key, TransferBody(a.Accounts[0], b.Accounts[0], x, opT)), func() { books.Transfer(opT, a.Accounts[0], b.Accounts[0], x) }},
		{"the deposit", Deposit(a, key, DepositBody(a.Accounts[1], y, opD)), func() { books.Deposit(opD, a.Accounts[1], y) }},
	}
	if t.Rand().IntN(2) == 0 {
		holders[0], holders[1] = holders[1], holders[0]
	}
	return key, holders
}

// endpointName names the operation a request asks for.
func endpointName(r Request) string {
	if r.Path == "/deposits" {
		return "deposit"
	}
	return "transfer"
}

// checkRetentionBoundary catches keys that never expire (stage 4), expiry
// on the real clock instead of the lab clock, a retention read once (when
// the server started, or at its first request) instead of from the config
// in force, and expiry too early (by the retry horizon, say, or by a
// retention cut to whole hours), and a claim that takes an expired key
// over without deciding in the database which retry gets it
// (lateRetriesAtOnce), one that forgets an expired key only for the
// body it was first used with (editedAfterExpiry), and one that never
// forgets a refusal's (refusalAfterExpiry). It runs two rounds on
// one server, each with a retention drawn from the seed and set just
// before it.
func checkRetentionBoundary(t *T, s Scenario) error {
	const margin = 2 * time.Second
	a, b, books := s.A, s.B, s.Books
	// Both differ from the default's 24h, and from each other, and carry
	// minutes: a retention cut to whole hours forgets a key that many
	// minutes early, and the retry just inside it pays again.
	first := time.Duration(2+t.Rand().IntN(10))*time.Hour + time.Duration(1+t.Rand().IntN(59))*time.Minute
	retentions := []time.Duration{first, first + time.Duration(1+t.Rand().IntN(10))*time.Hour}
	story := ""
	for _, retention := range retentions {
		if err := t.Configure(labclient.Config{Retention: retention}); err != nil {
			return err
		}
		amount, op := t.Amount(1_000, 500_000), t.Op()
		books.Expect(op)
		req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
		// The books expect the operation to run once when a 201, or
		// another 2xx naming op, tells of it, and once more only when the
		// key has expired: a retry within retention that runs again is a
		// double, whatever it answers.
		executed := func(r Response) {
			if toldRan(r, op) && books.Executions[op] == 0 {
				books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
			}
		}
		// The lab clock runs on with real time: the original's key
		// completed at most this long before the clock is moved.
		sentAt := time.Now()
		orig := t.Do(req)
		executed(orig)
		if story != "" {
			story += "\n\nthen, on the same server:\n"
		}
		story += fmt.Sprintf("(POST /lab/config: retention %v)\n%s  →  %s", retention, req.String(), orig.Short())
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
		if err := t.createdOrDiffers(orig, req, story, orig.String(), "201 Created"); err != nil {
			return err
		}

		// The retry is sent margin before the key expires, counted from
		// when the original was sent: the real time the check took since
		// (its answer, the books read back, on a loaded machine seconds)
		// is taken off the move, or it would eat the margin and the retry
		// find the key expired.
		moved := time.Now()
		if err := t.Advance(retention - margin - moved.Sub(sentAt)); err != nil {
			return err
		}
		inside := t.Do(req)
		executed(inside)
		story += fmt.Sprintf("\nthen the lab clock moved on to %v after the original was sent (%v before the key expires), and the retry  →  %s", retention-margin, margin, inside.Short())
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
		within := ": the key is still within its retention period, " + retention.String() + " in the config in force"
		if !orig.Is(http.StatusCreated, "") {
			if err := t.replayOfAnother2xx(story, orig, inside, "the original", "the "+firstGiven(orig)+within); err != nil {
				return err
			}
		} else if d := ownAnswerMismatch(orig, inside, "the original"); d != "" {
			return t.Fail(story, inside.String()+"\n"+d, "the stored 201"+within)
		}

		// The lab clock ran on since the last move too (the retry, the
		// books read back): the retry after expiry is margin past the
		// retention and that time, which the story says.
		took := time.Since(moved)
		if err := t.Advance(2 * margin); err != nil {
			return err
		}
		after := t.Do(req)
		afterAnswered := time.Now()
		if toldRan(after, op) && answerID(after) != answerID(orig) {
			// After expiry the same key is a new request: it runs again
			// (a 201, or another 2xx naming op and a new transfer).
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		story += fmt.Sprintf("\nthen %v more: %v past the retention, counted from when the original was sent (%v, and the %v the check took since the last move), and the retry  →  %s",
			2*margin, (margin + took).Round(time.Millisecond), margin, took.Round(time.Millisecond), after.Short())
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
		forgotten := "201 Created, a new transfer: after its retention period (" + retention.String() + " in the config in force) the key is forgotten, and the same key is a new request"
		if answerID(after) == answerID(orig) {
			return t.Fail(story, after.String(), forgotten)
		}
		if err := t.createdOrDiffers(after, req, story, after.String(), forgotten); err != nil {
			return err
		}
		again := t.Do(req)
		executed(again)
		story += "\nthen the retry of that one  →  " + again.Short()
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
		if !after.Is(http.StatusCreated, "") {
			if err := t.replayOfAnother2xx(story, after, again, "the original", "the new transfer's "+firstGiven(after)); err != nil {
				return err
			}
		} else if d := ownAnswerMismatch(after, again, "the original"); d != "" {
			return t.Fail(story, again.String()+"\n"+d, "the new transfer's stored 201")
		}
		// A second transfer completes with that one, so that it expires
		// with it in lateRetriesAtOnce, while its row is still there.
		sideAmount, sideOp := t.Amount(1_000, 100_000), t.Op()
		books.Expect(sideOp)
		side := Transfer(a, t.Key(), TransferBody(a.Accounts[1], b.Accounts[0], sideAmount, sideOp))
		sideAnswer := t.Do(side)
		if toldRan(sideAnswer, sideOp) {
			books.Transfer(sideOp, a.Accounts[1], b.Accounts[0], sideAmount)
		}
		story += "\nthen another transfer, with a fresh key: " + side.String() + "  →  " + sideAnswer.Short()
		if err := t.Reconcile(story, "", books); err != nil {
			return err
		}
		if err := t.createdOrDiffers(sideAnswer, side, story, sideAnswer.String(), createdFresh); err != nil {
			return err
		}
		// A refusal completes with them too, and expires with them
		// (refusalAfterExpiry).
		refused, refusal, err := t.refusedTransfer(s)
		if err != nil {
			return err
		}
		story += "\nthen a transfer of more than the account holds, with a fresh key: " + refused.String() + "  →  " + refusal.Short()
		ran := func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }
		if err := t.lateRetriesAtOnce(req, after, afterAnswered, retention, ran, books, &story); err != nil {
			return err
		}
		if err := t.editedAfterExpiry(side, a.Accounts[1], b.Accounts[0], sideAmount, sideAnswer, books, &story); err != nil {
			return err
		}
		if err := t.refusalAfterExpiry(s, refused, &story); err != nil {
			return err
		}
	}
	return nil
}

// refusalAfterExpiry sends, under the key of refused (a transfer refused
// 422 insufficient-funds, whose key has expired and is still in the
// table: lateRetriesAtOnce cut the retention without moving the clock),
// a transfer the account can afford. The key is forgotten whatever its
// answer was, so the new request runs: a claim that forgets only the keys
// of 201s, reading a refusal's "for good" as "for ever", answers it 422
// idempotency-key-reused until a purge runs. The kit's own purge, every
// 30 s from the server's start, hides that claim only by running between
// the cut and this request in both rounds. The books get the transfer if
// it runs, and story the step.
func (t *T) refusalAfterExpiry(s Scenario, refused Request, story *string) error {
	amount, op := t.Amount(1_000, 100_000), t.Op()
	s.Books.Expect(op)
	req := refused
	req.Body = TransferBody(s.A.Accounts[0], s.B.Accounts[0], amount, op)
	r := t.Do(req)
	if toldRan(r, op) {
		s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
	}
	*story += "\nthen, with the refused transfer's key expired too but still in the table, the same key with an amount the account holds: " + req.String() + "  →  " + r.Short()
	if err := t.Reconcile(*story, "", s.Books); err != nil {
		return err
	}
	return t.createdOrDiffers(r, req, *story, r.String(), "201 Created, a new transfer: after its retention period a refused request's key is forgotten like any other, and the same key is a new request (its 422 was its request's answer for the retention, not for ever)")
}

// editedAfterExpiry sends, under the key of side (a transfer of
// sideAmount from from to to, whose stored answer is last), a transfer
// with another amount and op, when that key has expired
// and is still in the table (lateRetriesAtOnce cut the retention without
// moving the clock, so no purge ran). The key is forgotten, so the edited
// request is a new one and runs: a claim that forgets an expired key only
// for the body it was first used with answers 422 idempotency-key-reused
// to a request the key no longer names; one that makes the expired row
// the new request's without its fingerprint refuses the new request's
// retry instead. books gets the transfer if it runs, and story the step.
func (t *T) editedAfterExpiry(side Request, from, to string, sideAmount int64, last Response, books *judging.Books, story *string) error {
	amount, op := sideAmount+t.Amount(1, 9_999), t.Op()
	books.Expect(op)
	req := side
	req.Body = TransferBody(from, to, amount, op)
	r := t.Do(req)
	if toldRan(r, op) && answerID(r) != answerID(last) {
		books.Transfer(op, from, to, amount)
	}
	*story += "\nthen, with the other transfer's key expired too but still in the table, the same key with another amount: " + req.String() + "  →  " + r.Short()
	if err := t.Reconcile(*story, "", books); err != nil {
		return err
	}
	const forgotten = "201 Created, a new transfer: after its retention period the key is forgotten, whatever the body it was first used with, and the same key is a new request"
	if answerID(r) == answerID(last) {
		return t.Fail(*story, r.String(), forgotten)
	}
	if err := t.createdOrDiffers(r, req, *story, r.String(), forgotten); err != nil {
		return err
	}
	// The key names the new request now, body and all: its retry is
	// answered with its own stored 201. A claim that made the expired row
	// the new request's without its fingerprint refuses every such retry
	// as a reused key.
	again := t.Do(req)
	*story += "\nthen the retry of that one  →  " + again.Short()
	if err := t.Reconcile(*story, "", books); err != nil {
		return err
	}
	if d := ownAnswerMismatch(r, again, "the new transfer"); d != "" {
		expected := "the new transfer's stored 201: the forgotten key names the new request, its body included"
		if !r.Is(http.StatusCreated, "") {
			expected = "the new transfer's " + firstGiven(r) + ": the forgotten key names the new request, its body included"
		}
		if again.Is(http.StatusUnprocessableEntity, pKeyReused) {
			return t.Harmful(judging.NoUsableAnswer, *story, again.String()+"\n"+d, expected+"; refused as another request, its client can never learn that its money moved")
		}
		if !r.Is(http.StatusCreated, "") {
			return t.replayOfAnother2xx(*story, r, again, "the new transfer", expected)
		}
		return t.Harmful(replayHarm(r, again), *story, again.String()+"\n"+d, expected)
	}
	return nil
}

// lateRetriesAtOnce sends many copies of req at once when its key, whose
// stored answer is last, has expired and is still in the table, as it is
// between two runs of a periodic purge: one copy runs the payment again
// (ran tells books so), and the others get 409 request-in-progress or
// that copy's stored answer. The kit purges whenever the lab clock moves,
// so the key is made to expire by cutting the retention in the config
// instead. A server that reads the expired row and then reuses it with a
// plain UPDATE lets every copy that read it before the first one wrote
// run the payment: the slow-key-update fault holds that first write up,
// as a loaded database would. One that reads it and then deletes the key
// by its name alone deletes, on PostgreSQL, the claim another copy made
// meanwhile, and claims the key again: the slow-key-delete fault holds
// the first delete up the same way. answered is when last came back (the
// machine's clock). story gets the step.
func (t *T) lateRetriesAtOnce(req Request, last Response, answered time.Time, retention time.Duration, ran func(), books *judging.Books, story *string) error {
	const n = 8
	// The lab clock runs on with real time: since last came back (its key
	// completed before), since the keys completed after it (the books
	// read back, other requests; on a loaded machine seconds). The move
	// is counted from last's answer, margin before its key expires, so
	// that the purge of the move leaves it; the cut retention is counted
	// from the move, so that the keys completed since expire with it.
	const margin = 10 * time.Second
	since := time.Since(answered)
	move := retention - margin - since
	if err := t.Advance(move); err != nil {
		return err
	}
	cut := move - margin
	if err := t.Configure(labclient.Config{Retention: cut}); err != nil {
		return err
	}
	// Without the expired row there is nothing to race for: the retries
	// would meet a free key, which proves nothing.
	st, err := t.State()
	if err != nil {
		return err
	}
	if len(judging.KeyRows(st, req.Key)) == 0 {
		return t.CouldNotObserve("a key expired and still in the table: %s's key was purged before the retries could meet it (a busy machine, or a key table the lab cannot read)", req.Key)
	}
	// On a server of several processes (S5.two-servers) the faults are
	// armed in each, and the retries spread over them.
	processes := 1 + len(t.target.Replicas)
	for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDelete} {
		if err := t.ArmEverywhere(point, 1); err != nil {
			return err
		}
	}
	rs := t.Simultaneously(n, func(i int) Request { r := req; r.Replica = i % processes; return r })
	for _, point := range []string{labctl.SlowKeyUpdate, labctl.SlowKeyDelete} {
		if err := t.ArmEverywhere(point, 0); err != nil {
			return err
		}
	}
	// A new transfer is told by a 201, or another 2xx naming the op.
	op := sentOp(req)
	var fresh []Response
	for _, r := range rs {
		if toldRan(r, op) && answerID(r) != answerID(last) {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) > 0 {
		// The key was forgotten: the payment runs once more, and once only.
		ran()
	}
	*story += fmt.Sprintf("\nthen the lab clock moved on to %v after that answer, and the retention cut to %v in the config: the key %s expired at least %v ago and is still in the table, as between two runs of a periodic purge; %d retries of its transfer at once, with the slow-key-update and slow-key-delete faults holding the first update and the first delete of the key table for %v and %v  →  %s",
		retention-margin, cut.Round(time.Millisecond), req.Key, (margin + since).Round(time.Millisecond), n, fault.KeyUpdateDelay, fault.KeyDeleteDelay, Summarize(rs))
	if err := t.Reconcile(*story, "", books); err != nil {
		return err
	}
	const runsAgain = "one of the retries runs the payment again: 201 Created, a new transfer; the key has expired under the retention in force, which applies to every stored key, whatever it was when the key was claimed or completed"
	if len(fresh) == 0 {
		return t.Fail(*story, Summarize(rs), runsAgain)
	}
	if !fresh[0].Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; the others
		// are judged by the transfer they name, whatever their status.
		t.Differ(*story, fresh[0].String(), runsAgain)
	}
	for _, r := range rs {
		if ok, _ := inProgressAnswer(r); ok || sameTold(op, r, fresh[0]) {
			continue
		}
		// Recorded, and the check goes on to its other probes: the money
		// was reconciled above, and what follows may find harm.
		t.Differ(*story, r.String(), "one retry runs the payment again (201 Created, a new transfer); the others get 409 "+pInProgress+" or that transfer's stored 201: the expired key is forgotten once, by the claim that replaces it")
		break
	}
	return nil
}

// checkTwoServersForget catches an expired key forgotten by a decision
// that only one process sees: a claim that reads the expired row and
// makes it in progress again, kept apart from the other late retries by a
// mutex in the server's memory, holds against retries that reach the same
// process, and a second process knows nothing of that mutex. The server
// runs as two processes on one database; a transfer's key expires, and
// its late retries arrive at once, every other one through the second
// process (lateRetriesAtOnce).
func checkTwoServersForget(t *T) error {
	const retention = 3 * time.Hour
	rt, s, err := t.twoServers(1_000_000)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	if err := rt.Configure(labclient.Config{Retention: retention}); err != nil {
		return err
	}
	// Small enough that every one of the retries, run again, finds the
	// money: a double shows as one, never as a refusal for funds.
	amount, op := rt.Amount(1_000, 100_000), rt.Op()
	books.Expect(op)
	req := Transfer(a, rt.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	orig := rt.Do(req)
	answered := time.Now()
	story := fmt.Sprintf("(two server processes on one database, retention %v) %s  →  %s", retention, req.String(), orig.Short())
	if toldRan(orig, op) {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	}
	if err := rt.Reconcile(story, "", books); err != nil {
		return err
	}
	if err := rt.createdOrDiffers(orig, req, story, orig.String(), "201 Created"); err != nil {
		return err
	}
	story += "\nevery other retry below goes through the second process"
	ran := func() { books.Transfer(op, a.Accounts[0], b.Accounts[0], amount) }
	return rt.lateRetriesAtOnce(req, orig, answered, retention, ran, books, &story)
}

// checkPurgeBounded catches a purge that does nothing (or is missing), one
// that takes live keys with the expired (a refusal's among them: its 422
// is its request's answer for good, kept as long as a 201), one that keeps
// expired refusals for ever (kept as long as a 201, and no longer), and
// expiry on the wrong clock.
func checkPurgeBounded(t *T, s Scenario) error {
	const retention = 2 * time.Hour
	if err := t.Configure(labclient.Config{Retention: retention}); err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	batch := func(n int) ([]Request, []Response, error) {
		reqs, ops, amounts := make([]Request, n), make([]string, n), make([]int64, n)
		for i := range reqs {
			ops[i], amounts[i] = t.Op(), t.Amount(1, 10_000)
			books.Expect(ops[i])
			reqs[i] = Transfer(a, t.Key(), TransferBody(a.Accounts[i%2], b.Accounts[0], amounts[i], ops[i]))
		}
		rs := t.Simultaneously(n, func(i int) Request { return reqs[i] })
		for i, r := range rs {
			if !toldRan(r, ops[i]) {
				return nil, nil, t.Fail(reqs[i].String(), r.String(), "201 Created")
			}
			books.Transfer(ops[i], a.Accounts[i%2], b.Accounts[0], amounts[i])
		}
		// Told it ran in another 2xx: a contract difference, recorded
		// once for the batch; the purge is still judged.
		for i, r := range rs {
			if !r.Is(http.StatusCreated, "") {
				t.Differ(reqs[i].String(), r.String(), "201 Created")
				break
			}
		}
		return reqs, rs, nil
	}
	old, _, err := batch(12)
	if err != nil {
		return err
	}
	// One of the expired keys holds a refusal: its 422 is its request's
	// answer for the retention, as a 201 is, and then it goes like any
	// other. A purge that keeps refusals for ever, taking "for good" for
	// "for ever", keeps a row for every refused request the table ever
	// saw.
	expiredRefusal, _, err := t.refusedTransfer(s)
	if err != nil {
		return err
	}
	old = append(old, expiredRefusal)
	// The table is looked at before the clock moves: the kit purges after
	// every move, and a purge that takes live keys would leave no row to
	// tell it from a server that keeps its keys elsewhere.
	visible, err := t.keyRowsVisible()
	if err != nil {
		return err
	}
	if !visible {
		return t.noKeyRows("which keys a purge removes")
	}
	if err := t.Advance(time.Hour); err != nil {
		return err
	}
	live, answers, err := batch(8)
	if err != nil {
		return err
	}
	// One more key that must stay holds a refusal: nothing moved, but the
	// 422 is that request's answer for good, and a purge that takes it
	// before its retention has passed lets a retry pay once money arrives.
	refused, no, err := t.refusedTransfer(s)
	if err != nil {
		return err
	}
	live, answers = append(live, refused), append(answers, no)
	// Which of them the server kept, read before the clock moves (the kit
	// purges after every move): a key it never kept, a refusal it let go
	// as no outcome, is no purge's doing, and S4.insufficient-funds-replayed
	// is the check of that.
	before, err := t.State()
	if err != nil {
		return err
	}
	if err := t.Advance(61 * time.Minute); err != nil {
		return err
	}
	purged, err := t.Lab().PurgeAnswer(t.ctx)
	if err != nil {
		return fmt.Errorf("POST /lab/purge: %w", err)
	}
	sent := fmt.Sprintf("(retention %v) 12 transfers and one refused for insufficient funds (422), then 1h of lab time, 8 more and one more refused, then 61m more (the first 13 expired a minute ago, the other 9 have 59m left), then POST /lab/purge", retention)
	st, err := t.State()
	if err != nil {
		return err
	}
	var kept []string
	for _, req := range old {
		if rows := judging.KeyRows(st, req.Key); len(rows) > 0 {
			kept = append(kept, req.Key)
		}
	}
	if len(kept) > 0 {
		got := fmt.Sprintf("%d of the 13 expired keys still in idempotency_keys (%s…); %d rows in all", len(kept), kept[0], len(st.Keys))
		expected := "the 13 expired keys purged, 9 rows left"
		if len(kept) == 1 && kept[0] == expiredRefusal.Key {
			got = fmt.Sprintf("the expired refusal's key %s still in idempotency_keys, the 12 expired transfers' gone; %d rows in all", kept[0], len(st.Keys))
			expected += ": the refusal's 422 is its request's answer for the retention, as a 201 is, and then its key goes like any other (a purge that keeps refusals for ever leaves a row for every refused request, and a new request under such a key, days later, is answered with the old refusal instead of executing)"
		}
		if purged.Note != "" {
			// The lab never called a purge: the student's SQL is not
			// where to look.
			got += "\nPOST /lab/purge answered: " + purged.Note
		}
		return t.Fail(sent, got, expected)
	}
	var lost []Request
	for _, req := range live {
		if rows := judging.KeyRows(st, req.Key); len(rows) == 0 && len(judging.KeyRows(before, req.Key)) > 0 {
			lost = append(lost, req)
		}
	}
	if len(lost) > 0 {
		// The retry of a live key whose row is gone is a new request: it
		// pays again. The refusal's retry pays once the money is there.
		retry := lost[0]
		then := "\nthen the retry of one of the 9: " + retry.String()
		if retry.Key == refused.Key {
			amount, op := t.Amount(s.Opening, 2*s.Opening), t.Op()
			books.Expect(op)
			dep := Deposit(a, t.Key(), DepositBody(a.Accounts[0], amount, op))
			d := t.Do(dep)
			if toldRan(d, op) {
				books.Deposit(op, a.Accounts[0], amount)
			}
			then = fmt.Sprintf("\nthen a deposit that makes the refused transfer affordable: %s  →  %s\nthen the retry of the refused transfer: %s", dep.String(), d.Short(), retry.String())
		}
		r := t.Do(retry)
		got := fmt.Sprintf("%d of the 9 live keys gone from idempotency_keys (%s…), %d rows in all: purged while still inside their retention period (the kit purges after every move of the lab clock too); the retry  →  %s", len(lost), lost[0].Key, len(st.Keys), r.Short())
		// The books first: the retry that ran a refused transfer, or ran
		// a transfer again, moved money its client was not told of.
		if err := t.Reconcile(sent+then, got, books); err != nil {
			return err
		}
		return t.Fail(sent+then, got,
			"the 9 keys still within retention kept, the refused one too, and the retry replayed: a purge removes only completed keys whose retention period has passed (completed_at at or before now minus the retention), whatever their answer; a refusal is its request's answer for good, and a client told 422 must not find its money moved by its own retry")
	}
	var kept9 []int
	for i, req := range live {
		if len(judging.KeyRows(before, req.Key)) > 0 {
			kept9 = append(kept9, i)
		}
	}
	if len(kept9) == 0 {
		return t.noKeyRows("which keys a purge removes")
	}
	i := kept9[t.Rand().IntN(len(kept9))]
	r := t.Do(live[i])
	retried := sent + "\nthen the retry of one of the 9: " + live[i].String()
	if success(answers[i]) && !answers[i].Is(http.StatusCreated, "") {
		return t.replayOfAnother2xx(retried, answers[i], r, "the original", "its "+firstGiven(answers[i]))
	}
	if d := ownAnswerMismatch(answers[i], r, "the original"); d != "" {
		return t.Fail(retried, r.String()+"\n"+d, "its stored answer")
	}
	return nil
}

// refusedTransfer sends a transfer of more than the scenario's first
// customer's first account holds, under a fresh key, and returns it once
// it has been refused 422 insufficient-funds, with that answer. The books
// expect its operation, which never runs.
func (t *T) refusedTransfer(s Scenario) (Request, Response, error) {
	op := t.Op()
	s.Books.Expect(op)
	req := Transfer(s.A, t.Key(), TransferBody(s.A.Accounts[0], s.B.Accounts[0], s.Opening+t.Amount(1, 50_000), op))
	r := t.Do(req)
	if !r.Is(http.StatusUnprocessableEntity, pInsufficient) {
		return req, r, t.Fail(req.String()+"  (more than the account holds)", r.String(), "422 "+pInsufficient)
	}
	return req, r, nil
}

// inProgressAge is how far S5.purge-keeps-in-progress moves the lab clock
// while an original waits on the core: past any retention, and past any
// age at which a purge might take a claim for abandoned (a day, a week, a
// year). A key in progress is never purged, however old.
const inProgressAge = 10 * 365 * 24 * time.Hour

// checkPurgeKeepsInProgress catches a purge that deletes old keys whatever
// their state, one that takes keys in progress past some age for
// abandoned, and a claim that treats an expired in-progress key as free:
// either way the retry of a running original executes a second time.
func checkPurgeKeepsInProgress(t *T) error {
	err := t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		// A lease longer than the jump of the clock: this check is about
		// the purge, not about taking over an expired lease (stage 6).
		if err := t.Configure(labclient.Config{Lease: 2 * inProgressAge}); err != nil {
			return false, err
		}
		a, b, books := s.A, s.B, s.Books
		req, op, amount := s.Payment(t)
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		if !held.Seen {
			if err := t.unheld(held, "whether the original's key is in progress"); err != nil {
				return true, err
			}
			if !lastHold(latency) {
				return false, nil // a slow machine may have looked too late: wait longer
			}
			return true, t.Fail(req.String(), "the key never showed in_progress while the original waited on the core",
				"the key in progress from the claim until the business write completes it (stage 3)")
		}
		if err := t.Advance(inProgressAge); err != nil {
			return false, err
		}
		if _, err := t.Purge(); err != nil {
			return false, fmt.Errorf("POST /lab/purge: %w", err)
		}
		st, err := t.State()
		if err != nil {
			return false, err
		}
		running := !held.Done()
		sent := fmt.Sprintf("%s\n(the original waits %v on the core; while it waits: 10 years of lab time, past the retention period and any age a claim might be taken for abandoned at, and POST /lab/purge)", req.String(), latency)
		if len(judging.KeyRows(st, req.Key)) == 0 {
			held.Wait()
			if !running {
				return false, nil
			}
			return true, t.Fail(sent, "the key's row is gone from idempotency_keys while its original still runs",
				"the in-progress row kept: a purge removes only completed keys; a key in progress, however old, may be a request still running, and the next retry would claim it afresh and pay beside it")
		}
		early := held.Early()
		retry := t.Do(req)
		orig := held.Wait()
		sent += "\nthen the retry, the same request"
		if !retry.Is(http.StatusConflict, pInProgress) && !early {
			return false, nil
		}
		books.Expect(op)
		if toldAnyRan(op, orig, retry) {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		if err := t.Reconcile(sent, retry.Short()+", and the original "+orig.Short(), books); err != nil {
			return true, err
		}
		if !retry.Is(http.StatusConflict, pInProgress) {
			return true, t.Fail(sent, retry.String()+"\n(the original then answered "+orig.Short()+")",
				"409 "+pInProgress+": the original still runs")
		}
		if !toldRan(orig, op) {
			return true, t.Fail(sent, "the original answered "+orig.String(), "201 Created once its core call returns")
		}
		if !orig.Is(http.StatusCreated, "") {
			// Told it ran in another 2xx: a contract difference; the
			// retries after the purge, and the rounds after, still run.
			t.Differ(sent, "the original answered "+orig.String(), "201 Created once its core call returns")
		}
		// The key was created 10 years ago and completed just now: its retention
		// counts from its completion. A retry, then a purge and a retry,
		// must both get the stored answer.
		sent += "  →  " + retry.Short() + "\nthe original answers " + orig.Short() + " (its key was created 10 years ago, and completed now)"
		for _, purge := range []bool{false, true} {
			if purge {
				if _, err := t.Purge(); err != nil {
					return true, fmt.Errorf("POST /lab/purge: %w", err)
				}
				sent += "\nthen POST /lab/purge"
			}
			r := t.Do(req)
			sent += "\nthen the retry  →  " + r.Short()
			err := t.Reconcile(sent, "", books)
			const fromCompletion = ": a key's retention period counts from its completion (completed_at), not from its claim"
			if d := ownAnswerMismatch(orig, r, "the original"); err == nil && d != "" {
				if orig.Is(http.StatusCreated, "") {
					err = t.Fail(sent, r.String()+"\n"+d, "the stored 201"+fromCompletion)
				} else {
					// Compared with what the original was told.
					err = t.replayOfAnother2xx(sent, orig, r, "the original", "the "+firstGiven(orig)+fromCompletion)
				}
			}
			if err != nil {
				return true, completedPurged(err)
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := t.WhileHeld(1_000_000, t.purgedBesideReusedKey); err != nil {
		return err
	}
	st, err := t.State()
	if err != nil || st.Engine == labdb.SQLite {
		return err
	}
	if err := t.WhileHeld(1_000_000, t.purgedBesideLateClaim); err != nil {
		return err
	}
	return t.WhileHeld(1_000_000, t.purgedBesideCommittingClaim)
}

// purgeWaitsForClaim is how long purgedBesideCommittingClaim waits, the
// claim's commit held, for the purge's DELETE to wait for the row the
// claim changed (GET /lab/state's lock_waits) or for the purge to end,
// before it lets the claim commit all the same: well inside the 10 s the
// kit gives a purge (labctl.PurgeLimit), which the held claim holds up.
const purgeWaitsForClaim = 5 * time.Second

// The age of the payment whose key the rounds of expiredPayment let
// expire, and the retention they cut it to: the retention must outlast
// the clients' retry horizon (an hour).
const expiredAge, expiredCut = 2 * time.Hour, 2*time.Hour - 10*time.Second

// expiredRound is a payment expiredPayment made and let expire.
type expiredRound struct {
	req   Request
	first Response
	// sent tells the payment and its answer.
	sent string
	// ran books the payment's execution once more.
	ran func()
	// tried is what a round returns that ends here: whether it tried the
	// server (false when the lease could not be set).
	tried bool
}

// expiredPayment begins a round of S5.purge-keeps-in-progress on
// PostgreSQL: with a lease longer than the round, it makes a payment,
// moves the lab clock expiredAge on and sets cut (expiredCut, and what
// else the round needs) in the config, so that the payment's key has
// expired and is still in the table. done says the round ends here,
// with err its verdict: the payment was refused (the books reconciled),
// or its key was gone before the round's purge (could not observe).
func (t *T) expiredPayment(s Scenario, cut labclient.Config) (p expiredRound, done bool, err error) {
	if err := t.Configure(labclient.Config{Lease: 72 * time.Hour, NoCoreLatency: true}); err != nil {
		return p, true, err
	}
	p.tried = true
	req, op, amount := s.Payment(t)
	books := s.Books
	books.Expect(op)
	p.req, p.ran = req, func() { books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount) }
	p.first = t.Do(req)
	if toldRan(p.first, op) {
		p.ran()
	}
	p.sent = req.String() + "  →  " + p.first.Short()
	if !toldRan(p.first, op) {
		return p, true, t.Reconcile(p.sent, "", books)
	}
	if !p.first.Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; the round
		// goes on to its purge.
		t.Differ(p.sent, p.first.String(), "201 Created")
	}
	if err := t.Advance(expiredAge); err != nil {
		return p, true, err
	}
	if err := t.Configure(cut); err != nil {
		return p, true, err
	}
	st, err := t.State()
	if err != nil {
		return p, true, err
	}
	if len(judging.KeyRows(st, req.Key)) == 0 {
		return p, true, t.CouldNotObserve("a key expired and still in the table: %s's key was purged before the round's purge (a busy machine, or a key table the lab cannot read)", req.Key)
	}
	return p, false, nil
}

// purgedBesideCommittingClaim is S5.purge-keeps-in-progress's round on
// PostgreSQL that catches a purge that deletes by their ids the rows a
// subquery chose (DELETE … WHERE id IN (SELECT id … LIMIT n), a purge in
// batches): at READ COMMITTED the statement chooses its rows with the
// snapshot it began with, and when a row it chose has changed meanwhile
// it checks the new row against its own condition, id IN (…), again, not
// against the subquery's. A late retry that made an expired key's row its
// own (one conditional UPDATE, the row reused) while the purge ran loses
// its claim in progress, and the next retry pays a second time. The
// round makes a payment, lets its key expire (the retention cut in the
// config), and sends a retry that waits on the core, its claim's COMMIT
// held (held-key-commit) once all its statements have run; then POST
// /lab/purge, and once its delete waits for the row the claim changed
// (PostgreSQL shows the wait), it lets the claim commit, and sends one
// more retry, which must get 409. A
// purge whose DELETE says in its own condition that a key is completed
// and expired checks the reused row again and keeps it, as it keeps the
// row a claim inserted in place of a deleted one. A claim that commits
// nothing in a transaction of its own is not held: the round ends then.
func (t *T) purgedBesideCommittingClaim(s Scenario, latency time.Duration) (bool, error) {
	p, done, err := t.expiredPayment(s, labclient.Config{Retention: expiredCut, CoreLatency: latency})
	if done || err != nil {
		return p.tried, err
	}
	req, first, sent, books, ran := p.req, p.first, p.sent, s.Books, p.ran
	if err := t.Arm(labctl.HeldKeyCommit, 1); err != nil {
		return true, err
	}
	// Disarming lets the held commit go, whatever happens here.
	defer t.Arm(labctl.HeldKeyCommit, 0)
	late := t.Launch(req)
	holding, err := t.Fired(10*time.Second, late.Done, labctl.HeldKeyCommit)
	if err == nil && holding == "" {
		err = t.Arm(labctl.HeldKeyCommit, 0)
	}
	if err != nil || holding == "" {
		r := late.Wait()
		if toldRan(r, sentOp(req)) {
			ran()
		}
		if err != nil {
			return true, err
		}
		return true, t.Reconcile(sent+"\nthen the same request again  →  "+r.Short(), "", books)
	}
	purged := make(chan error, 1)
	go func() {
		_, err := t.Lab().Purge(t.ctx)
		purged <- err
	}()
	// The purge has begun once its DELETE waits for the row the claim
	// changed; one that finds nothing to wait for ends. A machine too
	// busy for either within purgeWaitsForClaim lets the claim commit
	// all the same.
	var purgeErr error
	ended := false
	_, err = t.WaitFor(purgeWaitsForClaim, func() (bool, error) {
		select {
		case purgeErr = <-purged:
			ended = true
			return true, nil
		default:
		}
		return t.lockWaited()
	})
	if err == nil {
		err = t.Arm(labctl.HeldKeyCommit, 0)
	}
	if !ended {
		purgeErr = <-purged
	}
	if err != nil {
		return true, err
	}
	if err := t.purgeFailure("POST /lab/purge", purgeErr); err != nil {
		return true, err
	}
	inFlight := !late.Done()
	retry := t.Do(req)
	r := late.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return true, err
	}
	if toldOps(sentOp(req), first, r, retry) > toldOps(sentOp(req), first) {
		// The key had expired: the payment runs once more, and once only.
		// A server that still replays the first answer (one that never
		// forgets a key, as stage 4) ran nothing: the round has no claim
		// to judge.
		ran()
	}
	// The first answer again, naming its transfer (a 201 that names none
	// cannot be told from a new one).
	if answerID(r) != "" && sameTold(sentOp(req), first, r) {
		return true, t.Reconcile(sent, "", books)
	}
	if !inFlight && !lastHold(latency) {
		return false, t.Reconcile(sent, "", books)
	}
	sent += fmt.Sprintf("\nthen %v of lab time, and the retention cut to %v in the config: the key expired and is still in the table"+
		"\nthen the same request again, which waits %v on the core, its claim's COMMIT held (held-key-commit)\nwhile it is held: POST /lab/purge, until its delete waits for the key's row"+
		"\nthen the claim commits, and the same request once more  →  %s\nthe request before it answers  %s",
		expiredAge, expiredCut, latency, retry.Short(), r.Short())
	return true, because(t.Reconcile(sent, "the retry "+r.Short()+"; the one after it "+retry.Short(), books),
		"a purge says in its DELETE's own condition that a key is completed and expired: rows chosen by a subquery and deleted by their ids are deleted as the purge's snapshot saw them, and a claim that reused an expired key's row while the purge ran loses it, so the next retry pays a second time")
}

// purgedBesideLateClaim is S5.purge-keeps-in-progress's round on
// PostgreSQL that catches a purge that chooses its keys by an earlier
// read and deletes them by their names alone: at READ COMMITTED a late
// retry of an expired key can forget it and claim it again between the
// purge's read and its delete, and the purge then deletes that claim in
// progress; the next retry claims the key afresh and runs the payment
// beside the first. The round makes a payment, lets its key expire (the
// retention cut in the config: a move of the clock would purge it), and
// holds the purge's delete before it runs (held-key-purge), after all the
// purge read before it; sends a retry, which claims the key again and
// waits on the core; then lets the delete run and sends one more retry.
// A purge whose DELETE says in its own condition that the key is
// completed and expired keeps the claim, and that retry gets 409. On
// SQLite the purge's transaction holds the write lock, and the claim
// waits for it: the round is not tried there. A purge that deletes
// nothing from the key table within 10 s leaves nothing to judge.
func (t *T) purgedBesideLateClaim(s Scenario, latency time.Duration) (bool, error) {
	p, done, err := t.expiredPayment(s, labclient.Config{Retention: expiredCut})
	if done || err != nil {
		return p.tried, err
	}
	req, sent, books, ran := p.req, p.sent, s.Books, p.ran
	if err := t.Arm(labctl.HeldKeyPurge, 1); err != nil {
		return true, err
	}
	// Disarming lets the held delete go, whatever happens here.
	defer t.Arm(labctl.HeldKeyPurge, 0)
	purged := make(chan error, 1)
	go func() {
		_, err := t.Lab().Purge(t.ctx)
		purged <- err
	}()
	holding, err := t.Fired(10*time.Second, nil, labctl.HeldKeyPurge)
	if err == nil && holding == "" {
		err = t.Arm(labctl.HeldKeyPurge, 0)
	}
	if err != nil || holding == "" {
		<-purged
		return true, err
	}
	held, err := t.Hold(req, latency)
	if err != nil {
		t.Arm(labctl.HeldKeyPurge, 0)
		<-purged
		return true, err
	}
	if err := t.Arm(labctl.HeldKeyPurge, 0); err != nil {
		return true, err
	}
	if err := t.purgeFailure("POST /lab/purge", <-purged); err != nil {
		return true, err
	}
	retry := t.Do(req)
	late := held.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return true, err
	}
	if toldAnyRan(sentOp(req), late, retry) {
		// The key had expired: the payment runs once more, and once only.
		ran()
	}
	if !held.Seen && !lastHold(latency) {
		return false, t.Reconcile(sent, "", books)
	}
	sent += fmt.Sprintf("\nthen %v of lab time, and the retention cut to %v in the config: the key expired and is still in the table; POST /lab/purge, its first delete of the key table held (held-key-purge)"+
		"\nwhile it waits: the same request again, which waits %v on the core\nthen the purge's delete runs, and the same request once more  →  %s\nthe request before it answers  %s",
		expiredAge, expiredCut, latency, retry.Short(), late.Short())
	return true, because(t.Reconcile(sent, "the retry "+late.Short()+"; the one after it "+retry.Short(), books),
		"a purge says in its DELETE's own condition that a key is completed and expired: keys chosen by an earlier read and deleted by their names take with them the claim a late retry made in between, and the next retry pays a second time")
}

// purgedBesideReusedKey is S5.purge-keeps-in-progress's round that
// catches a purge that takes every row with an old completion time for
// a completed key. Forgetting an expired key need not be a DELETE: a
// claim may make the expired row the new request's, and a row so reused
// is in progress with its first completion time still in it unless the
// claim clears it. The round makes a payment, lets its key expire (the
// retention cut in the config: a move of the clock would purge it), and
// sends a new request under the key, which claims it again and waits on
// the core; while it waits, POST /lab/purge and a retry, which must get
// 409 request-in-progress. A purge whose condition says the key is
// completed keeps the claim whatever else the row holds.
func (t *T) purgedBesideReusedKey(s Scenario, latency time.Duration) (bool, error) {
	if err := t.Configure(labclient.Config{Lease: 72 * time.Hour, NoCoreLatency: true}); err != nil {
		return false, err
	}
	a, b, books := s.A, s.B, s.Books
	old, oldOp, oldAmount := s.Payment(t)
	books.Expect(oldOp)
	first := t.Do(old)
	if toldRan(first, oldOp) {
		books.Transfer(oldOp, a.Accounts[0], b.Accounts[0], oldAmount)
	}
	sent := old.String() + "  →  " + first.Short()
	if !toldRan(first, oldOp) {
		return true, t.Reconcile(sent, "", books)
	}
	// The retention must outlast the clients' retry horizon (an hour).
	const age, cut = 2 * time.Hour, 2*time.Hour - 10*time.Second
	if err := t.Advance(age); err != nil {
		return true, err
	}
	if err := t.Configure(labclient.Config{Retention: cut}); err != nil {
		return true, err
	}
	// A new payment under the expired key: another amount, another op.
	amount, op := t.Amount(1_000, 100_000), t.Op()
	req := Transfer(a, old.Key, TransferBody(a.Accounts[0], b.Accounts[0], amount, op))
	held, err := t.Hold(req, latency)
	if err != nil {
		return true, err
	}
	sent += fmt.Sprintf("\nthen %v of lab time, and the retention cut to %v in the config: the key expired and is still in the table"+
		"\nthen a new payment under that key: %s  (it waits %v on the core)", age, cut, req.String(), latency)
	if !held.Seen {
		late := held.Wait()
		books.Expect(op)
		if toldRan(late, op) {
			books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
		}
		if err := t.Reconcile(sent, late.Short(), books); err != nil || lastHold(latency) {
			return true, err
		}
		return false, nil // a slow machine may have looked too late: wait longer
	}
	if _, err := t.Purge(); err != nil {
		return true, fmt.Errorf("POST /lab/purge: %w", err)
	}
	early := held.Early()
	retry := t.Do(req)
	late := held.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return true, err
	}
	books.Expect(op)
	if toldAnyRan(op, late, retry) {
		books.Transfer(op, a.Accounts[0], b.Accounts[0], amount)
	}
	sent += "\nwhile it waits: POST /lab/purge, and the retry, the same request  →  " + retry.Short() + "\nthe new payment answers  " + late.Short()
	if err := t.Reconcile(sent, "the retry "+retry.Short()+"; the new payment "+late.Short(), books); err != nil {
		return true, because(err, "a purge removes only keys that say they are completed: a key claimed again after it expired is in progress, whatever completion time its row still holds, and a purge that takes it lets the next retry pay beside the request still running")
	}
	if !retry.Is(http.StatusConflict, pInProgress) && !early {
		return false, nil
	}
	if !retry.Is(http.StatusConflict, pInProgress) {
		return true, t.Fail(sent, retry.String(), "409 "+pInProgress+": the new payment under the key still runs")
	}
	return true, nil
}

// completedPurged gives err, a failure found once the original had
// completed, a why of its own: the key was no longer in progress, and what
// went wrong is a completed key purged (or forgotten) before its retention
// period, counted from its completion, had passed.
func completedPurged(err error) error {
	return because(err, "a completed key is kept for the retention period from its completion (completed_at): purged or forgotten sooner (with no condition on completed_at, or counted from created_at), the next retry is a new request and pays a second time")
}
