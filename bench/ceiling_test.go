package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/labdb"
	"idemlab/kit/respond"
	"idemlab/kit/stage"
	"idemlab/solutions/stage9"
)

// benchCeiling runs, from one writer, the statements the final solution
// (stage 9) commits to its database for one new transfer, straight on the
// database: the claim (delete an expired key, insert in progress,
// commit); the business write, the transfer's outbox row and the key's
// completion with the stored response (commit); and, every relayBatch
// transfers, the relay's pass that reads the owed rows and marks them
// sent (one statement, one commit). No HTTP, no
// JSON decoding, no authentication, and no other writer to wait for:
// what is left is the engine's limit for these commits from one writer,
// each on its own. A server passes it only by writing several requests'
// transactions in one commit, as the kit does when writers queue at the
// gate (kit/sqlitedb/group.go).
// The relay's post to the core ledger is left out: it is a call over HTTP
// to another service, which writes to a database of its own, not to this
// one. The SQL mirrors solutions/stage9/keys.go (claim, complete),
// outbox.go (enqueue, Relay) and the order server.go runs them in; keep
// them in step.
func benchCeiling(b *testing.B) result {
	w := openWriter(b)
	defer w.db.Close()
	return measure(b, 1, w.db.Commits, w.db.GateUse, func(i int64) error {
		return ceilingOp(w.ctx, w.db, w.bank, w.clock, w.cfg, w.customers[int(i)%len(w.customers)], i)
	})
}

// benchNaiveCeiling is benchCeiling for the naive server (stage 0): its
// one transaction for a new transfer, the bank's transfer and its commit,
// from one writer, with no HTTP. Beside benchCeiling it says what the
// statements alone allow: two servers that both reached their engine's
// limit, on a database that lets one writer in at a time, would stand at
// the ceilings' quotient.
func benchNaiveCeiling(b *testing.B) result {
	w := openWriter(b)
	defer w.db.Close()
	return measure(b, 1, w.db.Commits, w.db.GateUse, func(i int64) error {
		c := w.customers[int(i)%len(w.customers)]
		tx, err := w.db.BeginTx(w.ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := w.bank.Transfer(w.ctx, tx, c.ID, bank.TransferRequest{From: c.Accounts[0], To: c.Accounts[1], Amount: 1 + i%1000,
			Metadata: map[string]string{"op": fmt.Sprintf("naive-%d", i)}}); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// writer is a database of its own, with the bank, the final solution's
// tables and the benchmarks' customers, for a ceiling's one writer.
type writer struct {
	ctx       context.Context
	db        *labdb.DB
	bank      *bank.Bank
	clock     *clock.Clock
	cfg       stage.Config
	customers []bank.Customer
}

// openWriter opens a new database (openBenchDB) and sets it up as both
// servers have theirs: the bank's tables, the final solution's key and
// reference tables, and heavy customers with two accounts each.
func openWriter(b *testing.B) writer {
	ctx := context.Background()
	db, err := openBenchDB(ctx)
	if err != nil {
		b.Fatal(err)
	}
	fail := func(err error) {
		db.Close()
		b.Fatal(err)
	}
	if err := bank.Migrate(ctx, db.DB); err != nil {
		fail(err)
	}
	clk, err := clock.Open(ctx, db.DB)
	if err != nil {
		fail(err)
	}
	cfg := stage.DefaultConfig()
	bk := bank.New(db.DB, clk, nil, func() time.Duration { return 0 })
	// stage9.New creates the key and reference tables exactly as the final
	// solution has them; bank.Migrate made the outbox.
	if _, err := stage9.New(ctx, stage.Env{DB: db.DB, Bank: bk, Clock: clk, Config: func() stage.Config { return cfg }}); err != nil {
		fail(err)
	}
	tx, err := db.Begin()
	if err != nil {
		fail(err)
	}
	p := bank.Params{Seed: 1, Customers: heavy, AccountsPerCustomer: 2, OpeningBalance: 1_000_000_000_000}
	customers := bank.Population(p)
	if err := bank.Insert(ctx, tx, customers, p.OpeningBalance); err != nil {
		tx.Rollback()
		fail(err)
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
	return writer{ctx: ctx, db: db, bank: bk, clock: clk, cfg: cfg, customers: customers}
}

func ceilingOp(ctx context.Context, db *labdb.DB, bk *bank.Bank, clk *clock.Clock, cfg stage.Config, c bank.Customer, i int64) error {
	now := clk.Now()
	key, owner := fmt.Sprintf("ceiling-%d", i), rand.Text()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx,
		`DELETE FROM idempotency_keys WHERE customer = ? AND method = ? AND route = ? AND key = ?
		   AND state = 'completed' AND completed_at <= ?`,
		c.ID, "POST", "/transfers", key, clock.Format(now.Add(-cfg.Retention))); err != nil {
		return err
	}
	var id int64
	err = labdb.Savepoint(ctx, tx, func() error {
		return tx.QueryRowContext(ctx,
			`INSERT INTO idempotency_keys
			 (customer, method, route, key, fingerprint, state, lease_owner, lease_expires_at, created_at)
			 VALUES (?, ?, ?, ?, ?, 'in_progress', ?, ?, ?) RETURNING id`,
			c.ID, "POST", "/transfers", key, "fp", owner, clock.Format(now.Add(cfg.Lease)), clock.Format(now)).Scan(&id)
	})
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	t, err := bk.Transfer(ctx, tx, c.ID, bank.TransferRequest{From: c.Accounts[0], To: c.Accounts[1], Amount: 1 + i%1000,
		Metadata: map[string]string{"op": key}})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO outbox (transfer_id, core_key, from_account, to_account, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.ID, t.From, t.To, t.Amount, clock.Format(clk.Now())); err != nil {
		return err
	}
	body, err := respond.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx,
		`UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		     status = ?, content_type = ?, location = ?, body = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,
		clock.Format(clk.Now()), 201, respond.ContentType, "/transfers/"+t.ID, body, id, owner); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if i%relayBatch != 0 {
		return nil
	}
	return ceilingRelay(ctx, db, clk)
}

// relayBatch is how many rows a pass of the relay sends at most: stage
// 9's.
const relayBatch = 200

// ceilingRelay is a pass of the relay that finds a full batch: it reads
// the owed rows and, as if the core had acknowledged every one at once,
// marks them sent in one statement, in a transaction of its own.
func ceilingRelay(ctx context.Context, db *labdb.DB, clk *clock.Clock) error {
	rows, err := db.QueryContext(ctx,
		`SELECT id, core_key, transfer_id, from_account, to_account, amount FROM outbox
		 WHERE sent_at IS NULL AND dead_at IS NULL ORDER BY id LIMIT ?`, relayBatch)
	if err != nil {
		return err
	}
	var ids []any
	for rows.Next() {
		var id, amount int64
		var key, transfer, from, to string
		if err := rows.Scan(&id, &key, &transfer, &from, &to, &amount); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	marks := strings.Repeat(", ?", len(ids))[2:]
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET sent_at = ? WHERE id IN (`+marks+`)`,
		append([]any{clock.Format(clk.Now())}, ids...)...); err != nil {
		return err
	}
	return tx.Commit()
}
