package stage8

// This file owns the transfer_references table: every statement that
// touches it lives here.
//
// TODO(stage 8): write createReferenceTable and holdReference here.
//
// createReferenceTable creates, through labdb.CreateTable, the table of
// business keys: one row for each transfer that carried a reference,
// enough to tell a second payment which transfer paid the invoice. When
// you are done, the database itself refuses a second row for one
// (customer, reference), whoever looked before: that constraint decides,
// as the key table's does for keys, which of two clerks paying one
// invoice at once is paid. Scope it to the customer, because two
// customers may number their invoices alike. Nothing ever deletes a row:
// a key is purged after its retention period, and the late retry of a
// purged key must still find its invoice paid.
//
// holdReference records the reference inside the transaction that has
// just made the transfer, so that the reference commits with the money
// or not at all. The write itself is the check (a look first leaves a
// window in which two clerks both see "not paid yet"; the lesson says on
// which engine). On PostgreSQL a failed statement ends its transaction:
// run the write under labdb.Savepoint. A unique violation (tell it apart
// with labdb.IsUniqueViolation, never by the message) is answered with
// 409 problem.DuplicateReference whose Location names the transfer that
// holds the reference; any other error is returned, wrapped, and nothing
// moves. The reference is compared exactly as the kit hands it over
// (already NFC): case and every other difference are significant.
