package stage9

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
)

// enqueue writes t's posting to the outbox inside tx, the transaction that
// moves t's money: if it commits, the posting is owed to the core; if it
// rolls back, neither happened.
func enqueue(ctx context.Context, tx *sql.Tx, t bank.Transfer, now time.Time) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (transfer_id, from_account, to_account, amount, created_at) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.From, t.To, t.Amount, clock.Format(now))
	if err != nil {
		return fmt.Errorf("enqueue the posting of %s: %w", t.ID, err)
	}
	return nil
}

// relayBatch is how many rows one pass sends at most.
const relayBatch = 100

// Relay sends every unsent outbox row to the core, oldest first, each
// under a key of its own that never changes (the transfer's id), and
// marks a row sent only once the core has acknowledged it. It stops at
// the first failure (the core is down, or its answer was lost) and
// returns how many rows it marked: a row not marked is sent again on the
// next pass, under the same key, and the core answers with the posting it
// already made if the first send got through.
func (s *Server) Relay(ctx context.Context) (int, error) {
	rows, err := s.env.DB.QueryContext(ctx,
		`SELECT id, transfer_id, from_account, to_account, amount FROM outbox
		 WHERE sent_at IS NULL ORDER BY id LIMIT ?`, relayBatch)
	if err != nil {
		return 0, fmt.Errorf("read the outbox: %w", err)
	}
	type row struct {
		id int64
		p  core.Posting
	}
	var pending []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.p.TransferID, &r.p.From, &r.p.To, &r.p.Amount); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read the outbox: %w", err)
		}
		pending = append(pending, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read the outbox: %w", err)
	}
	sent := 0
	for _, r := range pending {
		if _, _, err := s.env.Core.Post(ctx, r.p.TransferID, r.p); err != nil {
			return sent, err
		}
		// Acknowledged: only now is the row done. A crash before this
		// UPDATE sends it again, which the core's key makes harmless.
		if _, err := s.env.DB.ExecContext(ctx, `UPDATE outbox SET sent_at = ? WHERE id = ?`,
			clock.Format(s.env.Clock.Now()), r.id); err != nil {
			return sent, fmt.Errorf("mark %s sent: %w", r.p.TransferID, err)
		}
		sent++
	}
	return sent, nil
}
