// Package bank is the lab's core banking: customers, accounts, the ledger,
// transfers and deposits, and the count of executions per logical
// operation, which is how a double transfer is seen.
//
// Transfer and Deposit run inside a transaction the caller owns: the stage
// decides what else goes into that transaction (from stage 4 on, the stored
// response) and when it commits. CallCore is the simulated wait on the core
// banking system; it happens outside any transaction.
package bank

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/fault"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// TransferRequest is a validated POST /transfers body.
type TransferRequest struct {
	From     string            `json:"from"`
	To       string            `json:"to"`
	Amount   int64             `json:"amount"`
	Memo     string            `json:"memo,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Reference is the customer's business key for the transfer (an
	// invoice number), "" when there is none. The bank stores and shows
	// it; keeping one transfer per reference is the stage's (stage 8 on).
	Reference string `json:"reference,omitempty"`
}

// DepositRequest is a validated POST /deposits body.
type DepositRequest struct {
	Account  string            `json:"account"`
	Amount   int64             `json:"amount"`
	Memo     string            `json:"memo,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Transfer is an executed transfer, as the API returns it.
type Transfer struct {
	ID           string            `json:"id"`
	From         string            `json:"from"`
	To           string            `json:"to"`
	Amount       int64             `json:"amount"`
	Memo         string            `json:"memo,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	Reference    string            `json:"reference,omitempty"`
	BalanceAfter int64             `json:"balance_after"`
	CreatedAt    string            `json:"created_at"`
}

// Deposit is an executed deposit, as the API returns it.
type Deposit struct {
	ID           string            `json:"id"`
	Account      string            `json:"account"`
	Amount       int64             `json:"amount"`
	Memo         string            `json:"memo,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	BalanceAfter int64             `json:"balance_after"`
	CreatedAt    string            `json:"created_at"`
}

// Account is an account as GET /accounts/{id} shows it.
type Account struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Balance  int64  `json:"balance"`
}

// Faults are the business-write faults lab mode arms. The zero value
// injects nothing.
type Faults struct {
	// FailNext counts down the business writes that return an internal error.
	FailNext fault.Countdown
	// CrashNext counts down the business writes that end the process
	// (through Crash) after their writes and before their commit.
	CrashNext fault.Countdown
	// Crash ends the process; it is called with the fault point's name.
	Crash func(point string)
}

// ErrInjected is what a business write returns when fail-in-transfer is armed.
var ErrInjected = errors.New("injected failure in the business write")

// Bank is safe for concurrent use.
type Bank struct {
	db          *sql.DB
	clock       *clock.Clock
	faults      *Faults
	coreLatency func() time.Duration
	calls       coreCalls
}

// coreCalls counts, by op, the requests that called the core, in this
// process's memory: what the lab observes of a side effect outside the
// database, which a takeover that two retries both win runs twice.
type coreCalls struct {
	mu   sync.Mutex
	byOp map[string]int64
}

// New returns a bank over db. coreLatency reports, at each call, how long
// CallCore waits.
func New(db *sql.DB, clk *clock.Clock, faults *Faults, coreLatency func() time.Duration) *Bank {
	return &Bank{db: db, clock: clk, faults: faults, coreLatency: coreLatency}
}

// CallCore is the simulated call to the core banking system that every
// business operation waits on. Call it outside any transaction: a
// transaction held open across a slow remote call blocks every other writer.
// It returns ctx's error if the request is abandoned while waiting.
func (b *Bank) CallCore(ctx context.Context) error {
	if l, ok := ctx.Value(execLogKey{}).(*ExecutionLog); ok {
		l.coreCalled()
	}
	d := b.coreLatency()
	if d <= 0 {
		return nil
	}
	if err := fault.Hold(ctx, d); err != nil {
		return fmt.Errorf("call core: %w", err)
	}
	return nil
}

// CountCoreCall counts a call to the core by a request of op (see
// ExecutionLog.OnCoreCall). A request without an op is not counted.
func (b *Bank) CountCoreCall(op string) {
	if op == "" {
		return
	}
	b.calls.mu.Lock()
	defer b.calls.mu.Unlock()
	if b.calls.byOp == nil {
		b.calls.byOp = map[string]int64{}
	}
	b.calls.byOp[op]++
}

// CoreCalls returns, by op, how many requests called the core since this
// process started or the lab was last reset (ForgetCoreCalls).
func (b *Bank) CoreCalls() map[string]int64 {
	b.calls.mu.Lock()
	defer b.calls.mu.Unlock()
	out := map[string]int64{}
	maps.Copy(out, b.calls.byOp)
	return out
}

// ForgetCoreCalls forgets every core call counted: a reset's fresh start.
func (b *Bank) ForgetCoreCalls() {
	b.calls.mu.Lock()
	defer b.calls.mu.Unlock()
	b.calls.byOp = nil
}

// Transfer moves req.Amount from req.From (which must belong to customer)
// to req.To inside tx. It returns a problem error for an unknown account
// (422), a source account of another customer (403), insufficient funds
// (422) and a transfer over the source account's daily limit (422
// daily-limit-exceeded); any other error is internal. Nothing is committed: the caller
// commits tx, or rolls it back.
func (b *Bank) Transfer(ctx context.Context, tx *sql.Tx, customer string, req TransferRequest) (Transfer, error) {
	if err := b.injectFailure(); err != nil {
		return Transfer{}, err
	}
	if err := b.lockAccounts(ctx, tx, req.From, req.To); err != nil {
		return Transfer{}, err
	}
	from, err := readAccount(ctx, tx, req.From)
	if err != nil {
		return Transfer{}, err
	}
	if from.Customer != customer {
		return Transfer{}, problem.New(problem.Forbidden, "account %s belongs to another customer", req.From)
	}
	if _, err := readAccount(ctx, tx, req.To); err != nil {
		return Transfer{}, err
	}
	if from.Balance < req.Amount {
		return Transfer{}, problem.New(problem.InsufficientFunds,
			"account %s holds %d, the transfer needs %d", req.From, from.Balance, req.Amount)
	}
	at := b.clock.Now()
	if err := checkDailyLimit(ctx, tx, req.From, req.Amount, at); err != nil {
		return Transfer{}, err
	}
	now := clock.Format(at)
	t := Transfer{
		ID: newID("tr_"), From: req.From, To: req.To, Amount: req.Amount,
		Memo: req.Memo, Metadata: req.Metadata, Reference: req.Reference,
		BalanceAfter: from.Balance - req.Amount, CreatedAt: now,
	}
	op := req.Metadata["op"]
	w := fault.MarkBusinessWrite(ctx)
	steps := []struct {
		query string
		args  []any
	}{
		{`UPDATE accounts SET balance = balance - ? WHERE id = ?`, []any{req.Amount, req.From}},
		{`UPDATE accounts SET balance = balance + ? WHERE id = ?`, []any{req.Amount, req.To}},
		{`INSERT INTO transfers (id, customer_id, from_account, to_account, amount, memo, metadata, reference, op, created_at)
		  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{t.ID, customer, t.From, t.To, t.Amount, t.Memo, metadataJSON(t.Metadata), t.Reference, op, now}},
		{`INSERT INTO ledger_entries (account_id, kind, ref, amount, balance_after, created_at)
		  VALUES (?, 'transfer', ?, ?, (SELECT balance FROM accounts WHERE id = ?), ?)`,
			[]any{t.From, t.ID, -t.Amount, t.From, now}},
		{`INSERT INTO ledger_entries (account_id, kind, ref, amount, balance_after, created_at)
		  VALUES (?, 'transfer', ?, ?, (SELECT balance FROM accounts WHERE id = ?), ?)`,
			[]any{t.To, t.ID, t.Amount, t.To, now}},
	}
	for _, s := range steps {
		if _, err := tx.ExecContext(w, s.query, s.args...); err != nil {
			return Transfer{}, fmt.Errorf("transfer %s: %w", t.ID, err)
		}
	}
	if err := b.countExecution(w, tx, op, "transfer", t.ID, t.Amount); err != nil {
		return Transfer{}, err
	}
	Made(ctx, t.ID)
	b.injectCrash()
	return t, nil
}

// madeKey is the context key of the function WithMade installs.
type madeKey struct{}

// WithMade returns ctx under which Transfer tells made the id of each
// transfer it makes, as it makes it (before the caller commits): how the
// lab server learns which transfers a customer's request made while it
// serves the request (core.Client.Serving).
func WithMade(ctx context.Context, made func(id string)) context.Context {
	return context.WithValue(ctx, madeKey{}, made)
}

// Made tells the function WithMade installed in ctx, if any, that the
// transfer id was made under ctx. Transfer calls it.
func Made(ctx context.Context, id string) {
	if made, ok := ctx.Value(madeKey{}).(func(string)); ok {
		made(id)
	}
}

// Deposit puts req.Amount into req.Account, which must belong to customer,
// inside tx. Errors as for Transfer.
func (b *Bank) Deposit(ctx context.Context, tx *sql.Tx, customer string, req DepositRequest) (Deposit, error) {
	if err := b.injectFailure(); err != nil {
		return Deposit{}, err
	}
	if err := b.lockAccounts(ctx, tx, req.Account); err != nil {
		return Deposit{}, err
	}
	acc, err := readAccount(ctx, tx, req.Account)
	if err != nil {
		return Deposit{}, err
	}
	if acc.Customer != customer {
		return Deposit{}, problem.New(problem.Forbidden, "account %s belongs to another customer", req.Account)
	}
	now := clock.Format(b.clock.Now())
	d := Deposit{
		ID: newID("dp_"), Account: req.Account, Amount: req.Amount,
		Memo: req.Memo, Metadata: req.Metadata, BalanceAfter: acc.Balance + req.Amount, CreatedAt: now,
	}
	op := req.Metadata["op"]
	w := fault.MarkBusinessWrite(ctx)
	if _, err := tx.ExecContext(w, `UPDATE accounts SET balance = balance + ? WHERE id = ?`, d.Amount, d.Account); err != nil {
		return Deposit{}, fmt.Errorf("deposit: %w", err)
	}
	if _, err := tx.ExecContext(w,
		`INSERT INTO deposits (id, customer_id, account_id, amount, memo, metadata, op, created_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, customer, d.Account, d.Amount, d.Memo, metadataJSON(d.Metadata), op, now); err != nil {
		return Deposit{}, fmt.Errorf("deposit %s: %w", d.ID, err)
	}
	if _, err := tx.ExecContext(w,
		`INSERT INTO ledger_entries (account_id, kind, ref, amount, balance_after, created_at)
		 VALUES (?, 'deposit', ?, ?, ?, ?)`, d.Account, d.ID, d.Amount, d.BalanceAfter, now); err != nil {
		return Deposit{}, fmt.Errorf("deposit %s: %w", d.ID, err)
	}
	if err := b.countExecution(w, tx, op, "deposit", d.ID, d.Amount); err != nil {
		return Deposit{}, err
	}
	b.injectCrash()
	return d, nil
}

func (b *Bank) injectFailure() error {
	if b.faults != nil && b.faults.FailNext.Fire() {
		return ErrInjected
	}
	return nil
}

func (b *Bank) injectCrash() {
	if b.faults != nil && b.faults.CrashNext.Fire() {
		b.faults.Crash("crash-in-transfer")
	}
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// lockAccounts makes sure that the balances of accounts ids cannot change
// under tx until it ends. On SQLite there is nothing to do: every write
// transaction holds the database's one write lock from its BEGIN
// IMMEDIATE. On PostgreSQL, at READ COMMITTED, another transaction could
// change a balance between our read and our write (and the balance_after
// we report would be wrong, or the CHECK on the balance would fail), so it
// locks the accounts' rows with SELECT … FOR UPDATE, in the order of their
// ids, so that two transfers in opposite directions cannot deadlock.
func (b *Bank) lockAccounts(ctx context.Context, tx *sql.Tx, ids ...string) error {
	if labdb.EngineOf(b.db) != labdb.PostgreSQL {
		return nil
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT id FROM accounts WHERE id = ANY (string_to_array(?, ',')) ORDER BY id FOR UPDATE`, strings.Join(ids, ","))
	if err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	return rows.Close()
}

// readAccount reads an account through q. Inside a transaction, which
// holds the account's lock (see lockAccounts), the balance cannot change
// under us; outside one (CheckTransfer) it is only a look.
func readAccount(ctx context.Context, q querier, id string) (Account, error) {
	var a Account
	err := q.QueryRowContext(ctx, `SELECT id, customer_id, balance FROM accounts WHERE id = ?`, id).
		Scan(&a.ID, &a.Customer, &a.Balance)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, problem.New(problem.UnknownAccount, "no account %s", id)
	}
	if err != nil {
		return Account{}, fmt.Errorf("read account %s: %w", id, err)
	}
	return a, nil
}

func metadataJSON(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// idBytes is how many random bytes an id carries.
const idBytes = 10

func newID(prefix string) string {
	var b [idBytes]byte
	rand.Read(b[:])
	return prefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// isID reports whether s is an id newID(prefix) could have made.
func isID(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != idEncoding.EncodedLen(idBytes) || rest != strings.ToLower(rest) {
		return false
	}
	_, err := idEncoding.DecodeString(strings.ToUpper(rest))
	return err == nil
}
