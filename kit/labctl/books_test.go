package labctl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/server"
	stage5 "idemlab/solutions/stage5"
)

// lab is a lab server on a database of its own (the test target), reset
// to two customers with one account each.
type lab struct {
	hs        *httptest.Server
	db        *labdb.DB
	hub       *events.Hub
	admin     string
	customers []bank.Customer
}

func startLab(t *testing.T) lab {
	t.Helper()
	srv, err := server.New(context.Background(), server.Options{DB: labdb.TestTarget(), OwnDB: true, Lab: true, Stage: stage5.New})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	cs, _, err := srv.Lab().Reset(context.Background(), bank.Params{Seed: 3, Customers: 2, AccountsPerCustomer: 1, OpeningBalance: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return lab{hs: hs, db: srv.Lab().DB, hub: srv.Events(), admin: srv.AdminToken(), customers: cs}
}

// execute sends body to path (POST /transfers or /deposits) as the first
// customer, under key, and returns the id it made.
func (l lab) execute(t *testing.T, path, key, body string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, l.hs.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.customers[0].Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := l.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var made struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&made); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s %s: %d, %v", path, body, resp.StatusCode, err)
	}
	return made.ID
}

// get reads path with token and returns the status, the content type and
// the body.
func (l lab) get(t *testing.T, path, token string) (int, string, []byte) {
	t.Helper()
	return l.send(t, http.MethodGet, path, token, "")
}

// post sends body to path with token and returns what get does.
func (l lab) post(t *testing.T, path, token, body string) (int, string, []byte) {
	t.Helper()
	return l.send(t, http.MethodPost, path, token, body)
}

// send is get and post: a JSON body is sent unless it is empty.
func (l lab) send(t *testing.T, method, path, token, body string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, l.hs.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), answer
}

// TestBooks_ListTransfersAndDepositsInPages: GET /lab/transfers and GET
// /lab/deposits each list the executions of their kind, and only those,
// with the op and the amount, a page at a time in the order of their ids,
// all at once without a limit; a limit out of 1..1000 or not a number,
// and a cursor that is not an id of the listing's kind, get 400
// invalid-request as a problem; a customer's token gets 401. It catches a
// listing of the other kind or of both, a page that repeats the edge or
// skips past it, a member named otherwise than the kind, any limit taken,
// a cursor of the other kind, or of its kind in capitals, taken (a
// deposit's id sorts before every transfer's, a transfer's after every
// deposit's, a capitalized id before every id of its kind: all or nothing
// would be listed, as if it were so), and a listing open to customers.
func TestBooks_ListTransfersAndDepositsInPages(t *testing.T) {
	l := startLab(t)
	from, to := l.customers[0].Accounts[0], l.customers[1].Accounts[0]
	made := map[string]map[string]bank.Executed{"transfers": {}, "deposits": {}}
	for i := range 3 {
		op, amount := fmt.Sprintf("op-t%d", i), int64(10*(i+1))
		id := l.execute(t, "/transfers", op, fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"metadata":{"op":%q}}`, from, to, amount, op))
		made["transfers"][id] = bank.Executed{ID: id, Op: op, Amount: amount}
		op, amount = fmt.Sprintf("op-d%d", i), int64(100*(i+1))
		id = l.execute(t, "/deposits", op, fmt.Sprintf(`{"account":%q,"amount":%d,"metadata":{"op":%q}}`, from, amount, op))
		made["deposits"][id] = bank.Executed{ID: id, Op: op, Amount: amount}
	}
	anyID := func(kind string) string {
		for id := range made[kind] {
			return id
		}
		return ""
	}
	for kind, other := range map[string]string{"transfers": "deposits", "deposits": "transfers"} {
		t.Run(kind, func(t *testing.T) {
			read := func(query string) []bank.Executed {
				t.Helper()
				status, _, body := l.get(t, "/lab/"+kind+query, l.admin)
				page := map[string][]bank.Executed{}
				if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || page[kind] == nil {
					t.Fatalf("GET /lab/%s%s: %d %s", kind, query, status, body)
				}
				return page[kind]
			}
			got := map[string]bank.Executed{}
			after := ""
			var sizes []int
			for range 3 {
				page := read("?limit=2&after=" + after)
				sizes = append(sizes, len(page))
				for _, x := range page {
					if _, twice := got[x.ID]; twice || x.ID <= after {
						t.Errorf("%s listed again or out of order (after %q)", x.ID, after)
					}
					got[x.ID], after = x, x.ID
				}
			}
			if !maps.Equal(got, made[kind]) || !slices.Equal(sizes, []int{2, 1, 0}) {
				t.Errorf("read %v in pages of %v; want %v in pages of [2 1 0]", got, sizes, made[kind])
			}
			if all := read(""); len(all) != len(made[kind]) {
				t.Errorf("without a limit: %v, want every one of %v", all, made[kind])
			}
			prefix, rest, _ := strings.Cut(anyID(kind), "_")
			shouted := prefix + "_" + strings.ToUpper(rest) // sorts before every id of the kind
			for _, query := range []string{"?limit=0", "?limit=1001", "?limit=ten", "?after=" + anyID(other), "?after=" + strings.ToUpper(anyID(kind)), "?after=" + shouted, "?after=x"} {
				status, ctype, body := l.get(t, "/lab/"+kind+query, l.admin)
				var p problem.Body
				json.Unmarshal(body, &p)
				if status != http.StatusBadRequest || ctype != problem.ContentType || p.Type != problem.InvalidRequest.URI() || p.Detail == "" {
					t.Errorf("GET /lab/%s%s: %d %s %s; want 400 %s with a detail", kind, query, status, ctype, body, problem.InvalidRequest.URI())
				}
			}
			if status, _, body := l.get(t, "/lab/"+kind, l.customers[0].Token); status != http.StatusUnauthorized {
				t.Errorf("GET /lab/%s with a customer's token: %d %s; want 401", kind, status, body)
			}
		})
	}
}

// TestRedrive_RefusesWhatIsNotADeadLetter: POST /lab/outbox/redrive with
// no transfer named, an unknown member or a body that is not JSON gets
// 400 invalid-request; an unknown transfer (one whose id holds U+0000,
// which PostgreSQL cannot compare, too), and one with no outbox row
// (stage 5 writes none), 404 not-found; each a problem with a detail
// that says nothing was changed where something was looked up; a
// customer's token gets 401. It catches a control that takes any body, or
// answers 200 for a row it did not send again.
func TestRedrive_RefusesWhatIsNotADeadLetter(t *testing.T) {
	l := startLab(t)
	from, to := l.customers[0].Accounts[0], l.customers[1].Accounts[0]
	id := l.execute(t, "/transfers", "k1", fmt.Sprintf(`{"from":%q,"to":%q,"amount":10}`, from, to))
	for _, c := range []struct {
		body string
		want *problem.Type
	}{
		{``, problem.InvalidRequest},
		{`{}`, problem.InvalidRequest},
		{`{"transfer":"` + id + `"}`, problem.InvalidRequest},
		{`transfer_id=` + id, problem.InvalidRequest},
		{`{"transfer_id":"tr_none"}`, problem.NotFound},
		{`{"transfer_id":"tr_x\u0000y"}`, problem.NotFound},
		{`{"transfer_id":"` + id + `"}`, problem.NotFound},
	} {
		status, ctype, body := l.post(t, "/lab/outbox/redrive", l.admin, c.body)
		var p problem.Body
		json.Unmarshal(body, &p)
		if status != c.want.Status || ctype != problem.ContentType || p.Type != c.want.URI() || p.Detail == "" {
			t.Errorf("POST /lab/outbox/redrive %s: %d %s %s; want %d %s with a detail", c.body, status, ctype, body, c.want.Status, c.want.URI())
		}
	}
	if status, _, body := l.post(t, "/lab/outbox/redrive", l.customers[0].Token, `{"transfer_id":"`+id+`"}`); status != http.StatusUnauthorized {
		t.Errorf("POST /lab/outbox/redrive with a customer's token: %d %s; want 401", status, body)
	}
}

// TestRedrive_AnswersTheDeadLetterItSentAgain: POST /lab/outbox/redrive
// on a dead letter answers 200 with the dead letter as it was, under
// "redriven", and publishes it as a "redrive" event; GET /lab/outbox then
// counts its row owed and lists no dead letter; a second redrive of it
// gets 404 and publishes nothing. It catches a handler that answers
// before the row is owed again, or answers it under another name, and
// one that tells the event stream nothing of the operator's act, or tells
// it of one refused.
func TestRedrive_AnswersTheDeadLetterItSentAgain(t *testing.T) {
	l := startLab(t)
	heard, stop := l.hub.Subscribe(16)
	defer stop()
	from, to := l.customers[0].Accounts[0], l.customers[1].Accounts[0]
	id := l.execute(t, "/transfers", "k1", fmt.Sprintf(`{"from":%q,"to":%q,"amount":10}`, from, to))
	if _, err := l.db.ExecContext(t.Context(), `INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at, dead_at, dead_status, dead_answer)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, id, from, to, 10, "2026-01-02T03:04:05Z", "2026-01-02T03:04:06Z", 400, `{"type":"/problems/invalid-posting"}`); err != nil {
		t.Fatal(err)
	}
	body := `{"transfer_id":"` + id + `"}`
	status, _, answer := l.post(t, "/lab/outbox/redrive", l.admin, body)
	var got struct {
		Redriven bank.DeadLetter `json:"redriven"`
	}
	if err := json.Unmarshal(answer, &got); err != nil || status != http.StatusOK || got.Redriven.TransferID != id || got.Redriven.Status != 400 || got.Redriven.Key != id {
		t.Fatalf("POST /lab/outbox/redrive %s: %d %s; want 200 with the dead letter as it was", body, status, answer)
	}
	status, _, answer = l.get(t, "/lab/outbox", l.admin)
	var o labctl.Outbox
	if err := json.Unmarshal(answer, &o); err != nil || status != http.StatusOK || o.Counts != (bank.OutboxCounts{Pending: 1}) || len(o.DeadLetters) != 0 {
		t.Errorf("GET /lab/outbox after the redrive: %d %s; want the row owed and no dead letter", status, answer)
	}
	if status, _, answer := l.post(t, "/lab/outbox/redrive", l.admin, body); status != http.StatusNotFound {
		t.Errorf("POST /lab/outbox/redrive %s again: %d %s; want 404, the row owed already", body, status, answer)
	}
	// A clock event that moves nothing comes after every event the two
	// redrives published.
	if status, _, answer := l.post(t, "/lab/clock", l.admin, `{}`); status != http.StatusOK {
		t.Fatalf("POST /lab/clock {}: %d %s", status, answer)
	}
	var redrives []bank.DeadLetter
	for ev := range heard {
		if ev.Kind == events.KindClock {
			break
		}
		if ev.Kind == events.KindRedrive {
			var d bank.DeadLetter
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatalf("redrive event %s: %v", ev.Data, err)
			}
			redrives = append(redrives, d)
		}
	}
	if len(redrives) != 1 || redrives[0] != got.Redriven {
		t.Errorf("redrive events %+v; want one, the dead letter as it was (%+v)", redrives, got.Redriven)
	}
}
