package bank

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Books reads the bank's accounts and transfers for a service outside the
// bank that is given its database to read and nothing else: the core
// ledger, which checks each posting against the transfer it names. It
// never writes.
type Books struct {
	db *sql.DB
}

// NewBooks returns the books on db, a database the bank's tables live in.
func NewBooks(db *sql.DB) *Books { return &Books{db: db} }

// AccountExists reports whether the bank has account id.
func (b *Books) AccountExists(ctx context.Context, id string) (bool, error) {
	var one int
	err := b.db.QueryRowContext(ctx, `SELECT 1 FROM accounts WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read account %s: %w", id, err)
	}
	return true, nil
}

// Transfer reads the accounts and amount of the executed transfer id (the
// other members of the record are left empty), and reports false if the
// bank has no such transfer.
func (b *Books) Transfer(ctx context.Context, id string) (TransferRecord, bool, error) {
	var t TransferRecord
	err := b.db.QueryRowContext(ctx, `SELECT from_account, to_account, amount FROM transfers WHERE id = ?`, id).
		Scan(&t.From, &t.To, &t.Amount)
	if errors.Is(err, sql.ErrNoRows) {
		return TransferRecord{}, false, nil
	}
	if err != nil {
		return TransferRecord{}, false, fmt.Errorf("read transfer %s: %w", id, err)
	}
	return t, true, nil
}
