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

// The outbox holds what a transfer must still tell the core ledger (stage
// 9 on): one row per executed transfer, written by the stage in the
// transaction that moves the money, so that the transfer and the promise
// to tell the core commit together or not at all. The row carries the
// Idempotency-Key it is posted under (core_key), chosen once, when the row
// is written. A relay sends each row to the core under that key and sets
// sent_at once the core has acknowledged it; a row the core refuses for
// good (a poison message: sent again, it would be refused again) is set
// aside as a dead letter, with the core's answer, and the relay goes on
// with the others. A row is owed while both are NULL. The bank makes the
// table and reads it for the lab; the statements that write it are the
// stage's, the ones stage 9 teaches.

// OutboxTable is the outbox's name.
const OutboxTable = "outbox"

// One row per transfer: a second row for one transfer is refused by the
// database, whatever the stage does. The key is the stage's to choose,
// and the database does not hold it unique: a key shared by two rows is a
// mistake the core ledger finds, as it would at work.
const outboxSchema = `CREATE TABLE IF NOT EXISTS outbox (
	id           INTEGER PRIMARY KEY,
	transfer_id  TEXT NOT NULL UNIQUE REFERENCES transfers (id),
	core_key     TEXT NOT NULL,
	from_account TEXT NOT NULL,
	to_account   TEXT NOT NULL,
	amount       INTEGER NOT NULL,
	created_at   TEXT NOT NULL,
	sent_at      TEXT,
	dead_at      TEXT,
	dead_status  INTEGER,
	dead_answer  TEXT
)`

// The relay reads the rows still owed, oldest first: an index on them
// keeps that read short however many rows were sent.
const outboxOwedIndex = `CREATE INDEX IF NOT EXISTS outbox_owed ON outbox (id) WHERE sent_at IS NULL AND dead_at IS NULL`

func migrateOutbox(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, outboxSchema); err != nil {
		return fmt.Errorf("migrate outbox: %w", err)
	}
	if err := addDeadLetters(ctx, db); err != nil {
		return err
	}
	if err := labdb.CreateTable(ctx, db, outboxOwedIndex); err != nil {
		return fmt.Errorf("migrate outbox: %w", err)
	}
	return nil
}

// addDeadLetters gives the outbox of a database made before rows carried
// their key and could be set aside the columns for them. The rows already
// there keep the key they were sent under then, their transfer's id.
func addDeadLetters(ctx context.Context, db *sql.DB) error {
	if rows, err := db.QueryContext(ctx, `SELECT core_key FROM outbox WHERE 1 = 0`); err == nil {
		return rows.Close()
	}
	for _, stmt := range []string{
		`ALTER TABLE outbox ADD COLUMN core_key TEXT NOT NULL DEFAULT ''`,
		`UPDATE outbox SET core_key = transfer_id`,
		`ALTER TABLE outbox ADD COLUMN dead_at TEXT`,
		`ALTER TABLE outbox ADD COLUMN dead_status INTEGER`,
		`ALTER TABLE outbox ADD COLUMN dead_answer TEXT`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrate outbox: %w", err)
		}
	}
	return nil
}

// OutboxCounts are how many rows the outbox holds: owed to the core (not
// yet acknowledged, and not set aside), sent, and set aside as dead
// letters.
type OutboxCounts struct {
	Pending int64 `json:"pending"`
	Sent    int64 `json:"sent"`
	Dead    int64 `json:"dead"`
}

// Outbox counts the outbox's rows.
func (b *Bank) Outbox(ctx context.Context) (OutboxCounts, error) {
	var c OutboxCounts
	err := b.db.QueryRowContext(ctx,
		`SELECT COUNT(CASE WHEN sent_at IS NULL AND dead_at IS NULL THEN 1 END), COUNT(sent_at), COUNT(dead_at) FROM outbox`).Scan(&c.Pending, &c.Sent, &c.Dead)
	if err != nil {
		return OutboxCounts{}, fmt.Errorf("count the outbox: %w", err)
	}
	return c, nil
}

// DeadLetter is an outbox row set aside: a posting the core refused for
// good, with the answer it gave. An operator reads the answer, fixes the
// cause, and sends the row again under the same key (Redrive, which
// clears dead_at), or settles the transfer another way; never under a new
// key, which could post it twice.
type DeadLetter struct {
	TransferID string `json:"transfer_id"`
	Key        string `json:"key"`
	From       string `json:"from"`
	To         string `json:"to"`
	Amount     int64  `json:"amount"`
	At         string `json:"at"`
	Status     int    `json:"status"`
	Answer     string `json:"answer"`
	// SentAt is when the row was marked sent, and a dead letter's is
	// empty: a row set aside was never acknowledged. One also marked
	// sent is a relay's mistake: an operator who sends it again by
	// clearing dead_at alone finds it sent, and it is never posted
	// (Redrive clears both).
	SentAt string `json:"sent_at,omitempty"`
}

// DeadLetters reads the outbox's dead letters, at most limit, oldest first.
func (b *Bank) DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	rows, err := b.db.QueryContext(ctx,
		`SELECT transfer_id, core_key, from_account, to_account, amount, dead_at, COALESCE(dead_status, 0), COALESCE(dead_answer, ''), COALESCE(sent_at, '')
		 FROM outbox WHERE dead_at IS NOT NULL ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read the dead letters: %w", err)
	}
	defer rows.Close()
	out := []DeadLetter{}
	for rows.Next() {
		var d DeadLetter
		if err := rows.Scan(&d.TransferID, &d.Key, &d.From, &d.To, &d.Amount, &d.At, &d.Status, &d.Answer, &d.SentAt); err != nil {
			return nil, fmt.Errorf("read the dead letters: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the dead letters: %w", err)
	}
	return out, nil
}

// Redrive sends the dead letter of transferID again, as an operator does
// once the cause of the core's refusal is fixed: it makes the row owed
// again (dead_at cleared, and a sent_at a wrong relay set beside it), so
// that the relay sends it on a later pass under the key it was written
// with, which the core posts once however often it is sent. The core's
// answer (dead_status, dead_answer) stays on the row as its last answer
// to the row until the relay sets the row aside again with a new one:
// whether a row is owed, sent or a dead letter is read from sent_at and
// dead_at alone. It returns the dead letter as it was, or, changing
// nothing, a not-found problem if there is no transfer transferID, it has
// no outbox row, or its row is not a dead letter.
func (b *Bank) Redrive(ctx context.Context, transferID string) (DeadLetter, error) {
	// Not a transfer's id names no transfer, and is never sent to the
	// database: PostgreSQL refuses a text holding U+0000 with an error.
	if !isID("tr_", transferID) {
		return DeadLetter{}, problem.New(problem.NotFound, "no transfer %s; nothing was changed", transferID)
	}
	d := DeadLetter{TransferID: transferID}
	var dead, sent, answer sql.NullString
	var status sql.NullInt64
	err := b.db.QueryRowContext(ctx,
		`SELECT core_key, from_account, to_account, amount, dead_at, dead_status, dead_answer, sent_at FROM outbox WHERE transfer_id = ?`, transferID).
		Scan(&d.Key, &d.From, &d.To, &d.Amount, &dead, &status, &answer, &sent)
	if errors.Is(err, sql.ErrNoRows) {
		return DeadLetter{}, b.noOutboxRow(ctx, transferID)
	}
	if err != nil {
		return DeadLetter{}, fmt.Errorf("read the outbox row of %s: %w", transferID, err)
	}
	switch {
	case !dead.Valid && sent.Valid:
		return DeadLetter{}, problem.New(problem.NotFound, "transfer %s is not a dead letter: its posting was sent at %s; nothing was changed", transferID, sent.String)
	case !dead.Valid:
		return DeadLetter{}, problem.New(problem.NotFound, "transfer %s is not a dead letter: its posting is still owed to the core, and the relay sends it; nothing was changed", transferID)
	}
	d.At, d.Status, d.Answer, d.SentAt = dead.String, int(status.Int64), answer.String, sent.String
	// The row as it was read, and no other: a relay that set it aside
	// again in between left another dead letter, which this one is not.
	res, err := b.db.ExecContext(ctx, `UPDATE outbox SET dead_at = NULL, sent_at = NULL WHERE transfer_id = ? AND dead_at = ?`, transferID, dead.String)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("redrive the dead letter of %s: %w", transferID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return DeadLetter{}, problem.New(problem.NotFound, "the dead letter of %s changed while it was being sent again; read it again (GET /lab/outbox); nothing was changed", transferID)
	}
	return d, nil
}

// noOutboxRow is Redrive's problem for a transfer with no outbox row.
func (b *Bank) noOutboxRow(ctx context.Context, transferID string) error {
	var n int
	if err := b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM transfers WHERE id = ?`, transferID).Scan(&n); err != nil {
		return fmt.Errorf("read transfer %s: %w", transferID, err)
	}
	if n == 0 {
		return problem.New(problem.NotFound, "no transfer %s; nothing was changed", transferID)
	}
	return problem.New(problem.NotFound, "transfer %s has no outbox row, so no dead letter (a stage before 9 writes none); nothing was changed", transferID)
}

// Delivery is one sent row's two moments on the lab clock: its
// transfer's commit (created_at) and the relay's mark after the core's
// acknowledgement (sent_at).
type Delivery struct {
	Created, Sent time.Time
}

// Lag is how long the row waited to be delivered.
func (d Delivery) Lag() time.Duration { return d.Sent.Sub(d.Created) }

// Deliveries reads every sent row's Delivery, in the order written.
func (b *Bank) Deliveries(ctx context.Context) ([]Delivery, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT created_at, sent_at FROM outbox WHERE sent_at IS NOT NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read the deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var created, sent string
		if err := rows.Scan(&created, &sent); err != nil {
			return nil, fmt.Errorf("read the deliveries: %w", err)
		}
		var d Delivery
		if d.Created, err = time.Parse(clock.Layout, created); err != nil {
			return nil, fmt.Errorf("read the deliveries: %w", err)
		}
		if d.Sent, err = time.Parse(clock.Layout, sent); err != nil {
			return nil, fmt.Errorf("read the deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the deliveries: %w", err)
	}
	return out, nil
}

// DeliveryLags reads, for every row sent, how long it waited between its
// transfer's commit (created_at) and the relay's mark after the core's
// acknowledgement (sent_at), on the lab clock, in the order written.
func (b *Bank) DeliveryLags(ctx context.Context) ([]time.Duration, error) {
	ds, err := b.Deliveries(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Lag()
	}
	return out, nil
}
