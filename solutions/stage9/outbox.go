package stage9

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
)

// enqueue writes t's posting to the outbox inside tx, the transaction that
// moves t's money: if it commits, the posting is owed to the core; if it
// rolls back, neither happened. The row's key is chosen here, once, and
// is the transfer's id: unique for the transfer's whole life, so two
// transfers never share one (two rents of the same amount, two customers'
// "pay-1"), and the same on every send of this row.
func enqueue(ctx context.Context, tx *sql.Tx, t bank.Transfer, now time.Time) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.ID, t.From, t.To, t.Amount, clock.Format(now))
	if err != nil {
		return fmt.Errorf("enqueue the posting of %s: %w", t.ID, err)
	}
	return nil
}

const (
	// relayBatch is how many owed rows one pass reads and sends at most.
	relayBatch = 200
	// relaySenders is how many requests to the core PostAll may have in
	// flight at once; a pass of relayBatch rows goes in one.
	relaySenders = 16
)

// Relay sends a batch of the outbox's owed rows to the core, oldest
// first, in one request, each under the key its row was written with,
// and settles the batch in one transaction: the rows the core
// acknowledged are marked sent in one statement, and those it refused for
// good are set aside as dead letters with its answer. A row refused for
// now (the core down, no answer) stays owed and is sent again, under the
// same key, on a later pass; the core answers with the posting it already
// made if the first send got through. It returns how many rows it settled
// and the first refusal for now.
func (s *Server) Relay(ctx context.Context) (int, error) {
	batch, ids, err := s.owed(ctx)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	s.env.Core.PostAll(ctx, batch, relaySenders)
	// When the core answered, not when the marks get their turn to write
	// (behind the requests' writes): what sent_at says.
	now := clock.Format(s.env.Clock.Now())
	var sent []any
	var later error
	tx, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("settle the outbox: %w", err)
	}
	defer tx.Rollback()
	dead := 0
	for i, b := range batch {
		var refused *core.Refusal
		switch {
		case b.Err == nil:
			sent = append(sent, ids[i])
		case errors.As(b.Err, &refused) && refused.Final():
			// Poison: sent again it would be refused again, for ever,
			// and the rows behind it would wait. Set it aside, with the
			// core's answer for the person who will look at it.
			if err := setAside(ctx, tx, ids[i], refused, now); err != nil {
				return 0, err
			}
			dead++
		case later == nil:
			later = b.Err
		}
	}
	if len(sent) > 0 {
		// Acknowledged: only now are the rows done, all in one statement.
		// A crash before the commit sends them again, which their keys
		// make harmless.
		marks := strings.Repeat(", ?", len(sent))[2:]
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET sent_at = ? WHERE id IN (`+marks+`)`,
			append([]any{now}, sent...)...); err != nil {
			return 0, fmt.Errorf("mark %d rows sent: %w", len(sent), err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("settle the outbox: %w", err)
	}
	return len(sent) + dead, later
}

// owed reads up to relayBatch rows still owed to the core, oldest first:
// neither sent nor set aside. It returns them as sends, with their ids.
func (s *Server) owed(ctx context.Context) ([]core.Send, []int64, error) {
	rows, err := s.env.DB.QueryContext(ctx,
		`SELECT id, core_key, transfer_id, from_account, to_account, amount FROM outbox
		 WHERE sent_at IS NULL AND dead_at IS NULL ORDER BY id LIMIT ?`, relayBatch)
	if err != nil {
		return nil, nil, fmt.Errorf("read the outbox: %w", err)
	}
	defer rows.Close()
	var batch []core.Send
	var ids []int64
	for rows.Next() {
		var id int64
		var b core.Send
		if err := rows.Scan(&id, &b.Key, &b.Posting.TransferID, &b.Posting.From, &b.Posting.To, &b.Posting.Amount); err != nil {
			return nil, nil, fmt.Errorf("read the outbox: %w", err)
		}
		batch, ids = append(batch, b), append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read the outbox: %w", err)
	}
	return batch, ids, nil
}

// setAside makes row id a dead letter, with the core's refusal: its
// status and body as they came.
func setAside(ctx context.Context, tx *sql.Tx, id int64, refused *core.Refusal, now string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET dead_at = ?, dead_status = ?, dead_answer = ? WHERE id = ?`,
		now, refused.Status, string(refused.Body), id); err != nil {
		return fmt.Errorf("set row %d aside: %w", id, err)
	}
	return nil
}
