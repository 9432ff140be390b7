package bank

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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

// Transfers reads the accounts and amount of each executed transfer
// among ids (the other members of the records are left empty), in one
// query, by id: an id the bank has no transfer under is not in the map.
func (b *Books) Transfers(ctx context.Context, ids []string) (map[string]TransferRecord, error) {
	if len(ids) == 0 {
		return map[string]TransferRecord{}, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	marks := strings.Repeat(", ?", len(ids))[2:]
	rows, err := b.db.QueryContext(ctx, `SELECT id, from_account, to_account, amount FROM transfers WHERE id IN (`+marks+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read %d transfers: %w", len(ids), err)
	}
	defer rows.Close()
	out := make(map[string]TransferRecord, len(ids))
	for rows.Next() {
		var id string
		var t TransferRecord
		if err := rows.Scan(&id, &t.From, &t.To, &t.Amount); err != nil {
			return nil, fmt.Errorf("read %d transfers: %w", len(ids), err)
		}
		out[id] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %d transfers: %w", len(ids), err)
	}
	return out, nil
}
