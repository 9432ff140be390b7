package bank

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"idemlab/kit/problem"
)

// CustomerByToken finds the customer a bearer token authenticates. It
// returns a problem error (401) for an unknown token.
func (b *Bank) CustomerByToken(ctx context.Context, token string) (string, error) {
	var id string
	err := b.db.QueryRowContext(ctx, `SELECT customer_id FROM tokens WHERE token = ?`, token).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", problem.New(problem.Unauthorized, "unknown token")
	}
	if err != nil {
		return "", fmt.Errorf("look up token: %w", err)
	}
	return id, nil
}

// Account reads an account that customer owns: 404 if there is no such
// account, 403 if it is someone else's.
func (b *Bank) Account(ctx context.Context, customer, id string) (Account, error) {
	var a Account
	err := b.db.QueryRowContext(ctx, `SELECT id, customer_id, balance FROM accounts WHERE id = ?`, id).
		Scan(&a.ID, &a.Customer, &a.Balance)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, problem.New(problem.NotFound, "no account %s", id)
	}
	if err != nil {
		return Account{}, fmt.Errorf("read account %s: %w", id, err)
	}
	if a.Customer != customer {
		return Account{}, problem.New(problem.Forbidden, "account %s belongs to another customer", id)
	}
	return a, nil
}

// Entry is one line of an account's ledger.
type Entry struct {
	ID           int64  `json:"id"`
	Kind         string `json:"kind"`
	Ref          string `json:"ref"`
	Amount       int64  `json:"amount"`
	BalanceAfter int64  `json:"balance_after"`
	CreatedAt    string `json:"created_at"`
}

// Entries lists an account's ledger entries, newest first, at most limit.
// Errors as for Account.
func (b *Bank) Entries(ctx context.Context, customer, account string, limit int) ([]Entry, error) {
	if _, err := b.Account(ctx, customer, account); err != nil {
		return nil, err
	}
	rows, err := b.db.QueryContext(ctx,
		`SELECT id, kind, ref, amount, balance_after, created_at FROM ledger_entries
		 WHERE account_id = ? ORDER BY id DESC LIMIT ?`, account, limit)
	if err != nil {
		return nil, fmt.Errorf("list entries of %s: %w", account, err)
	}
	defer rows.Close()
	entries := []Entry{}
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.ID, &e.Kind, &e.Ref, &e.Amount, &e.BalanceAfter, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("list entries of %s: %w", account, err)
		}
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// GetTransfer reads a transfer the customer made: 404 if there is none,
// 403 if another customer made it. BalanceAfter is the source account's
// balance right after it, from the ledger.
func (b *Bank) GetTransfer(ctx context.Context, customer, id string) (Transfer, error) {
	var t Transfer
	var owner, metadata string
	err := b.db.QueryRowContext(ctx,
		`SELECT t.id, t.customer_id, t.from_account, t.to_account, t.amount, t.memo, t.metadata, t.reference, t.created_at, e.balance_after
		 FROM transfers t JOIN ledger_entries e ON e.ref = t.id AND e.account_id = t.from_account
		 WHERE t.id = ?`, id).
		Scan(&t.ID, &owner, &t.From, &t.To, &t.Amount, &t.Memo, &metadata, &t.Reference, &t.CreatedAt, &t.BalanceAfter)
	if errors.Is(err, sql.ErrNoRows) {
		return Transfer{}, problem.New(problem.NotFound, "no transfer %s", id)
	}
	if err != nil {
		return Transfer{}, fmt.Errorf("read transfer %s: %w", id, err)
	}
	if owner != customer {
		return Transfer{}, problem.New(problem.Forbidden, "transfer %s belongs to another customer", id)
	}
	t.Metadata, err = parseMetadata(metadata)
	return t, err
}

// Executed is an executed transfer or deposit as the lab lists them (GET
// /lab/transfers, GET /lab/deposits): its id, the operation that made it
// (its metadata's op; empty if it has none) and the amount it moved. The
// amount tells an operation's execution from that of a resubmission under
// its key with an edited amount. A transfer whose outbox row the stage
// wrote (stage 9) has the row's created_at as OutboxAt: the instants the
// rows were written, which a core key made of the time would be made of;
// and its sent_at, once the relay marked it sent, as OutboxSentAt: a row
// marked sent whose posting the core lacks was marked before the core
// took it.
type Executed struct {
	ID           string `json:"id"`
	Op           string `json:"op"`
	Amount       int64  `json:"amount"`
	OutboxAt     string `json:"outbox_at,omitempty"`
	OutboxSentAt string `json:"outbox_sent_at,omitempty"`
}

// MaxListed is the most transfers or deposits one page of TransferOps or
// DepositOps holds.
const MaxListed = 1000

// TransferOps lists the executed transfers whose id sorts after after, in
// the order of their ids, at most limit: a reconciliation reads every
// transfer of a day in pages of these, where one GetTransfer each cost a
// request. A transfer is listed as GetTransfer finds it, with the ledger
// entry on the account it came from. It returns a problem error (400) if
// after is neither empty nor a transfer's id.
func (b *Bank) TransferOps(ctx context.Context, after string, limit int) ([]Executed, error) {
	return b.listExecuted(ctx, "transfer", "tr_", after, limit,
		`SELECT t.id, t.metadata, t.amount, COALESCE(o.created_at, ''), COALESCE(o.sent_at, '')
		 FROM transfers t JOIN ledger_entries e ON e.ref = t.id AND e.account_id = t.from_account
		 LEFT JOIN outbox o ON o.transfer_id = t.id
		 WHERE t.id > ? ORDER BY t.id LIMIT ?`)
}

// DepositOps lists the executed deposits as TransferOps lists transfers,
// each as GetDeposit finds it, with its ledger entry. It returns a problem
// error (400) if after is neither empty nor a deposit's id.
func (b *Bank) DepositOps(ctx context.Context, after string, limit int) ([]Executed, error) {
	return b.listExecuted(ctx, "deposit", "dp_", after, limit,
		`SELECT d.id, d.metadata, d.amount, '', ''
		 FROM deposits d JOIN ledger_entries e ON e.ref = d.id
		 WHERE d.id > ? ORDER BY d.id LIMIT ?`)
}

// listExecuted runs query, which selects the id, metadata, amount and
// outbox row's created_at and sent_at (empty without) of the executions of one
// kind whose id sorts after its first argument, at most its second. A
// cursor that is not an id of the kind (prefix) is refused: another
// kind's id sorts before or after every one of them, and would quietly
// list all or none.
func (b *Bank) listExecuted(ctx context.Context, kind, prefix, after string, limit int, query string) ([]Executed, error) {
	if after != "" && !isID(prefix, after) {
		return nil, problem.New(problem.InvalidRequest, "after must be a %s id (%s…, the last of the page before), got %q", kind, prefix, after)
	}
	rows, err := b.db.QueryContext(ctx, query, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list %ss after %q: %w", kind, after, err)
	}
	defer rows.Close()
	out := []Executed{}
	for rows.Next() {
		var x Executed
		var metadata string
		if err := rows.Scan(&x.ID, &metadata, &x.Amount, &x.OutboxAt, &x.OutboxSentAt); err != nil {
			return nil, fmt.Errorf("list %ss after %q: %w", kind, after, err)
		}
		m, err := parseMetadata(metadata)
		if err != nil {
			return nil, fmt.Errorf("list %ss: %s %s: %w", kind, kind, x.ID, err)
		}
		x.Op = m["op"]
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %ss after %q: %w", kind, after, err)
	}
	return out, nil
}

// GetDeposit reads a deposit the customer made. Errors as for GetTransfer.
func (b *Bank) GetDeposit(ctx context.Context, customer, id string) (Deposit, error) {
	var d Deposit
	var owner, metadata string
	err := b.db.QueryRowContext(ctx,
		`SELECT d.id, d.customer_id, d.account_id, d.amount, d.memo, d.metadata, d.created_at, e.balance_after
		 FROM deposits d JOIN ledger_entries e ON e.ref = d.id
		 WHERE d.id = ?`, id).
		Scan(&d.ID, &owner, &d.Account, &d.Amount, &d.Memo, &metadata, &d.CreatedAt, &d.BalanceAfter)
	if errors.Is(err, sql.ErrNoRows) {
		return Deposit{}, problem.New(problem.NotFound, "no deposit %s", id)
	}
	if err != nil {
		return Deposit{}, fmt.Errorf("read deposit %s: %w", id, err)
	}
	if owner != customer {
		return Deposit{}, problem.New(problem.Forbidden, "deposit %s belongs to another customer", id)
	}
	d.Metadata, err = parseMetadata(metadata)
	return d, err
}

func parseMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode stored metadata: %w", err)
	}
	return m, nil
}

// Balance is an account in the lab's state: its balance and where it started.
type Balance struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Balance  int64  `json:"balance"`
	Opening  int64  `json:"opening_balance"`
}

// Balances lists every account, for lab state and reconciliation.
func (b *Bank) Balances(ctx context.Context) ([]Balance, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT id, customer_id, balance, opening_balance FROM accounts ORDER BY customer_id, id`)
	if err != nil {
		return nil, fmt.Errorf("list balances: %w", err)
	}
	defer rows.Close()
	out := []Balance{}
	for rows.Next() {
		var a Balance
		if err := rows.Scan(&a.ID, &a.Customer, &a.Balance, &a.Opening); err != nil {
			return nil, fmt.Errorf("list balances: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// CheckTransfer checks, before anything is claimed or moved, that the
// transfer's accounts exist and its source belongs to customer. It returns
// the problem errors of Transfer: 422 unknown-account, 403 forbidden.
// Transfer checks again inside its transaction; this early check is what
// lets a handler refuse such a request with nothing stored.
func (b *Bank) CheckTransfer(ctx context.Context, customer string, req TransferRequest) error {
	if err := b.checkOwned(ctx, customer, req.From); err != nil {
		return err
	}
	_, err := readAccount(ctx, b.db, req.To)
	return err
}

// CheckDeposit checks that the deposit's account exists and belongs to
// customer. Errors as for CheckTransfer.
func (b *Bank) CheckDeposit(ctx context.Context, customer string, req DepositRequest) error {
	return b.checkOwned(ctx, customer, req.Account)
}

func (b *Bank) checkOwned(ctx context.Context, customer, id string) error {
	a, err := readAccount(ctx, b.db, id)
	if err != nil {
		return err
	}
	if a.Customer != customer {
		return problem.New(problem.Forbidden, "account %s belongs to another customer", id)
	}
	return nil
}

// FormatWon writes an amount of won with thousands separators: 1,250,000.
func FormatWon(n int64) string {
	if n < 0 {
		return "-" + FormatWon(-n)
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TransferRecord is an executed transfer as the bank's books hold it.
type TransferRecord struct {
	Customer, Op, From, To, Memo string
	// Metadata is the stored JSON text ("" for none).
	Metadata string
	Amount   int64
}

// Transfers lists every executed transfer, in the order their ledger
// entries were numbered: the order they committed on SQLite, which runs one
// writer at a time; on PostgreSQL, two transactions may commit in the
// other order than they numbered their rows. The grader reconciles a day
// against it.
func (b *Bank) Transfers(ctx context.Context) ([]TransferRecord, error) {
	rows, err := b.db.QueryContext(ctx,
		`SELECT t.customer_id, t.op, t.from_account, t.to_account, t.amount, t.memo, t.metadata
		 FROM transfers AS t JOIN ledger_entries AS e ON e.ref = t.id AND e.account_id = t.from_account
		 ORDER BY e.id`)
	if err != nil {
		return nil, fmt.Errorf("list transfers: %w", err)
	}
	defer rows.Close()
	var out []TransferRecord
	for rows.Next() {
		var t TransferRecord
		if err := rows.Scan(&t.Customer, &t.Op, &t.From, &t.To, &t.Amount, &t.Memo, &t.Metadata); err != nil {
			return nil, fmt.Errorf("list transfers: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
