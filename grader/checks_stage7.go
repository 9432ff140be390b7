package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/problem"
)

// settingsPath is the settings resource of account.
func settingsPath(account string) string { return "/accounts/" + account + "/settings" }

// settingsCopy is what a clerk holds after a GET: the settings and the
// ETag that names their version.
type settingsCopy struct {
	bank.Settings
	ETag string
}

func (c settingsCopy) String() string {
	return fmt.Sprintf("%s, ETag %s", settingsJSON(c.Settings), c.ETag)
}

// settingsJSON writes settings as a PUT body.
func settingsJSON(s bank.Settings) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// putSettings is a PUT of the whole settings of account by c, with
// If-Match: ifMatch ("" sends none).
func putSettings(c bank.Customer, account string, s bank.Settings, ifMatch string) Request {
	req := Request{Method: "PUT", Path: settingsPath(account), Token: c.Token, Body: settingsJSON(s), Header: http.Header{}}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return req
}

// describe writes a request with its If-Match, for a report.
func describe(req Request) string {
	s := req.Method + " " + req.Path
	for _, v := range req.Header.Values("If-Match") {
		s += "  If-Match: " + v
	}
	if req.Body != "" {
		s += "  " + req.Body
	}
	return s
}

// readSettings GETs the settings of account as c. It returns a failure if
// the answer is not 200 with the two members and an ETag.
func (t *T) readSettings(story string, c bank.Customer, account string) (settingsCopy, error) {
	r := t.Do(Request{Method: "GET", Path: settingsPath(account), Token: c.Token})
	sent := strings.TrimPrefix(story+"\nGET "+settingsPath(account), "\n")
	const expected = `200 with {"nickname":…,"daily_limit":…} and a strong ETag`
	if !r.Is(http.StatusOK, "") {
		return settingsCopy{}, t.Fail(sent, r.String(), expected)
	}
	s, ok := decodeSettings(r.Body)
	if !ok {
		return settingsCopy{}, t.Fail(sent, r.String(), expected)
	}
	etag := r.Header.Get("ETag")
	if etag == "" {
		return settingsCopy{}, t.Fail(sent, r.String()+" (no ETag header)", expected)
	}
	return settingsCopy{Settings: s, ETag: etag}, nil
}

// decodeSettings reads a settings body: both members, nothing else.
func decodeSettings(body []byte) (bank.Settings, bool) {
	var s struct {
		Nickname   *string `json:"nickname"`
		DailyLimit *int64  `json:"daily_limit"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&s) != nil || s.Nickname == nil || s.DailyLimit == nil {
		return bank.Settings{}, false
	}
	return bank.Settings{Nickname: *s.Nickname, DailyLimit: *s.DailyLimit}, true
}

// saved checks the answer to a PUT that must succeed: 200 with the
// settings it sent and an ETag. It returns that ETag.
func (t *T) saved(story string, req Request, r Response, want bank.Settings) (string, error) {
	sent := strings.TrimPrefix(story+"\n"+describe(req), "\n")
	const expected = "200 with the settings saved and their new ETag: If-Match names the current version"
	if !r.Is(http.StatusOK, "") {
		return "", t.Fail(sent, r.String(), expected)
	}
	if s, ok := decodeSettings(r.Body); !ok || s != want || r.Header.Get("ETag") == "" {
		return "", t.Fail(sent, r.String()+", ETag "+r.Header.Get("ETag"), expected)
	}
	return r.Header.Get("ETag"), nil
}

// rename saves from's settings with a new nickname as c, from from's
// ETag, told in the story as what. It returns the settings saved at the
// ETag the PUT answered, and the PUT; a failure if it did not succeed.
func (t *T) rename(story, what string, c bank.Customer, account string, from settingsCopy) (settingsCopy, Request, error) {
	next := from.Settings
	next.Nickname = t.nickname()
	req := putSettings(c, account, next, from.ETag)
	etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
	return settingsCopy{Settings: next, ETag: etag}, req, err
}

// nickname draws a nickname.
func (t *T) nickname() string {
	names := []string{"payroll", "rent", "savings", "suppliers", "월급", "생활비", "travel"}
	return fmt.Sprintf("%s %03d", names[t.rng.IntN(len(names))], t.rng.IntN(1000))
}

// clerkStart resets the bank with two customers and gives A's first
// account a daily limit of limit won (a PUT with the ETag of a GET); it
// returns the scenario and the settings as every clerk then reads them.
func (t *T) clerkStart(limit int64) (Scenario, settingsCopy, string, error) {
	s, err := t.Scenario(2, 1_000_000)
	if err != nil {
		return Scenario{}, settingsCopy{}, "", err
	}
	acc := s.A.Accounts[0]
	first, err := t.readSettings("", s.A, acc)
	if err != nil {
		return Scenario{}, settingsCopy{}, "", err
	}
	set := bank.Settings{Nickname: t.nickname(), DailyLimit: limit}
	req := putSettings(s.A, acc, set, first.ETag)
	story := "GET " + settingsPath(acc) + "  →  " + first.String()
	if _, err := t.saved(story, req, t.Do(req), set); err != nil {
		return Scenario{}, settingsCopy{}, "", err
	}
	story += "\n" + describe(req) + "  →  200"
	start, err := t.readSettings(story, s.A, acc)
	return s, start, story + "\nGET  →  " + start.String(), err
}

// checkTwoClerks catches a PUT that ignores If-Match (the last save wins)
// and one whose write does not move the version on (the stale ETag still
// matches): either way clerk B's stale copy puts A's nickname back.
func checkTwoClerks(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	story += "\n(clerks A and B both hold that copy)"

	made, reqA, err := t.rename(story, "clerk A renames the account", a, acc, start)
	if err != nil {
		return err
	}
	renamed, etagA := made.Settings, made.ETag
	story += "\nclerk A renames the account: " + describe(reqA) + "  →  200, ETag " + etagA

	raised := start.Settings
	raised.DailyLimit += t.Amount(100_000, 500_000)
	reqB := putSettings(a, acc, raised, start.ETag)
	rb := t.Do(reqB)
	story += "\nclerk B, from its copy, raises the limit: " + describe(reqB) + "  →  " + rb.Short()
	after, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	story += "\nthen GET  →  " + after.String()
	if after.Nickname != renamed.Nickname {
		return t.Harmful(judging.LostUpdate, story, rb.String()+"\nand A's nickname "+fmt.Sprintf("%q", renamed.Nickname)+" is gone",
			"412 "+pPreconditionFailed+" to B: its copy is of the version A's PUT replaced; nothing changes")
	}
	if !rb.Is(http.StatusPreconditionFailed, pPreconditionFailed) || after.Settings != renamed || after.ETag != etagA {
		return t.Fail(story, rb.String(), "412 "+pPreconditionFailed+" to B, and the settings still A's, at A's ETag "+etagA)
	}

	retry := after.Settings
	retry.DailyLimit = raised.DailyLimit
	reqR := putSettings(a, acc, retry, after.ETag)
	if _, err := t.saved(story+"\nclerk B applies its change to what it read again:", reqR, t.Do(reqR), retry); err != nil {
		return err
	}
	story += "\nclerk B applies its change to what it read again: " + describe(reqR) + "  →  200"
	final, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	if final.Settings != retry {
		return t.Harmful(judging.LostUpdate, story+"\nthen GET", final.String(), "A's nickname and B's limit: "+settingsJSON(retry))
	}
	return nil
}

// checkManyClerks catches a read-then-write: a PUT that reads the version,
// compares it in Go, and then writes without the version in its WHERE.
// Clerks released together all read the same version before any of them
// writes, and all of them succeed. The core's latency widens the window
// of a read before the core call; the slow-settings-write fault, which
// holds up every write of the settings, widens one after it, on SQLite
// too. It also catches answers that do not name what was made: two
// successes that answer one ETag, or a PUT based on an ETag nobody made.
func checkManyClerks(t *T) error {
	const clerks, step, latency = 6, 1_000, 100 * time.Millisecond
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	// More than every PUT the clerks may send: each of them is held up.
	if err := t.Arm(labctl.SlowSettingsWrite, 2*clerks*clerks); err != nil {
		return err
	}
	type success struct{ based, made string }
	var mu sync.Mutex
	var wins []success
	var trouble []string
	raise := func(c settingsCopy) Request {
		next := c.Settings
		next.DailyLimit += step
		return putSettings(a, acc, next, c.ETag)
	}
	// note records an answer; it reports whether the clerk is done.
	note := func(i int, req Request, r Response) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Is(http.StatusOK, ""):
			wins = append(wins, success{req.Header.Get("If-Match"), r.Header.Get("ETag")})
			return true
		case r.Is(http.StatusPreconditionFailed, pPreconditionFailed):
			return false
		}
		trouble = append(trouble, fmt.Sprintf("clerk %d: %s  →  %s", i+1, describe(req), r.String()))
		return true
	}
	first := make([]Request, clerks)
	for i := range first {
		first[i] = raise(start)
	}
	answers := t.Simultaneously(clerks, func(i int) Request { return first[i] })
	var wg sync.WaitGroup
	for i, r := range answers {
		if note(i, first[i], r) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each failure means another clerk saved after this one read:
			// clerks-1 of them are the most a clerk can meet.
			for range clerks {
				c, err := t.readSettings("", a, acc)
				if err != nil {
					note(i, Request{Method: "GET", Path: settingsPath(acc)}, Response{Err: err})
					return
				}
				req := raise(c)
				if note(i, req, t.Do(req)) {
					return
				}
			}
			note(i, Request{Method: "PUT", Path: settingsPath(acc)}, Response{Err: fmt.Errorf("still 412 after %d tries", clerks)})
		}()
	}
	wg.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	if err := t.Arm(labctl.SlowSettingsWrite, 0); err != nil {
		return err
	}
	story += fmt.Sprintf("\n(core latency %v, every settings write held up %v) %d clerks each raise daily_limit by %d from that copy, released together; a clerk told 412 reads again and raises what it reads",
		latency, fault.SettingsWriteDelay, clerks, step)
	final, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	got := "first answers: " + Summarize(answers) + fmt.Sprintf("; %d successful PUTs; then GET  →  %s", len(wins), final.String())
	// Every success must have replaced the version it was based on: one
	// success per version, chained from the start to the final ETag.
	byBase := map[string]int{}
	for _, w := range wins {
		byBase[w.based]++
	}
	for base, n := range byBase {
		if n > 1 {
			return t.Harmful(judging.LostUpdate, story, got+fmt.Sprintf("\n%d PUTs based on the version %s all succeeded: each overwrote the one before", n, base),
				fmt.Sprintf("one success per version: daily_limit %d, every raise counted", start.DailyLimit+clerks*step))
		}
	}
	if want := start.DailyLimit + clerks*step; final.DailyLimit != want {
		return t.Harmful(judging.LostUpdate, story, got, fmt.Sprintf("daily_limit %d: each clerk's raise, told 200, counted once", want))
	}
	// The successes chain: each answered an ETag of its own, each was
	// based on the start or on another's answer, and the last is what GET
	// shows.
	made := map[string]bool{}
	for _, w := range wins {
		made[w.made] = true
	}
	for _, w := range wins {
		if w.based != start.ETag && !made[w.based] {
			return t.Fail(story, got+"\na PUT based on "+w.based+" succeeded: no GET and no answer ever gave that ETag",
				"every ETag a clerk is answered names the version its save made, the one the next GET shows")
		}
	}
	if len(made) != len(wins) || !made[final.ETag] {
		return t.Fail(story, got+fmt.Sprintf("\n%d successful PUTs answered %d different ETags", len(wins), len(made)),
			"each successful PUT answers the ETag of the version it made: one ETag each, the last of them what GET shows")
	}
	if len(trouble) > 0 {
		return t.Fail(story, got+"\n"+strings.Join(trouble, "\n"), "200 or 412 "+pPreconditionFailed+" to every PUT, and 200 in the end for every clerk")
	}
	return nil
}

// checkRetriedPut catches a stale PUT that is answered 200 as if it were
// a retry of a save that went through, and an If-Match that is not
// checked: the retry of A's lost answer then undoes B's change.
func checkRetriedPut(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]

	mine := start.Settings
	mine.Nickname = t.nickname()
	reqA := putSettings(a, acc, mine, start.ETag)
	if _, err := t.saved(story+"\nclerk A:", reqA, t.Do(reqA), mine); err != nil {
		return err
	}
	story += "\nclerk A: " + describe(reqA) + "  →  200, but the answer is lost on its way back"
	seen, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	theirs := seen.Settings
	theirs.DailyLimit += t.Amount(1_000, 100_000)
	reqB := putSettings(a, acc, theirs, seen.ETag)
	etagB, err := t.saved(story+"\nclerk B reads ("+seen.String()+") and raises the limit:", reqB, t.Do(reqB), theirs)
	if err != nil {
		return err
	}
	story += "\nclerk B reads (" + seen.String() + ") and raises the limit: " + describe(reqB) + "  →  200, ETag " + etagB
	retry := t.Do(reqA)
	story += "\nclerk A's client retries the same request: " + describe(reqA) + "  →  " + retry.Short()
	now, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	story += "\nthen GET  →  " + now.String()
	switch {
	case now.Settings != theirs:
		return t.Harmful(judging.LostUpdate, story, retry.String(), "412 "+pPreconditionFailed+": the retry is based on a version B's save replaced; B's "+settingsJSON(theirs)+" stays")
	case retry.Is(http.StatusOK, ""):
		return t.Harmful(judging.WrongAnswer, story, retry.String(), "412 "+pPreconditionFailed+": A's client is told its settings are saved as it sent them, and they are B's")
	case !retry.Is(http.StatusPreconditionFailed, pPreconditionFailed) || now.ETag != etagB:
		return t.Fail(story, retry.String(), "412 "+pPreconditionFailed+", and the settings still B's at ETag "+etagB)
	}

	// With nobody in between, the retry may be refused (the version moved
	// on, with its own save) or told its change is in, and nothing else.
	again := now.Settings
	again.Nickname = t.nickname()
	reqC := putSettings(a, acc, again, now.ETag)
	etagC, err := t.saved(story+"\nclerk A, alone now:", reqC, t.Do(reqC), again)
	if err != nil {
		return err
	}
	story += "\nclerk A, alone now: " + describe(reqC) + "  →  200, ETag " + etagC + ", answer lost again"
	second := t.Do(reqC)
	story += "\nits client retries the same request  →  " + second.Short()
	last, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	body, _ := decodeSettings(second.Body)
	switch {
	case last.Settings != again:
		return t.Harmful(judging.LostUpdate, story+"\nthen GET", last.String(), "the settings A saved: "+settingsJSON(again))
	case second.Is(http.StatusPreconditionFailed, pPreconditionFailed):
	case second.Is(http.StatusOK, "") && body == again && second.Header.Get("ETag") == last.ETag:
	default:
		return t.Fail(story+"\nthen GET  →  "+last.String(), second.String(),
			"412 "+pPreconditionFailed+" (the version moved on with A's own save), or 200 with the settings as they are and their current ETag")
	}
	return nil
}

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

// checkIfMatchList holds If-Match to RFC 9110: true when any strong tag
// of the list is the current ETag, in one field or in several; a weak tag
// never matches, alone or in a list; a header that is no list of tags
// names no version. It catches a server that reads the header as one tag
// (every list refused) and one that compares weakly (W/ stripped).
func checkIfMatchList(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	cur := start
	other := `"` + t.Key() + `"`
	for _, split := range []bool{false, true} {
		next := cur.Settings
		next.Nickname = t.nickname()
		req := putSettings(a, acc, next, "")
		what := "If-Match lists a tag that is not ours, then the current one"
		if split {
			what = "the same list in two If-Match fields"
			req.Header.Add("If-Match", other)
			req.Header.Add("If-Match", cur.ETag)
		} else {
			req.Header.Add("If-Match", other+", "+cur.ETag)
		}
		etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
		if err != nil {
			return err
		}
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + etag
		if cur, err = t.readSettings(story, a, acc); err != nil {
			return err
		}
		story += "\nthen GET  →  " + cur.String()
	}
	for _, p := range []struct{ ifMatch, because string }{
		{"W/" + cur.ETag, "the current ETag, weak: If-Match compares strongly, and a weak tag never matches"},
		{"W/" + cur.ETag + ", " + other, "a list whose only tag naming the current version is weak"},
		{strings.Trim(cur.ETag, `"`), "the current ETag without its quotes: not an entity tag"},
	} {
		change := cur.Settings
		change.Nickname = t.nickname()
		req := putSettings(a, acc, change, p.ifMatch)
		r := t.Do(req)
		sent := story + "\n" + describe(req) + "  (" + p.because + ")"
		after, err := t.readSettings(sent, a, acc)
		if err != nil {
			return err
		}
		if !r.Is(http.StatusPreconditionFailed, pPreconditionFailed) || after != cur {
			return t.Fail(sent+"\nthen GET  →  "+after.String(), r.String(),
				"412 "+pPreconditionFailed+": no strong tag of the list names the current version; the settings stay "+cur.String())
		}
	}
	return nil
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
	if orig.Is(http.StatusCreated, "") {
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
	if d := replayMismatch(orig, r); d != "" {
		return t.Harmful(replayHarm(orig, r), story, r.String()+"\n"+d, "the stored 422 "+pDailyLimit+", byte for byte, with Idempotent-Replayed: true; nothing executes")
	}
	return nil
}

// checkDailyLimit catches an ETag blind to the daily limit (made from the
// nickname, or a version moved on only by a rename): clerk B's stale
// rename matches, puts the old limit back, and a transfer the owner capped
// goes through.
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
		if r.Is(http.StatusCreated, "") {
			books.Transfer(op, acc, payee, amount)
		}
		return req, r
	}
	over := limit + t.Amount(1, 50_000)
	req, r := pay(over)
	story += "\na transfer over A's limit: " + req.String() + "  →  " + r.Short()
	if r.Is(http.StatusCreated, "") && rb.Is(http.StatusOK, "") {
		return t.Harmful(judging.LostUpdate, story, r.String()+fmt.Sprintf("\nB's stale rename put the limit of %d back, and %d won moved past A's limit of %d", start.DailyLimit, over, limit),
			"412 "+pPreconditionFailed+" to B's stale rename, and the transfer refused: 422 "+pDailyLimit+", nothing moved")
	}
	if !r.Is(http.StatusUnprocessableEntity, pDailyLimit) {
		return t.Fail(story, r.String(), "422 "+pDailyLimit+": the account's limit is "+fmt.Sprint(limit)+" won a day, and nothing moves")
	}
	half := limit / 2
	req, r = pay(half)
	story += "\na transfer within it: " + req.String() + "  →  " + r.Short()
	if !r.Is(http.StatusCreated, "") {
		return t.Fail(story, r.String(), "201 Created: "+fmt.Sprint(half)+" is within the day's limit of "+fmt.Sprint(limit))
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
	if !r.Is(http.StatusCreated, "") {
		return t.Fail(story, r.String(), "201 Created: a new day, and the limit counts from zero again")
	}
	if err := t.Reconcile(story, "", books); err != nil {
		return err
	}
	if !rb.Is(http.StatusPreconditionFailed, pPreconditionFailed) {
		return t.Fail(story, rb.String(), "412 "+pPreconditionFailed+" to B's rename: its copy is of the version A's PUT replaced")
	}
	return nil
}

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
// changes nothing), a weak one, and a PUT that answers an ETag the next
// GET does not show: the one it was sent, or a version it did not make,
// such as the one after the first tag of an If-Match list.
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
	cur := start
	for _, change := range []string{"daily_limit", "nickname", "nothing", "listed"} {
		next := cur.Settings
		ifMatch := cur.ETag
		switch change {
		case "daily_limit":
			next.DailyLimit += t.Amount(1_000, 100_000)
		case "nickname", "listed":
			next.Nickname = t.nickname()
		}
		what := "change only the " + change
		switch change {
		case "nothing":
			what = "save the settings as they are"
		case "listed":
			// The answer names the version this save made, not one
			// worked out from the first tag of the list.
			what = "rename from a list of an old ETag, then the current one"
			ifMatch = start.ETag + ", " + cur.ETag
		}
		req := putSettings(a, acc, next, ifMatch)
		etag, err := t.saved(story+"\n"+what+":", req, t.Do(req), next)
		if err != nil {
			return err
		}
		story += "\n" + what + ": " + describe(req) + "  →  200, ETag " + etag
		if etag == cur.ETag || !strong(etag) {
			return t.Fail(story, "ETag "+etag, "a new strong ETag: every successful PUT makes a new version, one that changes nothing included, so the version the old one names is gone")
		}
		now, err := t.readSettings(story, a, acc)
		if err != nil {
			return err
		}
		if now.Settings != next || now.ETag != etag {
			return t.Fail(story+"\nthen GET", now.String(), "the settings saved, at the ETag the PUT answered: "+settingsJSON(next)+", ETag "+etag)
		}
		cur = now
	}
	return nil
}

// checkSettingsContract holds the settings to the contract of every
// account route and of a transfer's body.
func checkSettingsContract(t *T) error {
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, b, acc := s.A, s.B, s.A.Accounts[0]
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
		{Request{Method: "GET", Path: settingsPath("acc_nosuchacc"), Token: a.Token}, 404, problem.NotFound.URI(), "no such account"},
		{putSettings(a, "acc_nosuchacc", start.Settings, start.ETag), 404, problem.NotFound.URI(), "no such account"},
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
	} {
		probes = append(probes, probe{put(bad.body), 400, problem.InvalidRequest.URI(), bad.because})
	}
	for _, p := range probes {
		r := t.Do(p.req)
		sent := story + "\n" + describe(p.req) + "  (" + p.because + ")"
		if !r.Is(p.status, p.ptype) {
			return t.Fail(sent, r.String(), fmt.Sprintf("%d %s, and nothing changes", p.status, p.ptype))
		}
		after, err := t.readSettings(sent, a, acc)
		if err != nil {
			return err
		}
		if after != start {
			return t.Fail(sent+"\nthen GET", after.String(), "the settings unchanged: "+start.String())
		}
	}
	return nil
}

// checkOldCopies catches a version compared by something weaker than
// equality (as text, by prefix, as "at least"): after a dozen saves from
// the settings as they were made, a PUT from every copy read before the
// last save, oldest first, must get
// 412 and change nothing. Every old copy is tried, even after one gets
// through, so that the report lists all of them.
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
	for range saves {
		if cur, _, err = t.rename(story, "clerk A saves a new nickname", a, acc, cur); err != nil {
			return err
		}
		old = append(old, cur.ETag)
	}
	old = old[:len(old)-1]
	story += fmt.Sprintf("\nclerk A saves a new nickname %d times, each from the ETag the save before answered: %s, then %s", saves, strings.Join(old, ", "), cur.ETag)
	if now, err := t.readSettings(story, a, acc); err != nil {
		return err
	} else if now != cur {
		return t.Fail(story+"\nthen GET", now.String(), "the last save, at the ETag it answered: "+cur.String())
	}
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
		return t.Harmful(judging.LostUpdate, story, fmt.Sprintf("%d of %d old copies were written:\n", len(through), len(old))+strings.Join(through, "\n"),
			"412 "+pPreconditionFailed+" to every one: an If-Match names the current version only if it is the ETag the last save answered; nothing changes")
	}
	if len(wrong) > 0 {
		return t.Fail(story, strings.Join(wrong, "\n"), "412 "+pPreconditionFailed+" to every one, and nothing changes")
	}
	return nil
}
