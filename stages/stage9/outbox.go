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
// and 20 ms later otherwise. It returns how many rows it settled (marked
// sent or set aside as dead letters; a row refused for now is not
// settled), and an error, which the kit logs, for a pass that failed.
//
// TODO(stage 9): deliver the rows the core is still owed, and settle each.
// When you are done:
//   - every transfer is posted once, never twice, however often a pass
//     fails half-way, an answer is lost, or the server dies between the
//     send and the write that records it;
//   - a row the core will refuse on every try (core.Final tells that
//     refusal from one that may pass later) is set aside where an
//     operator finds it, with the core's answer, and never holds up the
//     rows behind it; nothing is ever dropped;
//   - a row refused for now is still owed, and goes again later;
//   - delivery keeps up with the transfers under load: on SQLite, one
//     writer at a time, every commit of the relay queues behind the
//     customers' writes, so how many commits a posting costs decides
//     whether the outbox drains (lesson 09, "The relay", weighs what that
//     costs).
//
// The outbox table is the kit's (kit/bank's outbox.go): read what each
// column is for. s.env.Core.PostAll sends a batch to the core, one request
// per 256 postings, up to parallel of those requests at once (a batch of
// 256 or fewer goes in one request, whatever parallel says), and tells you
// what became of each; s.env.Core.Post sends one.
func (s *Server) Relay(ctx context.Context) (int, error) {
	return 0, nil
}
