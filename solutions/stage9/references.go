package stage9

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// referenceSchema is the table of business keys: one row for each
// transfer that carried a reference, naming it. The UNIQUE constraint on
// (customer, reference) decides, as the key table's does for keys, which
// of two transfers with one reference is made; unlike a key, a reference
// is kept for ever: nothing purges this table, so an invoice paid a year
// ago is still paid. Two customers may use the same reference: the
// constraint is scoped to the customer.
const referenceSchema = `CREATE TABLE IF NOT EXISTS transfer_references (
	customer    TEXT NOT NULL,
	reference   TEXT NOT NULL,
	transfer_id TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	UNIQUE (customer, reference)
)`

// createReferenceTable creates transfer_references if it does not exist.
func createReferenceTable(ctx context.Context, db *sql.DB) error {
	if err := labdb.CreateTable(ctx, db, referenceSchema); err != nil {
		return fmt.Errorf("create transfer_references: %w", err)
	}
	return nil
}

// holdReference records, inside tx, that customer's reference names the
// transfer transferID, which tx has just made: the reference commits with
// the money or not at all. The INSERT is the check: looking first and
// inserting after would let two clerks paying one invoice at once both see
// "not paid yet". If the reference is already there, it returns 409
// duplicate-reference with the Location of the transfer that holds it;
// tx goes on, but the caller must roll it back, because the transfer it
// made must not stay. Any other failure is returned as it is.
func holdReference(ctx context.Context, tx *sql.Tx, customer, reference, transferID string, now time.Time) error {
	err := labdb.Savepoint(ctx, tx, func() error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO transfer_references (customer, reference, transfer_id, created_at) VALUES (?, ?, ?, ?)`,
			customer, reference, transferID, clock.Format(now))
		return err
	})
	switch {
	case err == nil:
		return nil
	case labdb.IsUniqueViolation(err):
		return duplicate(ctx, tx, customer, reference)
	}
	return fmt.Errorf("hold reference: %w", err)
}

// duplicate is the answer to a transfer whose reference customer has
// already used: 409 duplicate-reference, with the Location of the
// transfer that holds it. The row our INSERT ran into has committed (on
// PostgreSQL the INSERT waited for its transaction to end), so the read
// finds it.
func duplicate(ctx context.Context, tx *sql.Tx, customer, reference string) error {
	var id string
	err := tx.QueryRowContext(ctx,
		`SELECT transfer_id FROM transfer_references WHERE customer = ? AND reference = ?`,
		customer, reference).Scan(&id)
	if err != nil {
		return fmt.Errorf("read reference %q: %w", reference, err)
	}
	return &problem.Error{Type: problem.DuplicateReference, Location: "/transfers/" + id,
		Detail: fmt.Sprintf("reference %q was already paid by transfer %s; nothing moved this time", reference, id)}
}
