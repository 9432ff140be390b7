package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/fault"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
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

// describe writes a request with its If-Match, for a report (an empty
// field as "(empty)").
func describe(req Request) string {
	s := req.Method + " " + req.Path
	for _, v := range req.Header.Values("If-Match") {
		if v == "" {
			v = "(empty)"
		}
		s += "  If-Match: " + abridged(v)
	}
	if req.Body != "" {
		s += "  " + req.Body
	}
	return s
}

// abridged writes an If-Match list of more than a dozen tags, as the
// checks write them (", " between two), by its first three and its last
// two, and how many there are: a report of a list of a hundred shows
// where the current ETag stands, not a hundred tags.
func abridged(list string) string {
	tags := strings.Split(list, ", ")
	if len(tags) <= 12 {
		return list
	}
	return fmt.Sprintf("%s, … %d tags in all …, %s", strings.Join(tags[:3], ", "), len(tags), strings.Join(tags[len(tags)-2:], ", "))
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
	return t.renameIf(story, what, c, account, from, from.ETag)
}

// renameIf is rename with ifMatch for If-Match.
func (t *T) renameIf(story, what string, c bank.Customer, account string, from settingsCopy, ifMatch string) (settingsCopy, Request, error) {
	next := from.Settings
	next.Nickname = t.nickname()
	req := putSettings(c, account, next, ifMatch)
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
// too. The slow-settings-commit fault holds each write, once it has run,
// before it commits: on PostgreSQL the clerks' writes that start
// meanwhile read the settings as the held one found them, and wait for
// its row lock; an UPDATE that checks the version through a subquery, a
// copy of the table joined in, a WITH before it or a read earlier in its
// transaction, rather than through the row's own column, which
// PostgreSQL checks again on the row the held write made, then writes
// over it. It also
// catches answers that do not name what was made: two successes that
// answer one ETag, or a PUT based on an ETag nobody made.
// The slow-settings-reread fault holds up a read of the settings that a
// save makes after its write, long enough for another clerk's save to
// land in between: an answer taken from that read names the other's
// version.
func checkManyClerks(t *T) error {
	return t.manyClerks(1)
}

// checkTwoServersSave catches a read-then-write kept safe by a mutex, or
// anything else in one process's memory: the mutex keeps apart only the
// clerks whose saves reach its process. It runs S7.many-clerks against
// the server as two processes on one database, every other clerk's save
// through the second: a clerk of one process reads the version while a
// clerk of the other waits on the core, and both save.
func checkTwoServersSave(t *T) error {
	rt, err := t.OnReplicas(2)
	if err != nil {
		return err
	}
	return rt.manyClerks(2)
}

// manyClerks is S7.many-clerks with clerk i's saves sent to server
// process i % processes (see OnReplicas).
func (t *T) manyClerks(processes int) error {
	const clerks, step, latency = 6, 1_000, 100 * time.Millisecond
	s, start, story, err := t.clerkStart(t.Amount(100_000, 500_000))
	if err != nil {
		return err
	}
	a, acc := s.A, s.A.Accounts[0]
	if err := t.Configure(labclient.Config{CoreLatency: latency}); err != nil {
		return err
	}
	// More than every PUT the clerks may send: each of them is held up,
	// in every process (each keeps its own faults).
	if err := t.ArmEverywhere(labctl.SlowSettingsWrite, 2*clerks*clerks); err != nil {
		return err
	}
	if err := t.ArmEverywhere(labctl.SlowSettingsCommit, 2*clerks*clerks); err != nil {
		return err
	}
	if err := t.ArmEverywhere(labctl.SlowSettingsReread, 2*clerks*clerks); err != nil {
		return err
	}
	type success struct {
		clerk       int
		based, made string
		// sent and told are the settings the clerk sent and those the
		// 200 answered.
		sent, told string
	}
	var mu sync.Mutex
	var wins []success
	var trouble []string
	// Each clerk's change is its own: it signs the nickname. A server may
	// answer a PUT whose change is already there 200 (lesson 07, "A
	// retried PUT"); six alike bodies would let it answer all six.
	raise := func(i int, c settingsCopy) Request {
		next := c.Settings
		next.DailyLimit += step
		next.Nickname = fmt.Sprintf("raised by clerk %d", i+1)
		req := putSettings(a, acc, next, c.ETag)
		req.Replica = i % processes
		return req
	}
	// note records an answer; it reports whether the clerk is done.
	note := func(i int, req Request, r Response) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Is(http.StatusOK, ""):
			wins = append(wins, success{i, req.Header.Get("If-Match"), r.Header.Get("ETag"), req.Body, string(r.Body)})
			return true
		case r.Is(http.StatusPreconditionFailed, pPreconditionFailed):
			return false
		}
		trouble = append(trouble, fmt.Sprintf("clerk %d: %s  →  %s", i+1, describe(req), r.String()))
		return true
	}
	// The last clerk reads the settings as the others save: a GET that
	// reads the settings and their version apart, its second read held up
	// by the slow-settings-reread fault, hands it the settings as they
	// were under the ETag of the save that landed between the two, and
	// its raise, based on that ETag, writes over that save.
	reader := clerks - 1
	first := make([]Request, clerks)
	for i := range first {
		first[i] = raise(i, start)
	}
	first[reader] = Request{Method: "GET", Path: settingsPath(acc), Token: a.Token, Replica: reader % processes}
	answers := t.Simultaneously(clerks, func(i int) Request { return first[i] })
	var wg sync.WaitGroup
	for i, r := range answers {
		var read *settingsCopy
		switch {
		case i == reader:
			s, ok := decodeSettings(r.Body)
			if !r.Is(http.StatusOK, "") || !ok || r.Header.Get("ETag") == "" {
				note(i, first[i], Response{Err: fmt.Errorf("%s: want 200 with both members and an ETag", r.String())})
				continue
			}
			read = &settingsCopy{Settings: s, ETag: r.Header.Get("ETag")}
		case note(i, first[i], r):
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each failure means another clerk saved after this one read:
			// clerks-1 of them are the most a clerk can meet.
			for range clerks {
				if read == nil {
					c, err := t.readSettings("", a, acc)
					if err != nil {
						note(i, Request{Method: "GET", Path: settingsPath(acc)}, Response{Err: err})
						return
					}
					read = &c
				}
				req := raise(i, *read)
				if note(i, req, t.Do(req)) {
					return
				}
				read = nil
			}
			note(i, Request{Method: "PUT", Path: settingsPath(acc)}, Response{Err: fmt.Errorf("still 412 after %d tries", clerks)})
		}()
	}
	wg.Wait()
	if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
		return err
	}
	if err := t.ArmEverywhere(labctl.SlowSettingsWrite, 0); err != nil {
		return err
	}
	if err := t.ArmEverywhere(labctl.SlowSettingsCommit, 0); err != nil {
		return err
	}
	if err := t.ArmEverywhere(labctl.SlowSettingsReread, 0); err != nil {
		return err
	}
	if processes > 1 {
		var desks []string
		for p := range processes {
			var who []string
			for i := p; i < clerks; i += processes {
				who = append(who, fmt.Sprint(i+1))
			}
			desks = append(desks, fmt.Sprintf("clerks %s through process %d", strings.Join(who, ", "), p+1))
		}
		story += fmt.Sprintf("\n(the server runs as %d processes on one database; the clerks save, and save again after a 412, each through one: %s)", processes, strings.Join(desks, ", "))
	}
	story += fmt.Sprintf("\n(core latency %v, every settings write held up %v before it runs and %v more before it commits, and a read of the settings after a save's write %v, or after a read of them in the same request %v) %d clerks each raise daily_limit by %d from that copy and sign the nickname (\"raised by clerk N\"), released together with clerk %d, who first reads the settings (GET) as they save, then raises what it read; a clerk told 412 reads again and raises what it reads",
		latency, fault.SettingsWriteDelay, fault.SettingsCommitDelay, fault.SettingsRereadDelay, fault.SettingsSecondReadDelay, clerks-1, step, clerks)
	final, err := t.readSettings(story, a, acc)
	if err != nil {
		return err
	}
	// The first answers apart: five to PUTs, one to the reader's GET.
	puts := append(slices.Clone(answers[:reader]), answers[reader+1:]...)
	got := fmt.Sprintf("first PUTs: %s; clerk %d's GET: %s; %d successful PUTs; then GET  →  %s",
		Summarize(puts), reader+1, answers[reader].Short(), len(wins), final.String())
	// Every success must have replaced the version it was based on: one
	// success per version, chained from the start to the final ETag.
	// Through several processes, the successes of a version are named
	// by clerk and process: a student whose server passed S7.many-clerks
	// sees that the clerks that overwrote each other saved through two.
	byBase := map[string][]string{}
	for _, w := range wins {
		byBase[w.based] = append(byBase[w.based], fmt.Sprintf("clerk %d through process %d", w.clerk+1, w.clerk%processes+1))
	}
	for _, base := range sortedKeys(byBase) {
		who := byBase[base]
		if len(who) < 2 {
			continue
		}
		saved := fmt.Sprintf("\n%d PUTs based on the version %s all succeeded", len(who), base)
		if processes > 1 {
			saved += " (" + strings.Join(who, ", ") + ")"
		}
		return t.Harmful(judging.LostUpdate, story, got+saved+": each overwrote the one before",
			fmt.Sprintf("one success per version: daily_limit %d, every raise counted", start.DailyLimit+clerks*step))
	}
	// A raise is lost only if its clerk was told it was saved: a clerk
	// answered a 5xx was told nothing of the kind, and is judged with the
	// other answers that were neither 200 nor 412 (trouble, below).
	if want := start.DailyLimit + int64(len(wins))*step; final.DailyLimit < want || len(trouble) == 0 && final.DailyLimit != want {
		return t.Harmful(judging.LostUpdate, story, got, fmt.Sprintf("daily_limit %d: each clerk's raise, told 200, counted once", start.DailyLimit+clerks*step))
	}
	// Each success answers the settings its clerk sent, which its write
	// made: a read after the write may find another clerk's save, and
	// the clerk is then told that its save made the other's settings.
	for _, w := range wins {
		sent, _ := decodeSettings([]byte(w.sent))
		if told, ok := decodeSettings([]byte(w.told)); !ok || told != sent {
			return t.Harmful(judging.WrongAnswer, story, got+fmt.Sprintf("\nclerk %d sent %s and was answered 200 with %s", w.clerk+1, w.sent, w.told),
				"each successful PUT answers the settings its clerk sent, the state its own write made, not whatever a read after the write finds")
		}
	}
	// The successes chain: each answered an ETag of its own, the last of
	// them what GET shows, and each was based on the start or on another's
	// answer, as a GET showed it.
	made := map[string]int{}
	var answered []string
	for _, w := range wins {
		made[w.made]++
		answered = append(answered, w.made)
	}
	if len(made) != len(wins) || made[final.ETag] == 0 {
		got += fmt.Sprintf("\n%d successful PUTs answered %d different ETags: %s", len(wins), len(made), strings.Join(answered, ", "))
		for _, etag := range sortedKeys(made) {
			if made[etag] > 1 {
				got += fmt.Sprintf("\n%d clerks were answered %s: at most one of them made that version", made[etag], etag)
			}
		}
		if made[final.ETag] == 0 {
			got += "\nno clerk was answered " + final.ETag + ", the version GET shows"
		}
		return t.Fail(story, got,
			"each successful PUT answers the ETag of the version its own write made, not of whatever a read after it finds (the lesson's decision on which ETag the answer carries): one ETag each, the last of them what GET shows")
	}
	for _, w := range wins {
		if w.based != start.ETag && made[w.based] == 0 {
			return t.Fail(story, got+"\na PUT based on "+w.based+", as a GET showed it, succeeded: no successful PUT was answered that ETag, so the save that made it was answered another",
				"every ETag a clerk is answered names the version its save made, the one the next GET shows")
		}
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

// checkSaveBesideTransfers catches a save that waits on the core inside
// its writing transaction: on SQLite that transaction holds the write
// lock of the whole database, and a transfer whose own core wait is over
// waits for the save's before it can write. It holds a transfer on the
// core, raises the core's latency to twice the transfer's, and saves the
// settings of an account the transfer does not touch: a right server
// answers the transfer when its own wait is over. A try where the
// transfer answered only once the save's core wait was over is tried
// again with a longer latency; the check fails only when the longest one
// waited too. The save raises the daily limit as well as renaming (the
// limit is lowered first, while the core answers at once): a server that
// calls the core only for a raise of the limit, and learns that from the
// limit its writing transaction reads, waits on the core with the lock
// held only then. Which of the two answered first is not judged.
func checkSaveBesideTransfers(t *T) error {
	return t.WhileHeld(1_000_000, func(s Scenario, latency time.Duration) (bool, error) {
		b, acc := s.B, s.B.Accounts[1]
		cur, err := t.readSettings("", b, acc)
		if err != nil {
			return false, err
		}
		low := cur.Settings
		low.DailyLimit = t.Amount(100_000, 500_000)
		lower := putSettings(b, acc, low, cur.ETag)
		etag, err := t.saved("B's clerk lowers the daily limit of "+acc+":", lower, t.Do(lower), low)
		if err != nil {
			return false, err
		}
		req, op, amount := s.Payment(t)
		s.Books.Expect(op)
		held, err := t.Hold(req, latency)
		if err != nil {
			return false, err
		}
		if !held.Seen || !held.Early() {
			held.Wait()
			return false, nil
		}
		if err := t.Configure(labclient.Config{CoreLatency: 2 * latency}); err != nil {
			return false, err
		}
		next := low
		next.Nickname = t.nickname()
		next.DailyLimit += t.Amount(1_000, 100_000)
		put := putSettings(b, acc, next, etag)
		sent := time.Now()
		save := t.Launch(put)
		orig, saved := held.Wait(), save.Wait()
		if err := t.Configure(labclient.Config{NoCoreLatency: true}); err != nil {
			return true, err
		}
		story := fmt.Sprintf("B's clerk lowers the daily limit of %s, an account the transfer below does not touch: %s  →  200\n(core latency %v) a transfer: %s\n(its key in progress: it waits on the core) the core's latency is raised to %v; B's clerk renames %s and raises its daily limit again: %s",
			acc, describe(lower), latency, req.String(), 2*latency, acc, describe(put))
		answers := "transfer  →  " + orig.Short() + "\nsave  →  " + saved.Short()
		if toldRan(orig, op) {
			s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount)
		}
		if err := t.Reconcile(story, answers, s.Books); err != nil {
			return true, err
		}
		if !orig.Is(http.StatusCreated, "") {
			return true, t.Fail(story, orig.String(), "201 Created: the transfer is within the balance and the daily limit")
		}
		if _, err := t.saved(story, put, saved, next); err != nil {
			return true, err
		}
		// The transfer's own core wait ends about latency after it was
		// sent; the save's, 2×latency after the save was sent. A
		// transfer that answers only then waited for the save.
		behind := held.at.Sub(sent) >= 2*latency
		if !behind {
			return true, nil
		}
		if !lastHold(latency) {
			return false, nil
		}
		return true, t.Fail(story,
			fmt.Sprintf("%s\nthe transfer answered %v after the save was sent, the save %v after: the transfer, its own core wait of %v over, waited for the save's wait on the core",
				answers, held.at.Sub(sent).Round(time.Millisecond), save.at.Sub(sent).Round(time.Millisecond), latency),
			fmt.Sprintf("201 Created to the transfer once its own core wait is over (about %v after it was sent), not once the save's own wait is over: a save that waits on the core inside its writing transaction holds what every transfer needs to write (on SQLite, the write lock of the whole database), and every transfer waits for the core with it", latency))
	})
}
