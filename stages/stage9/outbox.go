package stage9

import (
	"context"
	"database/sql"
	"time"

	"idemlab/kit/bank"
)

// TODO(stage 9): enqueue writes t's posting to the outbox (the kit made
// the table: kit/bank's outbox.go), inside tx, the transaction that moves
// t's money, so that the promise commits with the money or not at all.
// The row owes the core t's accounts and amount, and it carries the
// Idempotency-Key it will be posted under (core_key): decide here what
// that key is made of. It must be the same on every send of this row, and
// no other transfer may ever have it: not two rents of the same amount to
// the same landlord, not two customers who both number their requests
// "pay-1". Leave sent_at and dead_at NULL: the row is owed until the core
// acknowledges it or refuses it for good. A row the database refuses is
// the transfer's failure too: the transfer must fail with it, moving
// nothing and telling the client so, on either engine. Committed without
// its row, the transfer is money the core never hears of; and whether a
// refusal left unanswered commits that or rolls back by accident depends
// on the engine and on where the error came from.
func enqueue(ctx context.Context, tx *sql.Tx, t bank.Transfer, now time.Time) error {
	return nil
}

// Relay is the outbox's relay: the kit calls it from one goroutine for as
// long as the server runs, again at once after a pass that settled rows
// and 20 ms later otherwise. It returns how many rows it settled.
//
// TODO(stage 9): send the rows still owed (neither sent nor set aside),
// oldest first, each under its row's key, and settle them:
//   - A row the core acknowledged is done: mark it sent, and only then.
//     Mark a pass's rows together, in one statement: the server's own
//     transfers wait behind every write the relay makes, and a relay that
//     writes once a row falls behind them under load.
//   - A row the core refused for good (core.Final: it read the posting
//     and refuses it, a 422, 400 or 413, and not the batch request that
//     carried it) will be refused again on every pass: set it aside as a
//     dead letter (dead_at, and the core's status and body, from the
//     *core.Refusal) and go on with the others; never drop it, never
//     leave it in the way.
//   - A row refused for now (down, no answer, a 5xx, a 409 for its key
//     still in progress at the core, a token the core does not know, a
//     batch refused whole) stays owed, however often, and goes again,
//     under the same key, on a later pass: the core applies each key
//     once, so a posting whose answer was lost is not posted twice. It
//     holds back none of the others: they are settled all the same.
//
// s.env.Core.PostAll sends a batch to the core, one request per 256
// postings, and tells you what became of each; s.env.Core.Post sends one.
func (s *Server) Relay(ctx context.Context) (int, error) {
	return 0, nil
}
