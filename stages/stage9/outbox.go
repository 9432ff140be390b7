package stage9

import (
	"context"
	"database/sql"
	"time"

	"idemlab/kit/bank"
)

// TODO(stage 9): enqueue writes t's posting to the outbox, inside tx, the
// transaction that moves t's money. The kit made the table (kit/bank's
// outbox.go): INSERT INTO outbox (transfer_id, from_account, to_account,
// amount, created_at) VALUES (?, ?, ?, ?, ?), with t.ID, t.From, t.To,
// t.Amount and clock.Format(now). Leave sent_at NULL: the row is owed
// until the core has acknowledged it.
func enqueue(ctx context.Context, tx *sql.Tx, t bank.Transfer, now time.Time) error {
	return nil
}

// Relay is the outbox's relay: the kit calls it every 20 ms, from one
// goroutine, for as long as the server runs. It returns how many rows it
// marked sent.
//
// TODO(stage 9): read the rows whose sent_at is NULL, oldest (lowest id)
// first, and for each: send its posting (core.Posting{TransferID, From,
// To, Amount}) with s.env.Core.Post(ctx, key, posting), and only when Post
// returns no error, set its sent_at (UPDATE outbox SET sent_at = ? WHERE
// id = ?). On the first error, stop and return it: the row stays owed and
// the next pass sends it again.
//
// The key is the heart of it: it must be the same every time this row is
// sent (the transfer's id, say), never one drawn for the attempt. The core
// applies each key once; when its answer is lost, or the server dies
// before the UPDATE, the row is sent again, and only the same key gets the
// posting already made instead of a second one.
func (s *Server) Relay(ctx context.Context) (int, error) {
	return 0, nil
}
