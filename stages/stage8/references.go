package stage8

// This file owns the transfer_references table: every statement that
// touches it lives here.
//
// TODO(stage 8): write the table and the hold on a reference.
//
// createReferenceTable(ctx, db) runs CREATE TABLE IF NOT EXISTS
// transfer_references through labdb.CreateTable: one row per transfer that
// carried a reference, with the customer, the reference, the id of the
// transfer it names (transfer_id) and when (created_at, clock.Format), and
// a UNIQUE constraint on (customer, reference). That constraint decides,
// as the key table's does for keys, which of two transfers with one
// reference is made. Scope it to the customer: two customers may number
// their invoices alike. And keep the rows for ever: a key is purged after
// its retention period, a reference must outlive it, or the late retry of
// a purged key pays the invoice again.
//
// holdReference(ctx, tx, customer, reference, transferID, now) inserts the
// row inside tx, the transaction that has just made the transfer, with a
// plain INSERT wrapped in labdb.Savepoint (on PostgreSQL a failed
// statement would otherwise end tx). The INSERT is the check: do not look
// for the reference first and insert it after; two clerks paying one
// invoice at once would both see "not paid yet" (the lesson shows where a
// look inside the same transaction stops being safe). Tell a unique
// violation apart with labdb.IsUniqueViolation:
//   - the reference is taken: read the transfer_id of the row that holds
//     it (SELECT … WHERE customer = ? AND reference = ?) and return
//     &problem.Error{Type: problem.DuplicateReference, Location:
//     "/transfers/" + id, Detail: …}, a 409 whose Location names the
//     transfer that paid the invoice;
//   - any other error: return it, wrapped (fmt.Errorf("hold reference:
//     %w", err)); the request fails, and nothing moves.
