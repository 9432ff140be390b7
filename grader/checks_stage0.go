package grader

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"idemlab/grader/targets"
	"idemlab/kit/accesslog"
	"idemlab/kit/bank"
)

func checkHappyPath(t *T, s Scenario) error {
	a, b := s.A, s.B
	amount := t.Amount(1, 500_000)
	req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], amount, t.Op()))
	res := t.Do(req)
	if res.Status != 201 || res.Header.Get("Location") == "" {
		return t.Fail(req.String(), res.String(), "201 Created with a Location header")
	}
	var tr bank.Transfer
	if err := json.Unmarshal(res.Body, &tr); err != nil || !strings.HasPrefix(tr.ID, "tr_") ||
		tr.Amount != amount || tr.BalanceAfter != 1_000_000-amount || tr.CreatedAt == "" {
		return t.Fail(req.String(), res.String(),
			fmt.Sprintf("a transfer body with an id tr_…, amount %d, balance_after %d and created_at", amount, 1_000_000-amount))
	}
	if loc := res.Header.Get("Location"); loc != "/transfers/"+tr.ID {
		return t.Fail(req.String(), "Location: "+loc, "Location: /transfers/"+tr.ID)
	}
	get := Request{Method: "GET", Path: "/transfers/" + tr.ID, Token: a.Token}
	if r := t.Do(get); r.Status != 200 {
		return t.Fail(get.String(), r.String(), "200 with the transfer")
	}
	dep := Deposit(b, t.Key(), DepositBody(b.Accounts[1], 777, t.Op()))
	if r := t.Do(dep); r.Status != 201 || !strings.HasPrefix(r.Header.Get("Location"), "/deposits/dp_") {
		return t.Fail(dep.String(), r.String(), "201 Created with Location: /deposits/dp_…")
	}
	st, err := t.Snapshot()
	if err != nil {
		return err
	}
	want := map[string]int64{a.Accounts[0]: 1_000_000 - amount, b.Accounts[0]: 1_000_000 + amount, b.Accounts[1]: 1_000_777}
	for id, w := range want {
		if st.Balances[id] != w {
			return t.Fail(req.String()+"\nthen "+dep.String(), fmt.Sprintf("balance of %s is %d", id, st.Balances[id]), fmt.Sprintf("%d", w))
		}
	}
	return nil
}

// hostile is one request that must be refused.
type hostile struct {
	name   string
	req    func(a, b bank.Customer, key string) Request
	status int
	ptype  string
}

func hostileTable() []hostile {
	body := func(f func(a, b bank.Customer) string) func(a, b bank.Customer, key string) Request {
		return func(a, b bank.Customer, key string) Request { return Transfer(a, key, f(a, b)) }
	}
	good := func(a, b bank.Customer) string { return TransferBody(a.Accounts[0], b.Accounts[0], 1000, "op-hostile") }
	with := func(members string) func(a, b bank.Customer) string {
		return func(a, b bank.Customer) string {
			return fmt.Sprintf(`{"from":%q,"to":%q,%s}`, a.Accounts[0], b.Accounts[0], members)
		}
	}
	// changed is the good transfer with one thing about the request
	// changed (its headers).
	changed := func(change func(r *Request)) func(a, b bank.Customer, key string) Request {
		return func(a, b bank.Customer, key string) Request {
			r := Transfer(a, key, good(a, b))
			change(&r)
			return r
		}
	}
	const invalid, p400 = 400, "/problems/invalid-request"
	return []hostile{
		{"not JSON", body(func(a, b bank.Customer) string { return `{"from":` }), invalid, p400},
		{"two JSON values", body(func(a, b bank.Customer) string { return good(a, b) + ` {}` }), invalid, p400},
		{"trailing garbage", body(func(a, b bank.Customer) string { return good(a, b) + `x` }), invalid, p400},
		{"an array", body(func(a, b bank.Customer) string { return `[` + good(a, b) + `]` }), invalid, p400},
		{"empty body", body(func(a, b bank.Customer) string { return " " }), invalid, p400},
		{"invalid UTF-8", body(with(`"amount":1000,"memo":"caf` + "\xe9" + `"`)), invalid, p400},
		{"a NUL in the memo", body(with(`"amount":1000,"memo":"rent\u0000"`)), invalid, p400},
		{"a NUL in an account id", body(func(a, b bank.Customer) string {
			return fmt.Sprintf(`{"from":%q,"to":"acc_nowhere\u0000","amount":1000}`, a.Accounts[0])
		}), invalid, p400},
		{"duplicate amount", body(with(`"amount":1,"amount":1000000`)), invalid, p400},
		{"duplicate through an escape", body(with(`"amount":1,"\u0061mount":1000000`)), invalid, p400},
		{"duplicate inside metadata", body(with(`"amount":1000,"metadata":{"op":"a","op":"b"}`)), invalid, p400},
		{"unknown member", body(with(`"amount":1000,"currency":"KRW"`)), invalid, p400},
		{"amount as a string", body(with(`"amount":"1000"`)), invalid, p400},
		{"amount with a fraction", body(with(`"amount":0.5`)), invalid, p400},
		{"negative amount", body(with(`"amount":-1`)), invalid, p400},
		{"zero amount", body(with(`"amount":0`)), invalid, p400},
		{"amount over the limit", body(with(`"amount":1e12`)), invalid, p400},
		{"amount with a huge exponent", body(with(`"amount":1e999999999`)), invalid, p400},
		{"amount true", body(with(`"amount":true`)), invalid, p400},
		{"amount null", body(with(`"amount":null`)), invalid, p400},
		{"no amount", body(with(`"memo":"x"`)), invalid, p400},
		{"from as a number", body(func(a, b bank.Customer) string {
			return fmt.Sprintf(`{"from":7,"to":%q,"amount":1000}`, b.Accounts[0])
		}), invalid, p400},
		{"from equals to", body(func(a, b bank.Customer) string {
			return TransferBody(a.Accounts[0], a.Accounts[0], 1000, "op-self")
		}), invalid, p400},
		{"memo of 141 characters", body(with(`"amount":1000,"memo":"` + strings.Repeat("가", 141) + `"`)), invalid, p400},
		{"17 metadata members", body(with(`"amount":1000,"metadata":{` + manyMembers(17) + `}`)), invalid, p400},
		{"metadata value of 65 characters", body(with(`"amount":1000,"metadata":{"op":"` + strings.Repeat("x", 65) + `"}`)), invalid, p400},
		{"metadata value a number", body(with(`"amount":1000,"metadata":{"op":1}`)), invalid, p400},
		{"1 MiB body", body(with(`"amount":1000,"memo":"` + strings.Repeat("a", 1<<20) + `"`)), 413, "/problems/request-too-large"},
		{"text/plain", changed(func(r *Request) { r.ContentType = "text/plain" }), 415, "/problems/unsupported-media-type"},
		{"charset latin-1", changed(func(r *Request) { r.ContentType = "application/json; charset=latin-1" }), 415, "/problems/unsupported-media-type"},
		{"no token", changed(func(r *Request) { r.Token = "" }), 401, "/problems/unauthorized"},
		{"unknown token", changed(func(r *Request) { r.Token = "tok_nobody" }), 401, "/problems/unauthorized"},
		{"from another customer's account", body(func(a, b bank.Customer) string {
			return TransferBody(b.Accounts[0], a.Accounts[0], 1000, "op-theft")
		}), 403, "/problems/forbidden"},
		{"deposit into another customer's account", func(a, b bank.Customer, key string) Request {
			return Deposit(a, key, DepositBody(b.Accounts[0], 1000, "op-gift"))
		}, 403, "/problems/forbidden"},
		{"to an unknown account", body(func(a, b bank.Customer) string {
			return TransferBody(a.Accounts[0], "acc_nowhere", 1000, "op-void")
		}), 422, "/problems/unknown-account"},
	}
}

func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"m%d":"v"`, i)
	}
	return strings.Join(parts, ",")
}

func checkHostileInput(t *T, s Scenario) error {
	before, err := t.Snapshot()
	if err != nil {
		return err
	}
	for _, h := range hostileTable() {
		req := h.req(s.A, s.B, t.Key())
		res := t.Do(req)
		if res.Status != h.status || res.Problem() != h.ptype {
			return t.Fail(h.name+": "+req.String(), res.String(), fmt.Sprintf("%d %s", h.status, h.ptype))
		}
		after, err := t.Snapshot()
		if err != nil {
			return err
		}
		if d := before.Diff(after); d != "" {
			return t.Fail(h.name+": "+req.String(), res.String()+", and "+d, "nothing stored, nothing moved")
		}
	}
	return nil
}

func checkOwnerOnlyReads(t *T, s Scenario) error {
	a, b := s.A, s.B
	req := Transfer(a, t.Key(), TransferBody(a.Accounts[0], b.Accounts[0], 5000, t.Op()))
	res := t.Do(req)
	var tr bank.Transfer
	if res.Status != 201 || json.Unmarshal(res.Body, &tr) != nil {
		return t.Fail(req.String(), res.String(), "201 with the transfer")
	}
	cases := []struct {
		req    Request
		status int
	}{
		{Request{Method: "GET", Path: "/accounts/" + a.Accounts[0], Token: a.Token}, 200},
		{Request{Method: "GET", Path: "/accounts/" + a.Accounts[0] + "/entries", Token: a.Token}, 200},
		{Request{Method: "GET", Path: "/accounts/" + a.Accounts[0]}, 401},
		{Request{Method: "GET", Path: "/accounts/" + a.Accounts[0], Token: b.Token}, 403},
		{Request{Method: "GET", Path: "/accounts/" + a.Accounts[0] + "/entries", Token: b.Token}, 403},
		{Request{Method: "GET", Path: "/accounts/acc_nowhere", Token: a.Token}, 404},
		{Request{Method: "GET", Path: "/transfers/" + tr.ID, Token: b.Token}, 403},
		{Request{Method: "GET", Path: "/transfers/tr_nowhere", Token: a.Token}, 404},
		{Request{Method: "GET", Path: "/transfers/tr_nowhere%00", Token: a.Token}, 404},
	}
	for _, c := range cases {
		if r := t.Do(c.req); r.Status != c.status {
			return t.Fail(c.req.String(), r.String(), fmt.Sprintf("%d", c.status))
		}
	}
	return nil
}

// ShippedDay is the small day shipped in datasets/, with its access log
// and the answer key of stage 0's tally.
const ShippedDay = "datasets/day-small"

func checkTallyShipped(t *T) error {
	tally := t.Subject().Tally
	if tally == nil {
		return fmt.Errorf("the subject has no Tally")
	}
	root, err := targets.Root()
	if err != nil {
		return err
	}
	logPath := filepath.Join(root, ShippedDay+".access.jsonl")
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	raw, err := os.ReadFile(filepath.Join(root, ShippedDay+".answer.json"))
	if err != nil {
		return err
	}
	var want accesslog.Report
	if err := json.Unmarshal(raw, &want); err != nil {
		return err
	}
	got, err := tally(f)
	sent := "Tally(" + ShippedDay + ".access.jsonl)"
	if err != nil {
		return t.Fail(sent, "error: %v", describeReport(want), err)
	}
	if got != want {
		return t.Fail(sent, "%s", fmt.Sprintf("%s (%s.answer.json)", describeReport(want), ShippedDay), reportDiff(got, want))
	}
	return nil
}
