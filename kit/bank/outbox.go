package bank

import (
	"context"
	"database/sql"
	"fmt"

	"idemlab/kit/labdb"
)

// The outbox holds what a transfer must still tell the core ledger (stage
// 9 on): one row per executed transfer, written by the stage in the
// transaction that moves the money, so that the transfer and the promise
// to tell the core commit together or not at all. A relay sends each row
// to the core under a key of its own and sets sent_at once the core has
// acknowledged it. The bank makes the table and counts its rows; the
// statements that write it are the stage's, the ones stage 9 teaches.

// OutboxTable is the outbox's name.
const OutboxTable = "outbox"

// One row per transfer: a second row for one transfer is refused by the
// database, whatever the stage does.
const outboxSchema = `CREATE TABLE IF NOT EXISTS outbox (
	id           INTEGER PRIMARY KEY,
	transfer_id  TEXT NOT NULL UNIQUE REFERENCES transfers (id),
	from_account TEXT NOT NULL,
	to_account   TEXT NOT NULL,
	amount       INTEGER NOT NULL,
	created_at   TEXT NOT NULL,
	sent_at      TEXT
)`

func migrateOutbox(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, outboxSchema); err != nil {
		return fmt.Errorf("migrate outbox: %w", err)
	}
	return nil
}

// OutboxCounts are how many rows the outbox holds, by whether they were sent.
type OutboxCounts struct {
	Pending int64 `json:"pending"`
	Sent    int64 `json:"sent"`
}

// Outbox counts the outbox's rows.
func (b *Bank) Outbox(ctx context.Context) (OutboxCounts, error) {
	var c OutboxCounts
	err := b.db.QueryRowContext(ctx,
		`SELECT COUNT(*) - COUNT(sent_at), COUNT(sent_at) FROM outbox`).Scan(&c.Pending, &c.Sent)
	if err != nil {
		return OutboxCounts{}, fmt.Errorf("count the outbox: %w", err)
	}
	return c, nil
}
