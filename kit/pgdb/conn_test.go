package pgdb

import (
	"context"
	"testing"

	"idemlab/kit/internal/outboxtest"
)

// TestOutboxCommits_CountsTheWritesReadThroughQuery: a write of the outbox
// read through a query counts among the outbox commits as one run through
// Exec does (outboxtest). It catches a connection that
// sees only ExecContext's count of rows, which a relay that marks each
// row sent with UPDATE … RETURNING passed S9.commits-per-posting with.
func TestOutboxCommits_CountsTheWritesReadThroughQuery(t *testing.T) {
	ctx := context.Background()
	dbURL, drop, err := CreateDatabase(ctx, cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	defer drop(ctx)
	db, err := Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	outboxtest.WritesReadThroughQuery(t, db, `CREATE TABLE outbox (id BIGSERIAL PRIMARY KEY, sent_at TEXT)`)
}
