package bank_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/problem"
	"idemlab/kit/sqlitedb"
)

type fixture struct {
	db        *sqlitedb.DB
	bank      *bank.Bank
	faults    *bank.Faults
	clock     *clock.Clock
	customers []bank.Customer
}

func setup(t *testing.T, opening int64) fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := bank.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	clk, err := clock.Open(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	faults := &bank.Faults{}
	b := bank.New(db.DB, clk, faults, func() time.Duration { return 0 })
	tx, _ := db.Begin()
	p := bank.DefaultParams()
	p.OpeningBalance = opening
	cs := bank.Population(p)
	if err := bank.Insert(ctx, tx, cs, p.OpeningBalance); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, bank: b, faults: faults, clock: clk, customers: cs}
}

func (f fixture) transfer(t *testing.T, customer string, req bank.TransferRequest, commit bool) (bank.Transfer, error) {
	t.Helper()
	tx, err := f.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tr, err := f.bank.Transfer(context.Background(), tx, customer, req)
	if err == nil && commit {
		err = tx.Commit()
	}
	return tr, err
}

func TestTransfer_MovesMoneyAndCountsTheOp(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	req := bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 300, Metadata: map[string]string{"op": "op-1"}}
	for range 2 {
		if _, err := f.transfer(t, a.ID, req, true); err != nil {
			t.Fatal(err)
		}
	}
	ex, _ := f.bank.Executions(context.Background())
	if ex["op-1"] != 2 {
		t.Fatalf("executions of op-1 = %d, want 2 (the bank counts; it does not prevent)", ex["op-1"])
	}
	acc, _ := f.bank.Account(context.Background(), a.ID, a.Accounts[0])
	if acc.Balance != 400 {
		t.Fatalf("balance = %d, want 400", acc.Balance)
	}
}

func TestTransfer_RolledBackMovesNothing(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	req := bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 300, Metadata: map[string]string{"op": "op-1"}}
	if _, err := f.transfer(t, a.ID, req, false); err != nil {
		t.Fatal(err)
	}
	ex, _ := f.bank.Executions(context.Background())
	acc, _ := f.bank.Account(context.Background(), a.ID, a.Accounts[0])
	if ex["op-1"] != 0 || acc.Balance != 1000 {
		t.Fatalf("after rollback: executions %d, balance %d", ex["op-1"], acc.Balance)
	}
}

func TestTransfer_Problems(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	cases := []struct {
		name     string
		customer string
		req      bank.TransferRequest
		want     *problem.Type
	}{
		{"insufficient funds", a.ID, bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 1001}, problem.InsufficientFunds},
		{"someone else's account", b.ID, bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 1}, problem.Forbidden},
		{"unknown source", a.ID, bank.TransferRequest{From: "acc_none", To: b.Accounts[0], Amount: 1}, problem.UnknownAccount},
		{"unknown destination", a.ID, bank.TransferRequest{From: a.Accounts[0], To: "acc_none", Amount: 1}, problem.UnknownAccount},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.transfer(t, tc.customer, tc.req, true); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %s", err, tc.want.Name)
			}
			if err := f.bank.CheckTransfer(context.Background(), tc.customer, tc.req); tc.want != problem.InsufficientFunds && !errors.Is(err, tc.want) {
				t.Fatalf("CheckTransfer err = %v, want %s", err, tc.want.Name)
			}
		})
	}
}

func TestTransfer_InjectedFailureMovesNothing(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	f.faults.FailNext.Arm(1)
	req := bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 5}
	if _, err := f.transfer(t, a.ID, req, true); !errors.Is(err, bank.ErrInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	if _, err := f.transfer(t, a.ID, req, true); err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}
}

func TestPopulation_IsAPureFunctionOfTheSeed(t *testing.T) {
	p := bank.DefaultParams()
	a, b := bank.Population(p), bank.Population(p)
	if a[0].Token != b[0].Token || a[2].OtherToken != b[2].OtherToken || a[3].Accounts[1] != b[3].Accounts[1] {
		t.Fatal("same seed, different population")
	}
	p.Seed++
	if c := bank.Population(p)[0]; c.Token == a[0].Token || c.OtherToken == a[0].OtherToken {
		t.Fatal("another seed, same token")
	}
}

// The second tokens are drawn from a stream of their own: the ids,
// accounts and first tokens a seed gives are the ones it gave before
// customers had a second token (docs/api.md prints seed 1's, and the
// shipped datasets name its accounts).
func TestPopulation_TheSecondTokensLeaveTheRestAsItWas(t *testing.T) {
	c := bank.Population(bank.DefaultParams())[0]
	if c.ID != "cus_7scdtyhh" || c.Token != "tok_fjbr254nsafsui87wfyawjzq" || c.Accounts[0] != "acc_6qcn5mfu" || c.Accounts[1] != "acc_m96qq824" {
		t.Fatalf("seed 1's first customer is %+v: its id, token or accounts changed", c)
	}
}

func TestInsert_EachOfACustomersTwoTokensIsThatCustomer(t *testing.T) {
	f := setup(t, 1000)
	seen := map[string]bool{}
	for _, c := range f.customers {
		if c.OtherToken == "" || c.OtherToken == c.Token || len(c.OtherToken) != len(c.Token) {
			t.Fatalf("customer %s: tokens %q and %q, want two of one length", c.ID, c.Token, c.OtherToken)
		}
		for _, token := range []string{c.Token, c.OtherToken} {
			if seen[token] {
				t.Fatalf("token %q handed out twice", token)
			}
			seen[token] = true
			if got, err := f.bank.CustomerByToken(context.Background(), token); err != nil || got != c.ID {
				t.Fatalf("token %q authenticates %q (%v), want %s", token, got, err, c.ID)
			}
		}
	}
}

func TestDrawTokens_NewTokensTheSeedsIdsAndAccounts(t *testing.T) {
	seeded := bank.Population(bank.DefaultParams())
	a, b := bank.Population(bank.DefaultParams()), bank.Population(bank.DefaultParams())
	bank.DrawTokens(a)
	bank.DrawTokens(b)
	for i := range seeded {
		if a[i].ID != seeded[i].ID || a[i].Accounts[1] != seeded[i].Accounts[1] {
			t.Fatalf("customer %d changed: %+v, seed gives %+v", i, a[i], seeded[i])
		}
		if a[i].Token == seeded[i].Token || a[i].Token == b[i].Token || len(a[i].Token) != len(seeded[i].Token) {
			t.Fatalf("customer %d: drawn tokens %q and %q, the seed's %q: want two new ones of its length",
				i, a[i].Token, b[i].Token, seeded[i].Token)
		}
		if a[i].OtherToken == seeded[i].OtherToken || a[i].OtherToken == b[i].OtherToken || a[i].OtherToken == a[i].Token || len(a[i].OtherToken) != len(seeded[i].OtherToken) {
			t.Fatalf("customer %d: drawn other tokens %q and %q (its first %q), the seed's %q: want two new ones of its length, not its first",
				i, a[i].OtherToken, b[i].OtherToken, a[i].Token, seeded[i].OtherToken)
		}
	}
}

func TestTransfer_KeepsItsReference(t *testing.T) {
	f := setup(t, 1000)
	a, b := f.customers[0], f.customers[1]
	req := bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 300, Reference: "INV-2026-0042"}
	tr, err := f.transfer(t, a.ID, req, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.bank.GetTransfer(context.Background(), a.ID, tr.ID)
	if err != nil || tr.Reference != req.Reference || got.Reference != req.Reference {
		t.Fatalf("answered reference %q, read back %q (err %v); want %q", tr.Reference, got.Reference, err, req.Reference)
	}
}

// TestMigrate_AddsReferenceToAnOlderDatabase: a lab database made before
// transfers carried a reference gets the column, and its transfers read
// back without one.
func TestMigrate_AddsReferenceToAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE transfers (
		id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, from_account TEXT NOT NULL, to_account TEXT NOT NULL,
		amount INTEGER NOT NULL, memo TEXT NOT NULL, metadata TEXT NOT NULL, op TEXT NOT NULL, created_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO transfers VALUES ('tr_old', 'cus_a', 'acc_a', 'acc_b', 5, '', '', '', '')`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := bank.Migrate(ctx, db.DB); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	var ref string
	if err := db.QueryRowContext(ctx, `SELECT reference FROM transfers WHERE id = 'tr_old'`).Scan(&ref); err != nil || ref != "" {
		t.Fatalf("reference %q, err %v; want the column, empty", ref, err)
	}
}

// TestExecutedOps_ListEveryExecutionInPages: paged by the last id of
// each page, the listing of transfers and that of deposits each hold
// every committed execution of their kind once, with the op its metadata
// names (none for one without), its amount and, for a transfer, its
// outbox row's created_at if it has one, and nothing a rolled-back
// one wrote; a cursor that is not an id of the listing's kind is refused
// with 400. It catches a page that skips or repeats the execution at its
// edge, an op or amount read from the wrong place, a listing of
// uncommitted work or of the other kind, and a cursor of the other kind,
// or of its kind in capitals, taken, which would list every deposit after
// a transfer's id, or none, and every one after a capitalized id.
func TestExecutedOps_ListEveryExecutionInPages(t *testing.T) {
	f := setup(t, 100_000)
	a, b := f.customers[0], f.customers[1]
	ctx := context.Background()
	// each executes one of a kind, of amount, as op, and returns its id.
	type each func(t *testing.T, op string, amount int64, commit bool) string
	deposit := func(t *testing.T, op string, amount int64, commit bool) string {
		t.Helper()
		tx, err := f.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		d, err := f.bank.Deposit(ctx, tx, a.ID, bank.DepositRequest{Account: a.Accounts[0], Amount: amount, Metadata: opMetadata(op)})
		if err == nil && commit {
			err = tx.Commit()
		}
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	transfer := func(t *testing.T, op string, amount int64, commit bool) string {
		t.Helper()
		tr, err := f.transfer(t, a.ID, bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: amount, Metadata: opMetadata(op)}, commit)
		if err != nil {
			t.Fatal(err)
		}
		return tr.ID
	}
	lists := []struct {
		kind  string
		make  each
		list  func(context.Context, string, int) ([]bank.Executed, error)
		other each
	}{
		{"transfers", transfer, f.bank.TransferOps, deposit},
		{"deposits", deposit, f.bank.DepositOps, transfer},
	}
	made := map[string]map[string]bank.Executed{}
	for _, l := range lists {
		made[l.kind] = map[string]bank.Executed{}
		for i := range 7 {
			op := fmt.Sprintf("%s-%d", l.kind, i)
			if i == 3 {
				op = ""
			}
			id := l.make(t, op, int64(10+i), true)
			made[l.kind][id] = bank.Executed{ID: id, Op: op, Amount: int64(10 + i)}
			if l.kind == "transfers" && i == 5 {
				// A stage 9 transfer: its outbox row's instant is listed.
				const at = "2026-03-01T09:00:00.123Z"
				if _, err := f.db.ExecContext(ctx, `INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
					id, id, a.Accounts[0], b.Accounts[0], 15, at); err != nil {
					t.Fatal(err)
				}
				made[l.kind][id] = bank.Executed{ID: id, Op: op, Amount: 15, OutboxAt: at}
			}
			if l.kind == "transfers" && i == 6 {
				// One whose row the relay marked sent: that too.
				const at, sent = "2026-03-01T09:00:01.000Z", "2026-03-01T09:00:01.250Z"
				if _, err := f.db.ExecContext(ctx, `INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
					id, id, a.Accounts[0], b.Accounts[0], 16, at, sent); err != nil {
					t.Fatal(err)
				}
				made[l.kind][id] = bank.Executed{ID: id, Op: op, Amount: 16, OutboxAt: at, OutboxSentAt: sent}
			}
		}
		l.make(t, l.kind+"-rolled-back", 99, false)
	}
	for _, l := range lists {
		t.Run(l.kind, func(t *testing.T) {
			got := map[string]bank.Executed{}
			after, pages := "", 0
			for {
				page, err := l.list(ctx, after, 3)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, x := range page {
					if _, twice := got[x.ID]; twice || x.ID <= after {
						t.Errorf("%s listed again or out of order (after %q)", x.ID, after)
					}
					got[x.ID], after = x, x.ID
				}
				if len(page) < 3 {
					break
				}
			}
			if !maps.Equal(got, made[l.kind]) || pages != 3 {
				t.Errorf("listed %v in %d pages; want %v in 3", got, pages, made[l.kind])
			}
			other := l.other(t, "", 1, false)
			// An id of the kind in capitals after its prefix sorts before
			// every real one, as another kind's id may.
			prefix, rest, _ := strings.Cut(after, "_")
			shouted := prefix + "_" + strings.ToUpper(rest)
			for _, after := range []string{other, "x", strings.ToUpper(after), shouted, after + "a"} {
				if page, err := l.list(ctx, after, 3); !errors.Is(err, problem.InvalidRequest) {
					t.Errorf("after %q: %v, %v; want %s", after, page, err, problem.InvalidRequest.URI())
				}
			}
		})
	}
}

// opMetadata is the metadata that names op, none for no op.
func opMetadata(op string) map[string]string {
	if op == "" {
		return nil
	}
	return map[string]string{"op": op}
}

// TestMigrate_LedgerEntriesAreNumberedWithoutASequence: a new database
// numbers ledger entries by their rowid, with no sqlite_sequence row read
// and written for each entry, and one made with AUTOINCREMENT keeps it and
// goes on numbering from it. It catches AUTOINCREMENT back in the schema,
// and a migration that cannot open the older table.
func TestMigrate_LedgerEntriesAreNumberedWithoutASequence(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 100_000)
	a, b := f.customers[0], f.customers[1]
	if _, err := f.transfer(t, a.ID, bank.TransferRequest{From: a.Accounts[0], To: b.Accounts[0], Amount: 10}, true); err != nil {
		t.Fatal(err)
	}
	var sequences int
	if err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'`).Scan(&sequences); err != nil {
		t.Fatal(err)
	}
	if sequences != 0 {
		t.Fatal("a new database keeps sqlite_sequence: some table of the bank is AUTOINCREMENT")
	}

	older, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer older.Close()
	if _, err := older.ExecContext(ctx, `CREATE TABLE ledger_entries (
		id INTEGER PRIMARY KEY AUTOINCREMENT, account_id TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL,
		amount INTEGER NOT NULL, balance_after INTEGER NOT NULL, created_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := older.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES ('ledger_entries', 41)`); err != nil {
		t.Fatal(err)
	}
	if err := bank.Migrate(ctx, older.DB); err != nil {
		t.Fatalf("migrate a database whose ledger is AUTOINCREMENT: %v", err)
	}
	var id int64
	if err := older.QueryRowContext(ctx, `INSERT INTO ledger_entries (account_id, kind, ref, amount, balance_after, created_at)
		VALUES ('acc_a', 'deposit', 'dp_a', 1, 1, '') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id != 42 {
		t.Fatalf("the older ledger's next entry is %d, want 42: it must keep its sequence", id)
	}
}
