package stage9

import (
	"context"
	"database/sql"
	"time"

	"idemlab/kit/bank"
)

// TODO(stage 9): enqueue writes t's posting to the outbox (the kit made
// the table: kit/bank's outbox.go), inside tx, the transaction that moves
// t's money. When you are done, the row commits with the money or not at
// all: a refused transfer leaves no row, and a crash after the commit
// leaves one that a relay will find. The row is owed until the core has
// acknowledged it, so nothing marks it sent here. Whatever key the row
// will be posted under must name this transfer and nothing else, for the
// transfer's whole life: not drawn per attempt, not made from the
// posting's content (two equal payments would share it), not the client's
// Idempotency-Key (two customers may use the same one).
func enqueue(ctx context.Context, tx *sql.Tx, t bank.Transfer, now time.Time) error {
	return nil
}

// Relay is the outbox's relay: the kit calls it every 20 ms, from one
// goroutine, for as long as the server runs. It returns how many rows it
// marked sent.
//
// TODO(stage 9): when you are done, every owed row reaches the core
// once in effect. A pass reads owed rows, oldest first, and sends each
// with s.env.Core.Post under the row's own unchanging key: the core
// applies each key once, so a row sent again (its answer lost, or the
// server dead before the row was marked) gets the posting already made,
// not a second one. A row is marked sent only after the core said yes,
// never before. An error that means "retry later" (no answer, 5xx, 429)
// leaves the row owed for a later pass; a refusal for good (a 422,
// core.Refusal says which) would be refused on every pass and hold up
// every row behind it: set it aside as a dead letter with the core's
// answer, and go on. Mark rows many at a time, not with one write per
// row, or the relay falls behind under load.
func (s *Server) Relay(ctx context.Context) (int, error) {
	return 0, nil
}
