package bank

import (
	"context"
	"database/sql"
	"fmt"

	"idemlab/kit/labdb"
)

// The kit's tables. The idempotency key table is not here: it is the
// student's design, created by the stage.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS customers (
		id   TEXT PRIMARY KEY,
		name TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS tokens (
		token       TEXT PRIMARY KEY,
		customer_id TEXT NOT NULL REFERENCES customers (id)
	)`,
	`CREATE TABLE IF NOT EXISTS accounts (
		id              TEXT PRIMARY KEY,
		customer_id     TEXT NOT NULL REFERENCES customers (id),
		balance         INTEGER NOT NULL CHECK (balance >= 0),
		opening_balance INTEGER NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS transfers (
		id           TEXT PRIMARY KEY,
		customer_id  TEXT NOT NULL REFERENCES customers (id),
		from_account TEXT NOT NULL REFERENCES accounts (id),
		to_account   TEXT NOT NULL REFERENCES accounts (id),
		amount       INTEGER NOT NULL CHECK (amount > 0),
		memo         TEXT NOT NULL,
		metadata     TEXT NOT NULL,
		reference    TEXT NOT NULL DEFAULT '',
		op           TEXT NOT NULL,
		created_at   TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS deposits (
		id          TEXT PRIMARY KEY,
		customer_id TEXT NOT NULL REFERENCES customers (id),
		account_id  TEXT NOT NULL REFERENCES accounts (id),
		amount      INTEGER NOT NULL CHECK (amount > 0),
		memo        TEXT NOT NULL,
		metadata    TEXT NOT NULL,
		op          TEXT NOT NULL,
		created_at  TEXT NOT NULL
	)`,
	// An entry's id is its rowid: SQLite gives each new row one more than
	// the highest, and entries are never deleted but all at once by a lab
	// reset. AUTOINCREMENT would also keep the highest id ever given in
	// sqlite_sequence, a row read and written, and a page more committed,
	// for every entry; a database made with it keeps it.
	`CREATE TABLE IF NOT EXISTS ledger_entries (
		id            INTEGER PRIMARY KEY,
		account_id    TEXT NOT NULL REFERENCES accounts (id),
		kind          TEXT NOT NULL,
		ref           TEXT NOT NULL,
		amount        INTEGER NOT NULL,
		balance_after INTEGER NOT NULL,
		created_at    TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS ledger_entries_by_account ON ledger_entries (account_id, id)`,
	// A transfer's or a deposit's entries are found by ref (GetTransfer,
	// GetDeposit): without this index each such read scanned every entry
	// of the account, or of the bank, and a replay that reads every
	// transfer of a day back took time growing with the square of the day.
	`CREATE INDEX IF NOT EXISTS ledger_entries_by_ref ON ledger_entries (ref, account_id)`,
	`CREATE TABLE IF NOT EXISTS executions (
		op    TEXT PRIMARY KEY,
		kind  TEXT NOT NULL,
		count INTEGER NOT NULL
	)`,
}

// Tables are the bank's tables, each after every table that refers to it,
// so that deleting their rows in this order satisfies the foreign keys.
var Tables = []string{"ledger_entries", "executions", OutboxTable, "transfers", "deposits", "tokens", SpentTable, SettingsTable, "accounts", "customers"}

// Migrate creates the bank's tables if they are missing.
func Migrate(ctx context.Context, db *sql.DB) error {
	for _, stmt := range schema {
		if err := labdb.CreateTable(ctx, db, stmt); err != nil {
			return fmt.Errorf("migrate bank: %w", err)
		}
	}
	if err := addReference(ctx, db); err != nil {
		return err
	}
	if err := migrateSettings(ctx, db); err != nil {
		return err
	}
	return migrateOutbox(ctx, db)
}

// addReference gives the transfers table of a database made before
// transfers carried a reference its reference column, empty for the
// transfers already there. A database made since has it, and the SELECT
// finds it.
func addReference(ctx context.Context, db *sql.DB) error {
	if rows, err := db.QueryContext(ctx, `SELECT reference FROM transfers WHERE 1 = 0`); err == nil {
		return rows.Close()
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE transfers ADD COLUMN reference TEXT NOT NULL DEFAULT ''`); err != nil {
		return fmt.Errorf("migrate bank: add transfers.reference: %w", err)
	}
	return nil
}
