package bank

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// An account's settings are what its clerks edit (GET and PUT
// /accounts/{id}/settings, stage 7 on): a nickname, and a daily limit on
// the money its transfers may send. Every account has one row of them,
// from its creation on; version counts the row's writes, so that a stage
// can name one state of the row (its ETag) and write only over that state.
// The bank reads the row; the one statement that writes it is the stage's
// own, the conditional UPDATE that stage 7 teaches.

// Settings are an account's settings, as GET /accounts/{id}/settings shows
// them and PUT replaces them.
type Settings struct {
	Nickname   string `json:"nickname"`
	DailyLimit int64  `json:"daily_limit"`
}

// Limits of the settings (docs/api.md, "Published figures").
const (
	// MaxNickname is the longest nickname, in characters.
	MaxNickname = 64
	// MaxDailyLimit is the highest daily limit, in won. It is also every
	// account's limit until a clerk lowers it: a thousand times the largest
	// balance a lab reset gives, so that it never refuses a transfer by
	// itself (and still a number that every JSON reader holds exactly).
	MaxDailyLimit = 1_000_000_000_000_000
)

// DefaultSettings are the settings of a new account.
func DefaultSettings() Settings {
	return Settings{Nickname: "", DailyLimit: MaxDailyLimit}
}

// SettingsTable is the settings' table.
const SettingsTable = "account_settings"

const settingsSchema = `CREATE TABLE IF NOT EXISTS account_settings (
	account_id  TEXT PRIMARY KEY REFERENCES accounts (id),
	nickname    TEXT NOT NULL,
	daily_limit INTEGER NOT NULL CHECK (daily_limit >= 0),
	version     INTEGER NOT NULL
)`

// SpentTable keeps, for each account and lab day, the money its transfers
// have sent: what the daily limit is checked against, kept up to date in
// each transfer's transaction, so that a check reads one row however many
// transfers the day has had (summing them made a day of 100,000 transfers
// over 16 accounts four times slower).
const SpentTable = "daily_spent"

const spentSchema = `CREATE TABLE IF NOT EXISTS daily_spent (
	account_id TEXT NOT NULL REFERENCES accounts (id),
	day        TEXT NOT NULL,
	spent      INTEGER NOT NULL,
	PRIMARY KEY (account_id, day)
)`

// migrateSettings creates the settings' table and gives every account
// that has no settings yet (one made before the table existed) the
// default ones.
func migrateSettings(ctx context.Context, db *sql.DB) error {
	d := DefaultSettings()
	for _, stmt := range []string{settingsSchema, spentSchema} {
		if err := labdb.CreateTable(ctx, db, stmt); err != nil {
			return fmt.Errorf("migrate settings: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx,
		`INSERT INTO account_settings (account_id, nickname, daily_limit, version)
		 SELECT id, ?, ?, 1 FROM accounts WHERE id NOT IN (SELECT account_id FROM account_settings)`,
		d.Nickname, d.DailyLimit); err != nil {
		return fmt.Errorf("migrate settings: %w", err)
	}
	return nil
}

// insertSettings gives a new account the default settings, at version 1.
func insertSettings(ctx context.Context, tx *sql.Tx, account string) error {
	d := DefaultSettings()
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO account_settings (account_id, nickname, daily_limit, version) VALUES (?, ?, ?, 1)`,
		account, d.Nickname, d.DailyLimit); err != nil {
		return fmt.Errorf("populate settings: %w", err)
	}
	return nil
}

// AccountSettings reads the settings of an account that customer owns,
// and their version: 404 if there is no such account, 403 if it is
// someone else's.
func (b *Bank) AccountSettings(ctx context.Context, customer, account string) (Settings, int64, error) {
	if _, err := b.Account(ctx, customer, account); err != nil {
		return Settings{}, 0, err
	}
	var s Settings
	var version int64
	err := b.db.QueryRowContext(ctx,
		`SELECT nickname, daily_limit, version FROM account_settings WHERE account_id = ?`, account).
		Scan(&s.Nickname, &s.DailyLimit, &version)
	if err != nil {
		return Settings{}, 0, fmt.Errorf("read settings of %s: %w", account, err)
	}
	return s, version, nil
}

// DayStart is the start of the lab clock's UTC day that t falls in: the
// daily limit counts the transfers since then.
func DayStart(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// checkDailyLimit refuses, with 422 daily-limit-exceeded, a transfer of
// amount from account that would take the account's transfers since the
// start of now's day over its daily limit; else it counts amount as sent
// today. It runs inside tx after the transfer has locked its accounts: on
// SQLite, one writer at a time, nothing else can slip in before the
// commit; on PostgreSQL the account's row lock keeps out the account's
// other transfers, while a settings change may still commit in between
// (it is then simply later than the transfer). If the transfer fails
// later, tx rolls the count back with it.
func checkDailyLimit(ctx context.Context, tx *sql.Tx, account string, amount int64, now time.Time) error {
	day := clock.Format(DayStart(now))
	limit, sent := DefaultSettings().DailyLimit, int64(0)
	err := tx.QueryRowContext(ctx,
		`SELECT s.daily_limit, coalesce(d.spent, 0) FROM account_settings AS s
		 LEFT JOIN daily_spent AS d ON d.account_id = s.account_id AND d.day = ?
		 WHERE s.account_id = ?`, day, account).Scan(&limit, &sent)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the daily limit of %s and what it has sent today: %w", account, err)
	}
	if sent+amount > limit {
		return problem.New(problem.DailyLimitExceeded,
			"account %s has sent %d won today; %d more would pass its daily limit of %d", account, sent, amount, limit)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO daily_spent (account_id, day, spent) VALUES (?, ?, ?)
		 ON CONFLICT (account_id, day) DO UPDATE SET spent = daily_spent.spent + excluded.spent`,
		account, day, amount); err != nil {
		return fmt.Errorf("count what %s has sent today: %w", account, err)
	}
	return nil
}
