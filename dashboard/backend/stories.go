package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"idemlab/dashboard"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/kit/retry"
)

// The stories are the one-shot scenes an instructor plays on both sides
// at once (the u and i key presses): stage 7's lost update and stage 8's
// invoice paid twice. Every request is one attempt, so that the screen
// shows the answers the story itself got, and each side's outcome is read
// from what its server answered and what its lab state shows, never from
// its stage number.

const (
	// clerksLimit is the daily limit clerk A sets; overLimit is the
	// transfer that follows: more than the limit, and far less than any
	// balance the traffic leaves an account.
	clerksLimit = 100_000
	overLimit   = 250_000
	// invoiceAmount is what the invoice asks for.
	invoiceAmount = 180_000
)

// Clerks plays the two clerks' story on each of labs (a nil one is not
// running), at once: clerks A and B read an account's settings; A lowers
// its daily limit, sending If-Match with the ETag it read; B, from the
// copy it read before A saved, renames the account, with its own ETag;
// then a transfer above A's limit leaves the account. A server that
// honours If-Match tells B 412, and B reads again and saves its rename
// over A's limit. Last, the story puts the settings back as it found
// them, so that the traffic that follows meets the same limits on both
// sides.
func (t *Traffic) Clerks(ctx context.Context, labs []Backend) dashboard.Story {
	n := t.stories.Add(1)
	c := t.people[int(n)%len(t.people)]
	story := dashboard.Story{Notice: "two clerks edited " + c.Accounts[0]}
	tell(labs, &story, func(b Backend) dashboard.Told { return t.clerks(ctx, b, c, n) })
	return story
}

// Invoice plays the invoice story on each of labs at once: a clerk pays
// an invoice (a transfer with a reference); a moment later another clerk,
// who did not see it go through, pays it again from a new form, under a
// new Idempotency-Key. Both transfers carry the same op, so that the lab
// state counts how many times the invoice was paid.
func (t *Traffic) Invoice(ctx context.Context, labs []Backend) dashboard.Story {
	n := t.stories.Add(1)
	payer, payee := t.people[int(n)%len(t.people)], t.people[int(n+1)%len(t.people)]
	ref := fmt.Sprintf("INV-%d", 4200+n)
	pay := bank.TransferRequest{
		From: payer.Accounts[0], To: payee.Accounts[1], Amount: invoiceAmount,
		Memo: "invoice " + ref, Reference: ref, Metadata: map[string]string{"op": fmt.Sprintf("s%d.invoice", n)},
	}
	story := dashboard.Story{Notice: ref + " paid by two clerks"}
	tell(labs, &story, func(b Backend) dashboard.Told { return t.invoice(ctx, b, payer.Token, n, pay) })
	return story
}

// tell runs a story on every lab at once and keeps what each side told.
func tell(labs []Backend, story *dashboard.Story, fn func(b Backend) dashboard.Told) {
	each(labs[:min(len(labs), len(story.Sides))], func(i int, b Backend) {
		if b == nil {
			story.Sides[i] = untold("the server is not running")
			return
		}
		story.Sides[i] = fn(b)
	})
}

func untold(line string) dashboard.Told {
	return dashboard.Told{Outcome: dashboard.Untold, Lines: []string{line}}
}

// clerk is a story's client: one customer of one server.
type clerk struct {
	t     *Traffic
	b     Backend
	token string
}

// send makes one attempt of a request; ifMatch and key are sent if set,
// body as JSON if not nil.
func (c clerk) send(ctx context.Context, method, path, ifMatch, key string, body any) retry.Answer {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return retry.Answer{Err: err}
		}
	}
	req, err := newRequest(ctx, method, c.b.URL()+path, c.token, key, data)
	if err != nil {
		return retry.Answer{Err: err}
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return retry.Send(c.t.client, req)
}

// read GETs settings at path: the settings, their ETag, and whether the
// answer was a 200 with both.
func (c clerk) read(ctx context.Context, path string) (bank.Settings, string, retry.Answer, bool) {
	a := c.send(ctx, http.MethodGet, path, "", "", nil)
	var s bank.Settings
	ok := a.Err == nil && a.Status == http.StatusOK && json.Unmarshal(a.Body, &s) == nil && a.Header.Get("ETag") != ""
	return s, a.Header.Get("ETag"), a, ok
}

// answered says what an answer was, in a few words: "412
// precondition-failed", or "no answer".
func answered(a retry.Answer) string {
	if a.Err != nil {
		return "no answer"
	}
	if a.Problem != "" {
		return fmt.Sprintf("%d %s", a.Status, strings.TrimPrefix(a.Problem, "/problems/"))
	}
	return fmt.Sprint(a.Status)
}

func (t *Traffic) clerks(ctx context.Context, b Backend, c bank.Customer, n int64) dashboard.Told {
	cl := clerk{t: t, b: b, token: c.Token}
	path := "/accounts/" + c.Accounts[0] + "/settings"
	copyA, tagA, got, ok := cl.read(ctx, path)
	if got.Err == nil && got.Status == http.StatusNotFound {
		return untold("404: no settings; stage 7 adds them")
	}
	copyB, tagB, gotB, okB := cl.read(ctx, path)
	if !ok || !okB {
		return untold("the clerks' reads: " + answered(got) + ", " + answered(gotB))
	}
	if saved := cl.send(ctx, http.MethodPut, path, tagA, "", bank.Settings{Nickname: copyA.Nickname, DailyLimit: clerksLimit}); saved.Status != http.StatusOK {
		return untold("A's save: " + answered(saved))
	}
	// The settings as the story found them, put back at the end.
	defer func() {
		if _, tag, _, ok := cl.read(ctx, path); ok {
			cl.send(ctx, http.MethodPut, path, tag, "", copyA)
		}
	}()
	rename := fmt.Sprintf("payroll %d", n)
	var saves string
	switch savedB := cl.send(ctx, http.MethodPut, path, tagB, "", bank.Settings{Nickname: rename, DailyLimit: copyB.DailyLimit}); {
	case savedB.Status == http.StatusOK:
		saves = "B's stale save: 200, taken"
	case savedB.Status == http.StatusPreconditionFailed:
		fresh, tag, got, ok := cl.read(ctx, path)
		if !ok {
			return untold("B's second read: " + answered(got))
		}
		again := cl.send(ctx, http.MethodPut, path, tag, "", bank.Settings{Nickname: rename, DailyLimit: fresh.DailyLimit})
		saves = "B: 412, re-read, saved: " + answered(again)
		if again.Status == http.StatusOK {
			saves = "B: 412, re-read, saved again"
		}
	default:
		saves = "B's save: " + answered(savedB)
	}
	now, _, got, ok := cl.read(ctx, path)
	if !ok {
		return untold("the settings read after: " + answered(got))
	}

	op := fmt.Sprintf("s%d.over-limit", n)
	sent := cl.send(ctx, http.MethodPost, "/transfers", "", fmt.Sprintf("s%d-over-limit", n), bank.TransferRequest{
		From: c.Accounts[0], To: c.Accounts[1], Amount: overLimit, Metadata: map[string]string{"op": op}})
	st, err := b.State(ctx)
	if err != nil {
		return untold("lab state: " + err.Error())
	}
	transfer := fmt.Sprintf("₩%s over A's ₩%s limit: ", dashboard.Short(overLimit), dashboard.Short(clerksLimit))
	moved := st.Executions[op] > 0
	switch {
	case moved:
		transfer += "moved"
	case sent.Problem == problem.DailyLimitExceeded.URI():
		transfer += "refused"
	default:
		transfer += answered(sent)
	}

	told := dashboard.Told{Outcome: dashboard.Held, Lines: []string{"both clerks' changes kept", saves, transfer}}
	switch {
	case now.DailyLimit != clerksLimit:
		told.Lines[0] = "LOST UPDATE: A's limit put back"
	case now.Nickname != rename:
		told.Lines[0] = "LOST UPDATE: B's rename is gone"
	}
	if moved || now.DailyLimit != clerksLimit || now.Nickname != rename {
		told.Outcome = dashboard.Harmed
	}
	return told
}

func (t *Traffic) invoice(ctx context.Context, b Backend, token string, n int64, pay bank.TransferRequest) dashboard.Told {
	cl := clerk{t: t, b: b, token: token}
	first := cl.send(ctx, http.MethodPost, "/transfers", "", fmt.Sprintf("s%d-invoice-a", n), pay)
	second := cl.send(ctx, http.MethodPost, "/transfers", "", fmt.Sprintf("s%d-invoice-b", n), pay)
	st, err := b.State(ctx)
	if err != nil {
		return untold("lab state: " + err.Error())
	}
	paid := st.Executions[pay.Metadata["op"]]
	switch {
	case paid > 1:
		head := fmt.Sprintf("INVOICE PAID %d TIMES", paid)
		if paid == 2 {
			head = "INVOICE PAID TWICE"
		}
		return dashboard.Told{Outcome: dashboard.Harmed, Lines: []string{head,
			"2nd clerk, new key: " + answered(second),
			fmt.Sprintf("₩%s moved %d×; reference ignored", dashboard.Short(pay.Amount), paid)}}
	case paid == 1 && second.Problem == problem.DuplicateReference.URI():
		loc := second.Header.Get("Location")
		original := "→ " + loc
		if loc != "" && loc == first.Header.Get("Location") {
			original = "→ " + strings.TrimPrefix(loc, "/transfers/") + " (the 1st)"
		}
		return dashboard.Told{Outcome: dashboard.Held, Lines: []string{
			"invoice " + pay.Reference + " paid once", "2nd clerk: 409 duplicate-reference", original}}
	case paid == 1:
		return dashboard.Told{Outcome: dashboard.Held, Lines: []string{
			"invoice " + pay.Reference + " paid once", "2nd clerk, new key: " + answered(second)}}
	}
	return untold(fmt.Sprintf("invoice not paid: %s, then %s", answered(first), answered(second)))
}
