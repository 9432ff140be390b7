package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/kit/retry"
)

// The submissions of a settings edit (dayplan.SettingsEdit): each clerk's
// requests, and the replay's own reading once both are done.
const (
	SubmitClerkA = "clerk-a" // reads, then sets the daily limit
	SubmitClerkB = "clerk-b" // reads, then, from that copy, sets the nickname
	SubmitAfter  = "after"   // the settings once both clerks are done
)

// clerkRounds is how many times a clerk told 412 reads again and
// reapplies its change before it gives up.
const clerkRounds = 3

// accountLocks keeps two settings edits of one account from running at
// once when several clients replay the day: the reconciliation compares
// each edit's clerks with the settings read right after them.
type accountLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *accountLocks) lock(account string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m := l.locks[account]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[account] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// clerk is one clerk's requests of a settings edit.
type clerk struct {
	r    *replayer
	op   *dayplan.Op
	kind string
	at   time.Duration
	out  []Attempt
	// read and etag are the settings the clerk last read.
	read bank.Settings
	etag string
}

// editSettings plays a settings edit: both clerks read, clerk A writes
// its daily limit, clerk B writes its nickname over the copy it read
// before A saved; each sends If-Match with the ETag it read and, told
// 412, reads again and reapplies its change. Then the replay reads the
// settings both left. The requests meet no failure point: a PUT's retry
// after a lost answer is S7's to check, not the day's.
func (r *replayer) editSettings(ctx context.Context, op *dayplan.Op) []Attempt {
	e := op.SettingsEdit
	defer r.settingsLocks.lock(e.Account)()
	at := time.Duration(op.At)
	a := &clerk{r: r, op: op, kind: SubmitClerkA, at: at}
	b := &clerk{r: r, op: op, kind: SubmitClerkB, at: at}
	if a.get(ctx) && b.get(ctx) {
		a.put(ctx, func(s *bank.Settings) { s.DailyLimit = e.DailyLimit })
		b.put(ctx, func(s *bank.Settings) { s.Nickname = e.Nickname })
	}
	after := &clerk{r: r, op: op, kind: SubmitAfter, at: at + time.Minute}
	after.get(ctx)
	var out []Attempt
	for _, c := range []*clerk{a, b, after} {
		if len(c.out) > 0 {
			c.out[len(c.out)-1].Final = true
			out = append(out, c.out...)
		}
	}
	return out
}

// get reads the settings; it reports whether they came back.
func (c *clerk) get(ctx context.Context) bool {
	a := c.send(ctx, http.MethodGet, nil, "")
	return a.Status == http.StatusOK
}

// put applies change to the settings the clerk read and sends them under
// If-Match, reading again after each 412, up to clerkRounds times.
func (c *clerk) put(ctx context.Context, change func(*bank.Settings)) {
	for range clerkRounds {
		s := c.read
		change(&s)
		body, _ := json.Marshal(s) // two plain fields always encode
		if a := c.send(ctx, http.MethodPut, body, c.etag); a.Problem != problem.PreconditionFailed.URI() || !c.get(ctx) {
			return
		}
	}
}

// send sends one request of the clerk's and records it; a 200 updates
// what the clerk holds.
func (c *clerk) send(ctx context.Context, method string, body []byte, ifMatch string) Attempt {
	account := c.op.SettingsEdit.Account
	a := Attempt{Op: c.op.Op, Submission: c.kind, N: len(c.out) + 1, At: dayplan.Duration(c.at + time.Duration(len(c.out))*time.Second),
		Method: method, Endpoint: "/accounts/" + account + "/settings"}
	req, err := http.NewRequestWithContext(ctx, method, c.r.opts.URL+a.Endpoint, bytes.NewReader(body))
	if err != nil {
		a.Error = err.Error()
		c.out = append(c.out, a)
		return a
	}
	req.Header.Set("Authorization", "Bearer "+c.r.tokens[c.op.Customer])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	ans := retry.Send(c.r.client, req)
	if ans.Err != nil {
		a.Error = ans.Err.Error()
	} else {
		a.Status, a.Response, a.Problem = ans.Status, string(ans.Body), ans.Problem
	}
	if a.Status == http.StatusOK && json.Unmarshal(ans.Body, &c.read) == nil {
		c.etag = ans.Header.Get("ETag")
	}
	c.out = append(c.out, a)
	return a
}

// reconcileSettings reconciles a settings edit: a change a clerk was
// told was saved (200) that the settings read after both clerks do not
// hold is a lost update. Each clerk changes one field to one value, so
// no later change of its own can stand for the one it was told was saved.
// A server that serves no settings (before stage 7) is counted as such,
// and nothing else is reconciled.
func (rc *DayReconciliation) reconcileSettings(op *dayplan.Op, subs map[string][]Attempt) {
	e := op.SettingsEdit
	add := func(kind, story string) {
		rc.Findings = append(rc.Findings, DayFinding{Kind: kind, Op: op.Op, Story: story})
	}
	for _, kind := range []string{SubmitClerkA, SubmitClerkB} {
		if as := subs[kind]; len(as) > 0 && as[0].Status == http.StatusNotFound {
			rc.Counts.EditsNotServed++
			add("edits_not_served", fmt.Sprintf("%s GET %s: 404; the server does not serve account settings", kind, as[0].Endpoint))
			return
		}
	}
	var after bank.Settings
	held := false
	if a := finalAttempt(subs[SubmitAfter]); a != nil && a.Status == http.StatusOK {
		held = json.Unmarshal([]byte(a.Response), &after) == nil
	}
	for _, c := range []struct {
		kind, field string
		want, got   string
	}{
		{SubmitClerkA, "daily limit", bank.FormatWon(e.DailyLimit) + " won", bank.FormatWon(after.DailyLimit) + " won"},
		{SubmitClerkB, "nickname", fmt.Sprintf("%q", e.Nickname), fmt.Sprintf("%q", after.Nickname)},
	} {
		a := finalAttempt(subs[c.kind])
		switch {
		case a == nil:
		case a.Method != http.MethodPut || a.Status != http.StatusOK:
			rc.Counts.UnexpectedStatus++
			add("unexpected_status", fmt.Sprintf("%s's change of the %s of %s ended with %s %s", c.kind, c.field, e.Account, a.Method, a.answer()))
		case !held:
			rc.Notes = append(rc.Notes, fmt.Sprintf("%s: the settings of %s could not be read after the clerks' edit", op.Op, e.Account))
		case c.want != c.got:
			rc.Counts.LostUpdates++
			add("lost_updates", fmt.Sprintf("%s was told 200 for the %s of %s, %s; after both clerks it is %s: %s",
				c.kind, c.field, e.Account, c.want, c.got, settingsStory(subs)))
		}
	}
}

// settingsStory tells the clerks' requests in one line.
func settingsStory(subs map[string][]Attempt) string {
	var parts []string
	for _, kind := range []string{SubmitClerkA, SubmitClerkB} {
		var steps []string
		for _, a := range subs[kind] {
			steps = append(steps, a.Method+" "+a.answer())
		}
		parts = append(parts, kind+": "+strings.Join(steps, ", "))
	}
	return strings.Join(parts, "; ")
}
