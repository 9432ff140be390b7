package bank_test

import (
	"context"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/problem"
	"idemlab/kit/sqlitedb"
)

// TestOutbox_CountsAndDeadLetters: an owed row, a sent one and one set
// aside are each counted once, and the dead letter is read back with the
// core's answer; the sent row's lag is its sent_at less its created_at.
// A row a wrong relay both set aside and marked sent counts in each, never
// as owed less one, and its dead letter says it was marked sent. It
// catches a count that took a dead letter for owed (the relay would seem
// stuck for ever) or for sent (it would vanish from the lab's view).
func TestOutbox_CountsAndDeadLetters(t *testing.T) {
	f := setup(t, 1_000_000)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.outboxRows(t, t0, "owed", "sent", "dead", "dead and sent")
	got, err := f.bank.Outbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (bank.OutboxCounts{Pending: 1, Sent: 2, Dead: 2}); got != want {
		t.Errorf("Outbox %+v, want %+v", got, want)
	}
	dead, err := f.bank.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 || dead[0].Status != 422 || dead[0].Amount != 102 || dead[0].Key != "key-"+dead[0].TransferID || dead[0].Answer == "" || dead[0].SentAt != "" {
		t.Errorf("DeadLetters %+v, want the two rows set aside, the first with its key and the core's 422 and not sent", dead)
	}
	if len(dead) == 2 && dead[1].SentAt != clock.Format(t0.Add(time.Second)) {
		t.Errorf("the dead letter also marked sent reads sent_at %q, want %q", dead[1].SentAt, clock.Format(t0.Add(time.Second)))
	}
	lags, err := f.bank.DeliveryLags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lags) != 2 || lags[0] != 250*time.Millisecond || lags[1] != time.Second {
		t.Errorf("DeliveryLags %v, want [250ms 1s]: the rows marked sent", lags)
	}
}

// TestMigrate_GivesAnOlderOutboxKeysAndDeadLetters: an outbox made before
// rows carried a key gets the columns, and its rows the key they were
// sent under then (their transfer's id); a second migration changes
// nothing. Without it, a server on an older database file could not write
// a row.
func TestMigrate_GivesAnOlderOutboxKeysAndDeadLetters(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE outbox (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL UNIQUE,
		from_account TEXT NOT NULL, to_account TEXT NOT NULL, amount INTEGER NOT NULL, created_at TEXT NOT NULL, sent_at TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO outbox (transfer_id, from_account, to_account, amount, created_at) VALUES ('tr_old', 'a', 'b', 5, '')`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := bank.Migrate(ctx, db.DB); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	var key string
	var dead any
	if err := db.QueryRowContext(ctx, `SELECT core_key, dead_at FROM outbox WHERE transfer_id = 'tr_old'`).Scan(&key, &dead); err != nil || key != "tr_old" || dead != nil {
		t.Fatalf("core_key %q, dead_at %v, err %v; want tr_old, NULL", key, dead, err)
	}
}

// outboxRows makes one transfer of the first customer's for each of
// states, with an outbox row in that state ("owed", "sent", "dead",
// "dead and sent") written at t0, the dead ones with a 422 of the core's,
// and returns the transfers' ids in that order.
func (f fixture) outboxRows(t *testing.T, t0 time.Time, states ...string) []string {
	t.Helper()
	c := f.customers[0]
	var ids []string
	for i, state := range states {
		tr, err := f.transfer(t, c.ID, bank.TransferRequest{From: c.Accounts[0], To: c.Accounts[1], Amount: int64(100 + i)}, true)
		if err != nil {
			t.Fatal(err)
		}
		var sent, dead any
		var status, answer any
		switch state {
		case "sent":
			sent = clock.Format(t0.Add(250 * time.Millisecond))
		case "dead":
			dead, status, answer = clock.Format(t0), 422, `{"type":"/problems/posting-rejected"}`
		case "dead and sent":
			sent, dead, status, answer = clock.Format(t0.Add(time.Second)), clock.Format(t0), 422, `{"type":"/problems/posting-rejected"}`
		}
		if _, err := f.db.ExecContext(context.Background(), `INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at, sent_at, dead_at, dead_status, dead_answer)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tr.ID, "key-"+tr.ID, tr.From, tr.To, tr.Amount, clock.Format(t0), sent, dead, status, answer); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tr.ID)
	}
	return ids
}

// TestRedrive_MakesADeadLetterOwedAgain: a dead letter sent again is
// owed again (counted so, and no longer listed among the dead letters),
// under the key it was written with, and keeps the core's last answer;
// one a wrong relay also marked sent is owed again too, not sent. An
// owed row, a sent one, a dead letter already sent again, a transfer
// with no outbox row and no transfer at all each get a not-found problem
// and change nothing. It catches a redrive that clears dead_at alone (the
// row marked sent is never posted), one that drops the answer, or the
// key, and one that takes any row (a sent row owed again).
func TestRedrive_MakesADeadLetterOwedAgain(t *testing.T) {
	f := setup(t, 1_000_000)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ids := f.outboxRows(t, t0, "owed", "sent", "dead", "dead and sent")
	owedRow, sentRow, deadRow, deadSentRow := ids[0], ids[1], ids[2], ids[3]
	c := f.customers[0]
	bare, err := f.transfer(t, c.ID, bank.TransferRequest{From: c.Accounts[0], To: c.Accounts[1], Amount: 7}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{deadRow, deadSentRow} {
		d, err := f.bank.Redrive(ctx, id)
		if err != nil {
			t.Fatalf("Redrive(%s): %v", id, err)
		}
		if d.TransferID != id || d.Key != "key-"+id || d.Status != 422 || d.At != clock.Format(t0) {
			t.Errorf("Redrive(%s) = %+v, want the dead letter as it was", id, d)
		}
	}
	counts, err := f.bank.Outbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (bank.OutboxCounts{Pending: 3, Sent: 1, Dead: 0}); counts != want {
		t.Errorf("after two redrives: Outbox %+v, want %+v", counts, want)
	}
	if dead, err := f.bank.DeadLetters(ctx, 10); err != nil || len(dead) != 0 {
		t.Errorf("after two redrives: DeadLetters %+v, %v; want none", dead, err)
	}
	var key string
	var status int
	var answer string
	if err := f.db.QueryRowContext(ctx, `SELECT core_key, dead_status, dead_answer FROM outbox WHERE transfer_id = ?`, deadRow).Scan(&key, &status, &answer); err != nil {
		t.Fatal(err)
	}
	if key != "key-"+deadRow || status != 422 || answer == "" {
		t.Errorf("the row sent again holds key %q, answer %d %q; want its key and the core's last answer", key, status, answer)
	}
	for _, id := range []string{owedRow, sentRow, deadRow, bare.ID, "tr_none"} {
		_, err := f.bank.Redrive(ctx, id)
		if problem.From(err).Type != problem.NotFound {
			t.Errorf("Redrive(%s): %v, want a not-found problem", id, err)
		}
	}
	if after, err := f.bank.Outbox(ctx); err != nil || after != counts {
		t.Errorf("after the refused redrives: Outbox %+v, %v; want %+v, unchanged", after, err, counts)
	}
}
