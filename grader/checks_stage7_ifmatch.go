package grader

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/labclient"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/stage"
)

// checkPreconditionRequired catches a server that takes a PUT without
// If-Match (or with If-Match: *) as "replace whatever is there".
func checkPreconditionRequired(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	for _, ifMatch := range []string{"", "*"} {
		change := start.Settings
		change.Nickname = t.nickname()
		req := putSettings(a, acc, change, ifMatch)
		r := t.Do(req)
		sent := story + "\n" + describe(req)
		after, err := t.readSettings(sent, a, acc)
		if err != nil {
			return err
		}
		if !r.Is(http.StatusPreconditionRequired, pPreconditionRequired) || after != start {
			return t.Fail(sent+"\nthen GET  →  "+after.String(), r.String(),
				"428 "+pPreconditionRequired+": the PUT names no version it was based on; the settings stay "+start.String())
		}
	}
	return nil
}

// checkIfMatchList holds If-Match to RFC 9110: true when any strong tag of
// the list is the current ETag, in one field or in several, first, last,
// between old ones or after the weak form of the current ETag; a weak tag
// never matches, alone or in a list; a header that is no list of tags names
// no version, and neither does an empty one (a list of no tags, not a PUT
// without If-Match), a tag of a version the account has not reached, alone
// or after an old one, or the current tag spelled another way (a 0 put in,
// its letters in the other case); an empty field beside others adds nothing
// to the list. A list as long as the contract reads
// (request.MaxIfMatchTags) is read whole, the current tag last or first
// among the tags of other versions the account had, each listed once (on
// A's other account, saved as often as that takes, whose ETag then names a
// version the first has not reached). It catches a server that reads the
// header as one tag (every list refused), one that reads one tag of the
// list (the last, say), one that tells a PUT without If-Match by the
// header's first value (an empty field taken for none, 428), one that reads
// only its first few tags or its last few, repeats dropped or not, one that
// compares weakly (W/ stripped), one that refuses a whole list for a weak
// tag in it, one whose write takes any version up to the tag's, one whose
// write takes any version between the lowest and the highest listed (two
// parameters for a list of any length), and one that reads the version out
// of a tag as a number, whatever its spelling ("v03" for "v3"), or that
// compares tags case-insensitively ("V3" for "v3").
func checkIfMatchList(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	// prev is the ETag of the version before cur: old, and ours.
	cur, prev := start, start
	other := `"` + t.Key() + `"`
	for _, list := range []string{"other, current", "other | current", "empty | current", "weak, current", "current, old", "old, current, old"} {
		next := cur.Settings
		next.Nickname = t.nickname()
		req := putSettings(a, acc, next, "")
		what, why := "", listRefusedWhy
		switch list {
		case "other, current":
			what = "If-Match lists a tag that is not ours, then the current one"
			req.Header.Add("If-Match", other+", "+cur.ETag)
		case "other | current":
			what = "the same list in two If-Match fields"
			req.Header.Add("If-Match", other)
			req.Header.Add("If-Match", cur.ETag)
		case "empty | current":
			what = "an empty If-Match field, then the current ETag in another: the empty one adds no tag to the list"
			why = "an empty If-Match field adds no tag to the list the other fields make: a server that reads the header's first value, and takes the empty one for no If-Match at all, tells a clerk whose copy is current to send the header it sent"
			req.Header.Add("If-Match", "")
			req.Header.Add("If-Match", cur.ETag)
		case "weak, current":
			what = "If-Match lists the current ETag weak, then strong: the weak tag never matches, the strong one does"
			why = "a weak tag in a list only fails to match: a server that refuses the whole list for it refuses the strong tag beside it, the current one, and a clerk whose copy is current with it"
			req.Header.Add("If-Match", "W/"+cur.ETag+", "+cur.ETag)
		case "current, old":
			what = "If-Match lists the current ETag first, then an old one"
			req.Header.Add("If-Match", cur.ETag+", "+start.ETag)
		case "old, current, old":
			what = "If-Match lists the current ETag between two old ones"
			req.Header.Add("If-Match", start.ETag+", "+cur.ETag+", "+prev.ETag)
		}
		etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
		if err != nil {
			return because(err, why)
		}
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + etag
		prev = cur
		if cur, err = t.readSettings(story, a, acc); err != nil {
			return err
		}
		story += "\nthen GET  →  " + cur.String()
	}
	// A's other account is saved until it has had as many ETags as a list
	// holds beside the current one (olds, each once): far more often than
	// this account, so its ETag names a version this one has not reached.
	twin := a.Accounts[1]
	ahead, err := t.readSettings(story, a, twin)
	if err != nil {
		return err
	}
	olds := []string{}
	had := func(etag string) {
		if !slices.Contains(olds, etag) {
			olds = append(olds, etag)
		}
	}
	saves := 0
	for ; len(olds) < request.MaxIfMatchTags-1 && saves < 2*request.MaxIfMatchTags; saves++ {
		had(ahead.ETag)
		if ahead, _, err = t.rename(story, "A's other account "+twin+" is saved", a, twin, ahead); err != nil {
			return err
		}
	}
	story += fmt.Sprintf("\nA's other account, %s, is saved %d times: ETag %s", twin, saves, ahead.ETag)
	// Lists as long as the contract reads, of its old tags and its
	// current one, last, then first: a server that reads a few tags of a
	// list, the first or the last, repeats dropped or not, misses it.
	for _, last := range []bool{true, false} {
		many := slices.DeleteFunc(slices.Clone(olds), func(etag string) bool { return etag == ahead.ETag })
		many = many[max(0, len(many)-(request.MaxIfMatchTags-1)):]
		list, order := append(many, ahead.ETag), fmt.Sprintf("%d of its old ETags, then its current one", len(many))
		if !last {
			list, order = append([]string{ahead.ETag}, many...), fmt.Sprintf("its current ETag, then %d old ones", len(many))
		}
		what := fmt.Sprintf("A renames its other account from an If-Match of %d tags, as many as the contract reads: %s", len(list), order)
		had(ahead.ETag)
		next, req, err := t.renameIf(story, what, a, twin, ahead, strings.Join(list, ", "))
		if err != nil {
			return because(err, "a list as long as the contract reads is read whole: a server that reads only its first few tags or its last few, repeats dropped or not, refuses a clerk whose current tag lies in the part it left unread, and nothing in its own tests, which send one or two tags, shows it")
		}
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + next.ETag
		ahead = next
	}
	type probe struct{ ifMatch, because, why string }
	const (
		aheadWhy = "a tag names one version: a write that takes any version up to the newest tag listed, or between the lowest and the highest (two parameters for a list of any length), lets a stale copy through with a tag of a version the account has not reached, another account's, alone or after an old one, and the stale copy's daily limit is written over the one the owner set"
		weakWhy  = "a weak tag promises nothing about the bytes: a server that compares weakly (W/ stripped) lets it name the version a daily limit is written over"
		noTagWhy = "a header that is no list of tags names no version: a server that reads it as one anyway, or takes a list of no tags for a match, writes over whatever version it finds"
		textWhy  = "tags compare character by character: a server that reads the version out of a tag as a number, or compares tags case-insensitively, matches tags it never sent, and a client that spells a tag it made up can write over a version it never read"
	)
	probes := []probe{
		{ahead.ETag, "the other account's ETag: a version this account has not reached", aheadWhy},
		{start.ETag + ", " + ahead.ETag, "an old ETag, then the other account's: the current version lies between the two, and neither names it", aheadWhy},
		{"W/" + cur.ETag, "the current ETag, weak: If-Match compares strongly, and a weak tag never matches", weakWhy},
		{"W/" + cur.ETag + ", " + other, "a list whose only tag naming the current version is weak", weakWhy},
		{strings.Trim(cur.ETag, `"`), "the current ETag without its quotes: not an entity tag", noTagWhy},
		{"", "an If-Match that is there and empty: a list of no tags, none of them the current one, where a PUT without If-Match gets 428", noTagWhy},
		{padded(cur.ETag), "the current ETag with a 0 put in before its first digit, or after its opening quote if it has none: another tag, since tags compare character by character", textWhy},
	}
	// A tag without letters has no other case to be read in.
	if swapped := caseSwapped(cur.ETag); swapped != cur.ETag {
		probes = append(probes, probe{swapped, "the current ETag with the case of its letters swapped: another tag, since tags compare character by character", textWhy})
	}
	for _, p := range probes {
		change := cur.Settings
		change.Nickname = t.nickname()
		req := putSettings(a, acc, change, "")
		req.Header.Set("If-Match", p.ifMatch) // an empty one too
		r := t.Do(req)
		sent := story + "\n" + describe(req) + "  (" + p.because + ")"
		after, err := t.readSettings(sent, a, acc)
		if err != nil {
			return err
		}
		if !r.Is(http.StatusPreconditionFailed, pPreconditionFailed) || after != cur {
			why := p.why
			if after == cur && r.Status >= 400 {
				// Refused otherwise, nothing written: the why of the
				// probe's mistake, a write over a version, is not this
				// server's.
				why = refusedOtherwiseWhy
			}
			return because(t.Fail(sent+"\nthen GET  →  "+after.String(), r.String(),
				"412 "+pPreconditionFailed+": no strong tag of the list names the current version; the settings stay "+cur.String()), why)
		}
	}
	return nil
}

// listRefusedWhy is why checkIfMatchList fails when a list that names the
// current version is refused.
const listRefusedWhy = "clients and proxies send If-Match as a list, in one field or in several: a server that reads the whole header as one tag, or one tag of the list (the first, the last), refuses a clerk whose copy is current, who reads and saves again for nothing or gives up a change that was safe"

// refusedOtherwiseWhy is why checkIfMatchList fails when an If-Match
// that names no current version is refused with another answer than 412,
// and nothing is written.
const refusedOtherwiseWhy = "412 tells a client that no tag it sent names the current version, and that it must read the settings again before it writes: a server that refuses otherwise, an empty If-Match taken for none (428) or a tag it cannot read taken for a bad request (400), writes nothing, but sends its client after a mistake it did not make, such as an If-Match it did send"

// padded is etag with a 0 before its first digit (after its opening
// quote if it has none): another entity tag, byte for byte, which a
// version read out of the tag as a number ("v03", 3) takes for etag's.
func padded(etag string) string {
	i := strings.IndexAny(etag, "0123456789")
	if i < 0 {
		i = min(1, len(etag))
	}
	return etag[:i] + "0" + etag[i:]
}

// caseSwapped is etag with each ASCII letter in the other case: another
// entity tag, byte for byte, which a server that compares tags as it
// compares header names (case-insensitively) takes for etag's.
func caseSwapped(etag string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, etag)
}

// checkLimitRefusalReplayed catches a daily-limit refusal that is not
// stored with its key: once a clerk raises the limit, the retry of the
// refused transfer executes, and the client that was told "refused" has
// paid after all.
func checkLimitRefusalReplayed(t *T) error {
	s, start, story, err := t.clerkStart(bank.MaxDailyLimit)
	if err != nil {
		return err
	}
	a, acc, payee, books := s.A, s.A.Accounts[0], s.B.Accounts[0], s.Books
	if err := t.toNoon(); err != nil {
		return err
	}
	limit := t.Amount(10_000, 100_000)
	lowered := start.Settings
	lowered.DailyLimit = limit
	reqL := putSettings(a, acc, lowered, start.ETag)
	etag, err := t.saved(story+"\nclerk A lowers the limit:", reqL, t.Do(reqL), lowered)
	if err != nil {
		return err
	}
	story += "\n(the lab clock moves on to the next noon, UTC)\nclerk A lowers the limit: " + describe(reqL) + "  →  200"
	amount, op := limit+t.Amount(1, 50_000), t.Op()
	books.Expect(op)
	req := Transfer(a, t.Key(), TransferBody(acc, payee, amount, op))
	orig := t.Do(req)
	story += "\na transfer over it: " + req.String() + "  →  " + orig.Short()
	if toldRan(orig, op) {
		books.Transfer(op, acc, payee, amount)
	}
	if err := t.Reconcile(story, orig.String(), books); err != nil {
		return err
	}
	if !orig.Is(http.StatusUnprocessableEntity, pDailyLimit) {
		return t.Fail(story, orig.String(), "422 "+pDailyLimit+": the account's limit is "+fmt.Sprint(limit)+" won a day, and nothing moves")
	}
	raised := lowered
	raised.DailyLimit = bank.MaxDailyLimit
	reqR := putSettings(a, acc, raised, etag)
	if _, err := t.saved(story+"\nclerk A raises the limit again:", reqR, t.Do(reqR), raised); err != nil {
		return err
	}
	story += "\nclerk A raises the limit again: " + describe(reqR) + "  →  200\nthe transfer's answer had been lost: its client retries the same request"
	r := t.Do(req)
	if err := t.Reconcile(story, r.Short(), books); err != nil {
		return err
	}
	if d := replayValueMismatch(orig, r, "the original"); d != "" {
		return t.Harmful(replayHarm(orig, r), story, r.String()+"\n"+d, "the stored 422 "+pDailyLimit+", the same JSON value, with Idempotent-Replayed: true; nothing executes")
	}
	return nil
}

// checkDailyLimit catches an ETag blind to the daily limit (made from the
// nickname, or a version moved on only by a rename): clerk B's stale
// rename matches, puts the old limit back, and a transfer the owner capped
// goes through. It also catches a limit of 0 read as a member left out
// (Go's zero value) and not written: the owner who stops the account's
// transfers is told 200, and a transfer within the old limit goes through.
func checkDailyLimit(t *T) error {
	s, start, story, err := t.clerkStart(bank.MaxDailyLimit)
	if err != nil {
		return err
	}
	a, b, books := s.A, s.B, s.Books
	acc, payee := a.Accounts[0], b.Accounts[0]
	story += "\n(clerks A and B both hold that copy)"

	if err := t.toNoon(); err != nil {
		return err
	}
	story += "\n(the lab clock moves on to the next noon, UTC)"
	limit := t.Amount(100_000, 300_000)
	lowered := start.Settings
	lowered.DailyLimit = limit
	reqA := putSettings(a, acc, lowered, start.ETag)
	if _, err := t.saved(story+"\nclerk A lowers the limit:", reqA, t.Do(reqA), lowered); err != nil {
		return err
	}
	story += "\nclerk A lowers the limit: " + describe(reqA) + "  →  200"
	renamed := start.Settings
	renamed.Nickname = t.nickname()
	reqB := putSettings(a, acc, renamed, start.ETag)
	rb := t.Do(reqB)
	story += "\nclerk B, from its copy, renames the account: " + describe(reqB) + "  →  " + rb.Short()

	pay := func(amount int64) (Request, Response) {
		op := t.Op()
		books.Expect(op)
		req := Transfer(a, t.Key(), TransferBody(acc, payee, amount, op))
		r := t.Do(req)
		if toldRan(r, op) {
			books.Transfer(op, acc, payee, amount)
		}
		return req, r
	}
	over := limit + t.Amount(1, 50_000)
	req, r := pay(over)
	story += "\na transfer over A's limit: " + req.String() + "  →  " + r.Short()
	if toldRan(r, sentOp(req)) && rb.Is(http.StatusOK, "") {
		return t.Harmful(judging.LostUpdate, story, r.String()+fmt.Sprintf("\nB's stale rename put the limit of %d back, and %d won moved past A's limit of %d", start.DailyLimit, over, limit),
			"412 "+pPreconditionFailed+" to B's stale rename, and the transfer refused: 422 "+pDailyLimit+", nothing moved")
	}
	if !r.Is(http.StatusUnprocessableEntity, pDailyLimit) {
		return t.Fail(story, r.String(), "422 "+pDailyLimit+": the account's limit is "+fmt.Sprint(limit)+" won a day, and nothing moves")
	}
	half := limit / 2
	req, r = pay(half)
	story += "\na transfer within it: " + req.String() + "  →  " + r.Short()
	if within := "201 Created: " + fmt.Sprint(half) + " is within the day's limit of " + fmt.Sprint(limit); !toldRan(r, sentOp(req)) {
		return t.Fail(story, r.String(), within)
	} else if !r.Is(http.StatusCreated, "") {
		// Told it ran in another 2xx: a contract difference; the day's
		// total, the next day and the limit of 0 are still judged.
		t.Differ(story, r.String(), within)
	}
	rest := limit - half + 1
	req, r = pay(rest)
	story += "\nthen one that takes the day 1 won over: " + req.String() + "  →  " + r.Short()
	if !r.Is(http.StatusUnprocessableEntity, pDailyLimit) {
		return t.Fail(story, r.String(), "422 "+pDailyLimit+": the day's transfers would come to "+fmt.Sprint(limit+1))
	}
	if err := t.Advance(24 * time.Hour); err != nil {
		return err
	}
	req, r = pay(rest)
	story += "\n24h later on the lab clock, the same amount: " + req.String() + "  →  " + r.Short()
	if newDay := "201 Created: a new day, and the limit counts from zero again"; !toldRan(r, sentOp(req)) {
		return t.Fail(story, r.String(), newDay)
	} else if !r.Is(http.StatusCreated, "") {
		t.Differ(story, r.String(), newDay)
	}
	// A limit of 0 stops the account's transfers: it is a limit like any
	// other, not a member left out (Go's zero value).
	now, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	stop := now.Settings
	stop.DailyLimit = 0
	reqS := putSettings(a, acc, stop, now.ETag)
	if _, err := t.saved(story+"\nclerk A stops the account's transfers:", reqS, t.Do(reqS), stop); err != nil {
		return err
	}
	story += "\nclerk A stops the account's transfers: " + describe(reqS) + "  →  200"
	small := t.Amount(1, limit-rest)
	req, r = pay(small)
	story += fmt.Sprintf("\na transfer of %d won, within the limit of %d there was: ", small, limit) + req.String() + "  →  " + r.Short()
	if err := t.Reconcile(story, r.String(), books); err != nil {
		return err
	}
	if toldRan(r, sentOp(req)) {
		return t.Harmful(judging.LostUpdate, story, r.String()+fmt.Sprintf("\nA was told the limit of 0 was saved, and %d won moved under the limit of %d it replaced", small, limit),
			"422 "+pDailyLimit+": a daily limit of 0 lets no transfer through; nothing moves")
	}
	if !r.Is(http.StatusUnprocessableEntity, pDailyLimit) {
		return t.Fail(story, r.String(), "422 "+pDailyLimit+": a daily limit of 0 lets no transfer through; nothing moves")
	}
	if !rb.Is(http.StatusPreconditionFailed, pPreconditionFailed) {
		return t.Fail(story, rb.String(), "412 "+pPreconditionFailed+" to B's rename: its copy is of the version A's PUT replaced")
	}
	return t.raiseBeforeConfirmed(story, a, acc, limit)
}

// unconfirmedLatency is how long the core takes to confirm the raise
// raiseBeforeConfirmed watches.
const unconfirmedLatency = 2 * time.Second

// raiseBeforeConfirmed, the end of S7.daily-limit, catches a save written
// before the core confirms it (the conditional write first, the core's
// confirmation after, so that a stale copy gets its 412 without a wait):
// clerk A raises the stopped account's limit while the core takes
// unconfirmedLatency to confirm it, and the check reads the settings
// while it waits. A read answered before half that wait was over, when
// no confirmation can have come, must show the settings as they were:
// a raise in force before the core confirmed it lets money out even if
// the confirmation never comes (the clerk hangs up, the call fails). Once
// confirmed, the raise is answered 200 with what it saved. Then clerk A
// raises it again and hangs up a quarter of the wait after sending (see
// raiseAbandoned).
func (t *T) raiseBeforeConfirmed(story string, a bank.Customer, acc string, limit int64) error {
	cur, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	raised := cur.Settings
	raised.DailyLimit = limit
	req := putSettings(a, acc, raised, cur.ETag)
	if err := t.Configure(labclient.Config{CoreLatency: unconfirmedLatency}); err != nil {
		return err
	}
	sent := time.Now()
	p := t.Launch(req)
	get := Request{Method: "GET", Path: settingsPath(acc), Token: a.Token}
	early, err := t.readBeforeConfirmed(get, cur.ETag, sent, unconfirmedLatency/2, p.Done)
	r := p.Wait()
	if cerr := t.Configure(labclient.Whole(stage.DefaultConfig())); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	story += fmt.Sprintf("\nclerk A raises the limit to %d again, the core taking %v to confirm it: ", limit, unconfirmedLatency) + describe(req)
	if early.Status != 0 {
		return t.Fail(story+"\nwhile it waits on the core, GET "+settingsPath(acc), early.String()+", ETag "+early.Header.Get("ETag"),
			"the settings as they were, "+cur.String()+", until the core has confirmed the raise: a limit in force before its confirmation lets transfers through under a raise the core may never confirm")
	}
	if _, err = t.saved(story+"  →", req, r, raised); err != nil {
		return err
	}
	return t.raiseAbandoned(story+"  →  200", a, acc, limit)
}

// raiseAbandoned, the last step of S7.daily-limit, catches a save whose
// clerk hangs up while the core confirms it and that writes all the same,
// the core's error dropped (a save carried through once begun, its write
// under a context that outlives the request): clerk A raises the limit
// again, the core taking unconfirmedLatency, and hangs up a quarter of
// that after its request has gone. No confirmation can have come before
// the wait was over, and a read answered before three quarters of it
// must show the settings as they were: the wrong server writes as the
// hang-up cancels its call, and has half the wait to reach the database
// on a loaded machine. A server that lets the core finish and writes once
// it confirms writes after the whole wait: that raise was confirmed.
func (t *T) raiseAbandoned(story string, a bank.Customer, acc string, limit int64) error {
	cur, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	raised := cur.Settings
	raised.DailyLimit = limit + t.Amount(1_000, 100_000)
	req := putSettings(a, acc, raised, cur.ETag)
	if err := t.Configure(labclient.Config{CoreLatency: unconfirmedLatency}); err != nil {
		return err
	}
	sent := time.Now()
	gone := t.Abandon(req, AfterSent, unconfirmedLatency/4)
	get := Request{Method: "GET", Path: settingsPath(acc), Token: a.Token}
	// The reads go on after the client has hung up: the save is judged by
	// what the server does without it.
	early, err := t.readBeforeConfirmed(get, cur.ETag, sent, 3*unconfirmedLatency/4, func() bool { return false })
	r := gone.Wait()
	if cerr := t.Configure(labclient.Whole(stage.DefaultConfig())); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	story += fmt.Sprintf("\nclerk A raises the limit to %d, the core taking %v to confirm it, and hangs up %v after sending: ",
		raised.DailyLimit, unconfirmedLatency, unconfirmedLatency/4) + describe(req) + "  →  " + r.Short()
	if early.Status != 0 {
		return t.Fail(story+"\nwhile the core would still be confirming it, GET "+settingsPath(acc), early.String()+", ETag "+early.Header.Get("ETag"),
			"the settings as they were, "+cur.String()+": the clerk hung up before the core confirmed the raise, and a limit written without its confirmation lets transfers through under a raise the core never confirmed")
	}
	return nil
}

// readBeforeConfirmed reads the settings with get until window has
// passed since sent (less than unconfirmedLatency), or done says the
// save has been answered, and returns the first read answered in that
// time whose ETag is not was: the settings changed before the core can
// have confirmed the save. Reads go on for the whole window: the
// server's write may reach the database late on a loaded machine, and a
// read answered within it is judged whenever it was sent. It reads every
// settingsPoll, not as often as WaitFor looks: a write it is there to
// see stays written, so a read need only land inside the window after it.
// It returns a Response of no status if none changed.
func (t *T) readBeforeConfirmed(get Request, was string, sent time.Time, window time.Duration, done func() bool) (Response, error) {
	var early Response
	_, err := judging.WaitFor(t.ctx, window, settingsPoll, func() (bool, error) {
		if done() {
			return true, nil
		}
		r := t.Do(get)
		if time.Since(sent) < window && r.Is(http.StatusOK, "") && r.Header.Get("ETag") != was {
			early = r
			return true, nil
		}
		return false, nil
	})
	return early, err
}

// settingsPoll is how often readBeforeConfirmed reads the settings: a
// write made before the core can have confirmed it lands half the wait
// or more before the window ends (at once, or as the clerk hangs up a
// quarter of the way through), and a read every 20 ms sees it dozens of
// times over, where one every few milliseconds only loads a machine the
// server's write shares.
const settingsPoll = 20 * time.Millisecond

// toNoon moves the lab clock on to the next noon (UTC): a story that
// counts one day's transfers never straddles a midnight.
func (t *T) toNoon() error {
	now, err := t.Lab().Advance(t.ctx, 0)
	if err != nil {
		return err
	}
	return t.Advance(bank.DayStart(now).Add(36 * time.Hour).Sub(now))
}

// checkETagNamesTheVersion catches an ETag that a write does not change
// (the version not moved on, or only by a rename, or not by a save that
// changes nothing), a weak one, a PUT that answers settings the next GET
// does not show (an empty nickname read as a member left out, and the old
// one kept), and a PUT that answers an ETag the next GET does not show:
// the one it was sent, or a version it did not make, such as the one
// after the first tag of an If-Match list, or after the highest (a list
// of the current ETag and a tag this account has not reached yet: A's
// other account's, saved twice more than this one).
func checkETagNamesTheVersion(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	strong := func(etag string) bool {
		return len(etag) >= 2 && strings.HasPrefix(etag, `"`) && strings.HasSuffix(etag, `"`)
	}
	if !strong(start.ETag) {
		return t.Fail(story, "ETag "+start.ETag, `a strong ETag: a quoted string, "…", without W/ (If-Match compares strongly)`)
	}
	again, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	if again != start {
		return t.Fail(story+"\nGET again", again.String(), "the same settings at the same ETag: nothing changed them")
	}
	cur, saves := start, 1
	for _, change := range []string{"daily_limit", "nickname", "cleared", "nothing", "listed", "ahead"} {
		next := cur.Settings
		ifMatch := cur.ETag
		switch change {
		case "daily_limit":
			next.DailyLimit += t.Amount(1_000, 100_000)
		case "nickname", "listed", "ahead":
			next.Nickname = t.nickname()
		case "cleared":
			// An empty nickname is one a clerk may save, not a member
			// left out: the PUT replaces the whole representation.
			next.Nickname = ""
		}
		what := "change only the " + change
		switch change {
		case "cleared":
			what = "clear the nickname"
		case "nothing":
			what = "save the settings as they are"
		case "listed":
			// The answer names the version this save made, not one
			// worked out from the first tag of the list.
			what = "rename from a list of an old ETag, then the current one"
			ifMatch = start.ETag + ", " + cur.ETag
		case "ahead":
			// Nor one worked out from the highest tag: where a version
			// counts saves, the other account's tag names a version this
			// account has not reached, so only the current ETag matches.
			other := a.Accounts[1]
			ahead, err := t.readSettings(story, a, other)
			if err != nil {
				return err
			}
			for range saves + 2 {
				if ahead, _, err = t.rename(story, "A's other account is saved", a, other, ahead); err != nil {
					return err
				}
			}
			story += fmt.Sprintf("\nA's other account, %s, is saved %d times, from its GET on: ETag %s", other, saves+2, ahead.ETag)
			what = "rename from a list of the current ETag, then the other account's, one this account has not reached"
			ifMatch = cur.ETag + ", " + ahead.ETag
		}
		req := putSettings(a, acc, next, ifMatch)
		etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
		if err != nil {
			return err
		}
		saves++
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + etag
		if etag == cur.ETag || !strong(etag) {
			return t.Fail(story, "ETag "+etag, "a new strong ETag: every successful PUT makes a new version, one that changes nothing included, so the version the old one names is gone")
		}
		now, err := t.readSettings(story, a, acc)
		if err != nil {
			return err
		}
		if now.Settings != next {
			// The clerk was told its change was saved, and it was not.
			return t.Harmful(judging.LostUpdate, story+"\nthen GET", now.String()+"\nthe PUT answered 200 with "+settingsJSON(next)+"; GET shows other settings",
				"the settings saved, at the ETag the PUT answered: "+settingsJSON(next)+", ETag "+etag)
		}
		if now.ETag != etag {
			return t.Fail(story+"\nthen GET", now.String()+"\nthe PUT answered ETag "+etag+"; GET shows "+now.ETag,
				"GET shows the ETag the PUT answered, the version its save made. Told "+etag+", the clerk's next save, from it, is refused 412 though nobody else saved; and once later saves bring the settings to "+etag+", that copy, stale by then, matches, and its save puts back what they changed")
		}
		cur = now
	}
	return nil
}

// checkSettingsContract holds the settings to the contract of every
// account route and of a transfer's body. It first holds a PUT to the
// account it names (saveOwnAccountOnly). The owner and the account come
// before If-Match: another customer's PUT is 403, and one to no account
// 404, without If-Match or with an old ETag as with the current one; a
// server that holds them to If-Match first answers a stranger 412 for
// every ETag but the current one, and so tells which version is current.
// The body comes before If-Match too: an invalid one is 400 without
// If-Match or from an old ETag, where a server that reads it after
// If-Match answers 428 or 412. An If-Match of more tags than the contract
// reads (request.MaxIfMatchTags) is 400 too, the current ETag among them,
// where a server that drops the kit's error answers 412.
func checkSettingsContract(t *T) error {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, b, acc := s.A, s.B, s.A.Accounts[0]
	start, old, err := t.saveOwnAccountOnly(s)
	if err != nil {
		return err
	}
	story := "the owner: GET " + settingsPath(acc) + "  →  " + start.String()
	long := strings.Repeat("가", bank.MaxNickname+1)
	type probe struct {
		req            Request
		status         int
		ptype, because string
	}
	put := func(body string) Request {
		req := putSettings(a, acc, bank.Settings{}, start.ETag)
		req.Body = body
		return req
	}
	probes := []probe{
		{Request{Method: "GET", Path: settingsPath(acc)}, 401, problem.Unauthorized.URI(), "no token"},
		{putSettings(bank.Customer{}, acc, start.Settings, start.ETag), 401, problem.Unauthorized.URI(), "no token"},
		{Request{Method: "GET", Path: settingsPath(acc), Token: b.Token}, 403, pForbidden, "another customer's account"},
		{putSettings(b, acc, bank.Settings{Nickname: "mine now"}, start.ETag), 403, pForbidden, "another customer's account"},
		{putSettings(b, acc, bank.Settings{Nickname: "mine now"}, old), 403, pForbidden, "another customer's account, from an old ETag: the owner comes before If-Match"},
		{putSettings(b, acc, bank.Settings{Nickname: "mine now"}, ""), 403, pForbidden, "another customer's account, without If-Match: the owner comes before If-Match"},
		{Request{Method: "GET", Path: settingsPath("acc_nosuchacc"), Token: a.Token}, 404, problem.NotFound.URI(), "no such account"},
		{putSettings(a, "acc_nosuchacc", start.Settings, start.ETag), 404, problem.NotFound.URI(), "no such account"},
		{putSettings(a, "acc_nosuchacc", start.Settings, old), 404, problem.NotFound.URI(), "no such account, from an old ETag: the account comes before If-Match"},
		{putSettings(a, "acc_nosuchacc", start.Settings, ""), 404, problem.NotFound.URI(), "no such account, without If-Match: the account comes before If-Match"},
	}
	for _, bad := range []struct{ body, because string }{
		{`{"nickname":"x","daily_limit":1000,"color":"red"}`, "an unknown member"},
		{`{"nickname":"x"}`, "a member missing: a PUT sends the whole representation"},
		{`{"nickname":5,"daily_limit":1000}`, "a nickname that is not a string"},
		{`{"nickname":"` + long + `","daily_limit":1000}`, "a nickname over 64 characters"},
		{`{"nickname":"a\u0007b","daily_limit":1000}`, "a control character in the nickname"},
		{`{"nickname":"x","daily_limit":-1}`, "a negative limit"},
		{`{"nickname":"x","daily_limit":1000000000000001}`, "a limit over 1,000,000,000,000,000"},
		{`{"nickname":"x","daily_limit":1.5}`, "a limit that is not a whole number of won"},
		{`{"nickname":"x","daily_limit":"1000"}`, "a limit that is a string"},
		{`{"nickname":"x","nickname":"y","daily_limit":1000}`, "a member twice"},
		{`[]`, "not an object"},
		{`{"nickname":"x","daily_limit":1000}{"nickname":"y","daily_limit":1000}`, "a second object after the first"},
		{`{"nickname":"x","daily_limit":1e16}`, "a limit of 1e16, over 1,000,000,000,000,000"},
	} {
		probes = append(probes, probe{put(bad.body), 400, problem.InvalidRequest.URI(), bad.because})
	}
	// An invalid body would not be written whatever If-Match says: it is
	// 400 from an old ETag and without one too, never 412 or 428.
	for _, p := range []struct{ ifMatch, because string }{
		{old, "a member missing, from an old ETag: the body comes before If-Match"},
		{"", "a member missing, without If-Match: the body comes before If-Match"},
	} {
		req := putSettings(a, acc, bank.Settings{}, p.ifMatch)
		req.Body = `{"nickname":"x"}`
		probes = append(probes, probe{req, 400, problem.InvalidRequest.URI(), p.because})
	}
	// A list longer than the contract reads is refused whole, even with
	// the current ETag in it: the client learns that its list is too
	// long, not that someone changed the settings.
	listed := putSettings(a, acc, start.Settings, strings.Repeat(old+", ", request.MaxIfMatchTags)+start.ETag)
	probes = append(probes, probe{listed, 400, problem.InvalidRequest.URI(),
		fmt.Sprintf("If-Match lists %d entity tags, the current one last: more than the %d the contract reads", request.MaxIfMatchTags+1, request.MaxIfMatchTags)})
	for _, p := range probes {
		sent := story + "\n" + describe(p.req) + "  (" + p.because + ")"
		if err := t.refused(sent, p.req, p.status, p.ptype, a, acc, start); err != nil {
			return err
		}
	}
	return nil
}

// saveOwnAccountOnly catches a write whose WHERE reaches past the account
// in the path: the account left out of it, or an OR that no parentheses
// hold to the account. Clerk A saves A's first account from the ETag a
// GET gave, then, once A's second account and B's first have each been
// saved once by their owners (as many saves as A's: the same version,
// where a version counts saves), from a list of A's first ETag and its
// current one. After each of A's saves, the other two must be as their
// owners last saw them. It returns A's settings as a GET then shows them,
// and the ETag of the first copy, old by then.
func (t *T) saveOwnAccountOnly(s Scenario) (settingsCopy, string, error) {
	a, acc := s.A, s.A.Accounts[0]
	others := []struct {
		owner             bank.Customer
		who, account, how string // how: what the owner sees if A's save reached it
		harm              judging.Harm
	}{
		{s.B, "B's account", s.B.Accounts[0], "B is shown A's nickname, and its daily limit is the one A set", judging.Leak},
		{a, "A's other account", a.Accounts[1], "its nickname and daily limit are the ones A saved on " + acc, judging.LostUpdate},
	}
	first, err := t.readSettings("", a, acc)
	if err != nil {
		return settingsCopy{}, "", err
	}
	story := "clerk A: GET " + settingsPath(acc) + "  →  " + first.String()
	copies := make([]settingsCopy, len(others))
	for i, o := range others {
		if copies[i], err = t.readSettings(story, o.owner, o.account); err != nil {
			return settingsCopy{}, "", err
		}
		story += "\n" + o.who + ", as its owner: GET " + settingsPath(o.account) + "  →  " + copies[i].String()
	}
	// untouched holds the other accounts to what their owners last saw.
	untouched := func(story string) error {
		for i, o := range others {
			sent := story + "\nthen " + o.who + ", as its owner: GET " + settingsPath(o.account)
			now, err := t.readSettings(sent, o.owner, o.account)
			if err != nil {
				return err
			}
			if now != copies[i] {
				return t.Harmful(o.harm, sent, now.String()+"\n"+o.how,
					o.who+" as its owner last saw it, "+copies[i].String()+": a PUT writes the settings of the account in its path, and no other")
			}
		}
		return nil
	}
	save := func(what, ifMatch string) (settingsCopy, error) {
		next := bank.Settings{Nickname: t.nickname(), DailyLimit: t.Amount(100_000, 500_000)}
		req := putSettings(a, acc, next, ifMatch)
		etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
		if err != nil {
			return settingsCopy{}, err
		}
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + etag
		return settingsCopy{Settings: next, ETag: etag}, untouched(story)
	}
	mine, err := save("clerk A sets a nickname and a daily limit", first.ETag)
	if err != nil {
		return settingsCopy{}, "", err
	}
	for i, o := range others {
		var req Request
		if copies[i], req, err = t.rename(story, o.who+" is saved once too, by its owner", o.owner, o.account, copies[i]); err != nil {
			return settingsCopy{}, "", err
		}
		story += "\n" + o.who + " is saved once too, by its owner: " + describe(req) + "  →  200, ETag " + copies[i].ETag
	}
	if _, err := save("clerk A saves again, from a list of its first ETag, then its current one", first.ETag+", "+mine.ETag); err != nil {
		return settingsCopy{}, "", err
	}
	now, err := t.readSettings(story, a, acc)
	return now, first.ETag, err
}

// refused sends req, which must get status with problem type ptype and
// leave the settings of account, as c reads them, at start; sent tells
// the story for a failure. A 412 where 403 is due is a leak: it tells
// another customer that its ETag is not the current one.
func (t *T) refused(sent string, req Request, status int, ptype string, c bank.Customer, account string, start settingsCopy) error {
	r := t.Do(req)
	if status == http.StatusForbidden && r.Is(http.StatusPreconditionFailed, "") {
		return t.Harmful(judging.Leak, sent, r.String()+"\na stranger told which ETags are not the current version learns which one is",
			fmt.Sprintf("%d %s whatever If-Match says, and nothing changes", status, ptype))
	}
	if !r.Is(status, ptype) {
		return t.Fail(sent, r.String(), fmt.Sprintf("%d %s, and nothing changes", status, ptype))
	}
	after, err := t.readSettings(sent, c, account)
	if err != nil {
		return err
	}
	if after != start {
		return t.Fail(sent+"\nthen GET", after.String(), "the settings unchanged: "+start.String())
	}
	return nil
}

// checkSettingsHiddenCharacters catches a nickname checked for control
// characters only, or cleaned instead of refused (the character taken
// out, a byte that is not UTF-8 turned into U+FFFD, as encoding/json
// does): each character the contract refuses, sent as it is, must get
// 400 invalid-request and change nothing. It also catches the overshoot,
// a server that refuses every invisible character: an emoji sequence
// joined by U+200D, which a reader sees as one picture, must be saved.
func checkSettingsHiddenCharacters(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	limit := strconv.FormatInt(start.DailyLimit, 10)
	for _, bad := range []struct{ nickname, because string }{
		{"pay\u202eroll", "U+202E RIGHT-TO-LEFT OVERRIDE, which shows what follows it backwards"},
		{"rent\u200b", "U+200B ZERO WIDTH SPACE at the end"},
		{"\ufeffrent", "U+FEFF ZERO WIDTH NO-BREAK SPACE at the start"},
		{`rent\ufeff`, "U+FEFF written as a JSON escape"},
		{"rent\u2028bills", "U+2028 LINE SEPARATOR"},
		{"rent\u2029bills", "U+2029 PARAGRAPH SEPARATOR"},
		{"rent\ue000", "U+E000, a private-use code point"},
		{"rent\u0378", "U+0378, a code point no character is assigned to"},
		{"rent\u200d", "U+200D ZERO WIDTH JOINER at the end, joining nothing"},
		{"rent\xffbills", "the byte FF, which is not UTF-8"},
	} {
		req := putSettings(a, acc, bank.Settings{}, start.ETag)
		req.Body = `{"nickname":"` + bad.nickname + `","daily_limit":` + limit + `}`
		sent := story + "\n" + visible(describe(req)) + "  (" + bad.because + ")"
		if err := t.refused(sent, req, http.StatusBadRequest, problem.InvalidRequest.URI(), a, acc, start); err != nil {
			return err
		}
	}
	family := start.Settings
	family.Nickname = "\U0001F469\u200d\U0001F469\u200d\U0001F467 family"
	req := putSettings(a, acc, family, start.ETag)
	_, err = t.saved(story+"\n(an emoji sequence joined by U+200D, seen as one picture)", req, t.Do(req), family)
	return err
}

// visible spells out, for a report, what a reader of the terminal would
// not see: every character outside printable ASCII as <U+XXXX>, and a
// byte that is not UTF-8 as <0xXX>.
func visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			fmt.Fprintf(&b, "<0x%02X>", s[i])
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&b, "<%U>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkOldCopies catches a version compared by something weaker than
// equality (as text, by prefix, as "at least"), and a version set from a
// tag of the If-Match list instead of moved on (a list that names an old
// copy first takes the version back to one that copy's successor held):
// after a dozen saves from the settings as they were made, the last from
// a list of the first ETag and the current one, a PUT from every copy
// read before the last save, oldest first, must get 412 and change
// nothing. Every old copy is tried, even after one gets through, so that
// the report lists all of them.
func checkOldCopies(t *T) error {
	const saves = 12
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	// The copy of the settings as they were made, before any save: a
	// version read as text then meets its own prefix (1 and 13).
	start, err := t.readSettings("", a, acc)
	if err != nil {
		return err
	}
	story := "GET " + settingsPath(acc) + "  →  " + start.String()
	old := []string{start.ETag}
	cur := start
	for range saves - 1 {
		if cur, _, err = t.rename(story, "clerk A saves a new nickname", a, acc, cur); err != nil {
			return err
		}
		old = append(old, cur.ETag)
	}
	story += fmt.Sprintf("\nclerk A saves a new nickname %d times, from %s on, each from the ETag the save before answered: %s", saves-1, old[0], strings.Join(old[1:], ", "))
	// The last save lists the first copy's ETag before the current one,
	// as a client that holds both may: its version must be new all the
	// same, not one worked out from a tag of the list.
	what := "then once more, from a list of the first ETag and the current one"
	cur, req, err := t.renameIf(story, what, a, acc, cur, start.ETag+", "+cur.ETag)
	if err != nil {
		return err
	}
	story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + cur.ETag
	if now, err := t.readSettings(story, a, acc); err != nil {
		return err
	} else if now != cur {
		return t.Fail(story+"\nthen GET", now.String(), "the last save, at the ETag it answered: "+cur.String())
	}
	last := cur
	var through, wrong []string
	for _, etag := range old {
		stale := cur.Settings
		stale.DailyLimit = t.Amount(100_000, 500_000)
		req := putSettings(a, acc, stale, etag)
		r := t.Do(req)
		after, err := t.readSettings(story+"\n"+describe(req), a, acc)
		if err != nil {
			return err
		}
		switch {
		case after != cur:
			through = append(through, describe(req)+"  →  "+r.Short()+", then GET  →  "+after.String())
			cur = after
		case !r.Is(http.StatusPreconditionFailed, pPreconditionFailed):
			wrong = append(wrong, describe(req)+"  →  "+r.String())
		}
	}
	story += "\nthen a clerk sets the daily limit from each copy read before, oldest first"
	if len(through) > 0 {
		got := fmt.Sprintf("%d of %d old copies were written:\n", len(through), len(old)) + strings.Join(through, "\n")
		if slices.Contains(old, last.ETag) {
			got = "the last save answered ETag " + last.ETag + ", the ETag of a copy read before it\n" + got
		}
		return t.Harmful(judging.LostUpdate, story, got,
			"412 "+pPreconditionFailed+" to every one: an If-Match names the current version only if it is the ETag the last save answered; nothing changes")
	}
	if len(wrong) > 0 {
		return t.Fail(story, strings.Join(wrong, "\n"), "412 "+pPreconditionFailed+" to every one, and nothing changes")
	}
	return nil
}
