package labdb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"idemlab/kit/fault"
	"idemlab/kit/labdb"
)

const keySchema = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	id   INTEGER PRIMARY KEY,
	key  TEXT NOT NULL UNIQUE,
	body BLOB
)`

// engines opens a database of its own on each engine there is: SQLite in
// memory always, PostgreSQL when IDEMLAB_DATABASE_URL names a cluster
// (make test-pg starts one).
func engines(t *testing.T) map[labdb.Engine]*labdb.DB {
	t.Helper()
	return openEngines(t, ":memory:")
}

// fileEngines is engines with SQLite on a file, in WAL mode: a reader
// never waits for the writer there, and sees only what is committed.
func fileEngines(t *testing.T) map[labdb.Engine]*labdb.DB {
	t.Helper()
	return openEngines(t, filepath.Join(t.TempDir(), "lab.db"))
}

// openEngines opens a database of its own on each engine there is: SQLite
// at lite always, PostgreSQL when IDEMLAB_DATABASE_URL names a cluster.
func openEngines(t *testing.T, lite string) map[labdb.Engine]*labdb.DB {
	t.Helper()
	out := map[labdb.Engine]*labdb.DB{}
	targets := []string{lite}
	if target := labdb.TestTarget(); target != ":memory:" {
		targets = append(targets, target)
	} else {
		t.Log("PostgreSQL skipped: " + labdb.EnvURL + " is not set (make test-pg sets it)")
	}
	for _, target := range targets {
		db, err := labdb.OpenOwn(t.Context(), target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := db.Close(); err != nil {
				t.Error(err)
			}
		})
		if err := labdb.CreateTable(t.Context(), db.DB, keySchema); err != nil {
			t.Fatalf("%s: %v", db.Engine(), err)
		}
		out[db.Engine()] = db
	}
	return out
}

// TestIsUniqueViolation_ByCodeOnEitherEngine catches a helper that misses
// one engine's code for a duplicate key, or that takes another
// constraint's failure (NOT NULL) for one.
func TestIsUniqueViolation_ByCodeOnEitherEngine(t *testing.T) {
	for engine, db := range engines(t) {
		if _, err := db.Exec(`INSERT INTO idempotency_keys (key) VALUES (?)`, "k"); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		_, err := db.Exec(`INSERT INTO idempotency_keys (key) VALUES (?)`, "k")
		if !labdb.IsUniqueViolation(err) {
			t.Errorf("%s: a duplicate key gave %v, not a unique violation", engine, err)
		}
		_, err = db.Exec(`INSERT INTO idempotency_keys (key) VALUES (NULL)`)
		if err == nil || labdb.IsUniqueViolation(err) {
			t.Errorf("%s: a NULL key gave %v, want an error that is not a unique violation", engine, err)
		}
	}
}

// TestSavepoint_KeepsTheTransaction catches a claim that, on PostgreSQL,
// reads the winning row after its INSERT failed in the same transaction
// without a savepoint: the transaction is aborted, and the read fails.
func TestSavepoint_KeepsTheTransaction(t *testing.T) {
	for engine, db := range engines(t) {
		// Unmarked, and marked with its engine as the kit marks each
		// request: on SQLite, the marked one runs the statement alone,
		// and the transaction must go on all the same.
		for n, ctx := range []context.Context{context.Background(), labdb.WithEngine(context.Background(), engine)} {
			key := fmt.Sprintf("k%d", n)
			var first int64
			if err := db.QueryRow(`INSERT INTO idempotency_keys (key, body) VALUES (?, ?) RETURNING id`, key, []byte{0, 1}).Scan(&first); err != nil {
				t.Fatalf("%s: %v", engine, err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = labdb.Savepoint(ctx, tx, func() error {
				var id int64
				return tx.QueryRowContext(ctx, `INSERT INTO idempotency_keys (key) VALUES (?) RETURNING id`, key).Scan(&id)
			})
			if !labdb.IsUniqueViolation(err) {
				t.Fatalf("%s, context %d: Savepoint returned %v, want the unique violation", engine, n, err)
			}
			var id int64
			var body []byte
			if err := tx.QueryRowContext(ctx, `SELECT id, body FROM idempotency_keys WHERE key = ?`, key).Scan(&id, &body); err != nil {
				t.Fatalf("%s, context %d: after the savepoint, the transaction cannot read: %v", engine, n, err)
			}
			if id != first || string(body) != "\x00\x01" {
				t.Errorf("%s, context %d: read id %d body %q, want %d and the bytes stored", engine, n, id, body, first)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestReadOnlyTransaction_RefusesWritesOnEitherEngine catches an engine
// whose read-only transaction lets a write through: SQLite's, begun with a
// plain BEGIN, committed an INSERT on memory and on a file, where
// PostgreSQL's BEGIN READ ONLY refuses it. Both errors must say the
// transaction is read-only.
func TestReadOnlyTransaction_RefusesWritesOnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for _, open := range []func(*testing.T) map[labdb.Engine]*labdb.DB{engines, fileEngines} {
		for engine, db := range open(t) {
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES (?)`, "k")
			if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
				t.Errorf("%s: an INSERT in a read-only transaction gave %v; want it refused as a write in a read-only transaction", engine, err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s: %d key rows after the read-only transaction; want 0", engine, n)
			}
		}
	}
}

// TestFaults_OnEitherEngine catches an engine whose connections skip the
// lab's faults: the store-unavailable fault must fail a statement on the
// key table (and spare the lab's own reads), the business-commit switch
// must fire after, and only after, a commit that moved money, and a
// rolled-back change to a key row must never be reported.
func TestFaults_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		if err := db.WatchKeyTable(ctx); err != nil {
			t.Fatal(err)
		}
		changed := make(chan []int64, 16)
		db.OnKeyRowsChanged(func(rows []int64) { changed <- slices.Clone(rows) })
		businessCommits := make(chan struct{}, 4)
		db.OnBusinessCommit(func() { businessCommits <- struct{}{} })

		db.FailKeyStore(1)
		var n int
		if err := db.QueryRowContext(fault.LabRead(ctx), `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
			t.Errorf("%s: the lab's own read failed under the fault: %v", engine, err)
		}
		if _, err := db.Exec(`INSERT INTO idempotency_keys (key) VALUES ('x')`); !errors.Is(err, fault.ErrKeyStoreUnavailable) {
			t.Errorf("%s: under store-unavailable, err = %v", engine, err)
		}

		inTx := func(commit bool, key string) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fault.MarkBusinessWrite(ctx), `INSERT INTO idempotency_keys (key) VALUES (?)`, key); err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		inTx(false, "rolled-back")
		inTx(true, "committed")
		select {
		case <-businessCommits:
		default:
			t.Errorf("%s: no business commit reported after the commit", engine)
		}
		if len(businessCommits) != 0 {
			t.Errorf("%s: a rollback was reported as a business commit", engine)
		}
		var id int64
		if err := db.QueryRow(`SELECT id FROM idempotency_keys WHERE key = 'committed'`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		// The rolled-back row was never reported, so the first report is
		// the committed one.
		if got := <-changed; !slices.Equal(got, []int64{id}) {
			t.Errorf("%s: first key rows reported %v, want [%d] (the committed row)", engine, got, id)
		}
		db.OnKeyRowsChanged(nil)
		db.OnBusinessCommit(nil)
	}
}

// TestOutboxWriteFault_OnEitherEngine catches an engine whose connections
// skip the fail-outbox-write fault, and one where the refusal reaches the
// engine: the armed INSERT into the outbox must fail inside its
// transaction, and the transaction must go on and commit without the row
// (on PostgreSQL a statement the server refused would abort it, and a
// stage that drops the error would commit nothing, money included).
func TestOutboxWriteFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		if err := labdb.CreateTable(ctx, db.DB, `CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL)`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		db.FailOutboxWrites(1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (transfer_id) VALUES (?)`, "refused"); !errors.Is(err, fault.ErrOutboxWriteRefused) {
			t.Errorf("%s: the armed outbox insert: err = %v, want %v", engine, err, fault.ErrOutboxWriteRefused)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES (?)`, "beside-the-refused-row"); err != nil {
			t.Errorf("%s: a statement after the refused insert, in its transaction: %v", engine, err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("%s: commit after the refused insert: %v", engine, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO outbox (transfer_id) VALUES (?)`, "taken"); err != nil {
			t.Errorf("%s: the insert after the armed one: %v", engine, err)
		}
		ids := column(t, db, `SELECT transfer_id FROM outbox ORDER BY id`)
		if !slices.Equal(ids, []string{"taken"}) {
			t.Errorf("%s: the outbox holds %v; want [taken]", engine, ids)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = 'beside-the-refused-row'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: the transaction's other row: %d rows, %v; want it committed", engine, n, err)
		}
	}
}

// TestReferenceWriteFault_OnEitherEngine catches an engine whose
// connections skip the fail-reference-write fault, and one where the
// refusal reaches the engine: the armed INSERT into transfer_references
// must fail inside its transaction, whether run alone or in a savepoint
// (labdb.Savepoint, as a stage holds its reference on PostgreSQL), with
// Exec or as an INSERT … RETURNING read with QueryRow, and the
// transaction must go on: the lookup of the transfer that holds a
// reference (spared) runs in it, and it commits without the refused
// rows. A statement the server refused would abort a PostgreSQL
// transaction outside a savepoint, and a stage that drops the error would
// commit nothing, money included.
func TestReferenceWriteFault_OnEitherEngine(t *testing.T) {
	for engine, db := range engines(t) {
		ctx := labdb.WithEngine(context.Background(), engine)
		if err := labdb.CreateTable(ctx, db.DB, `CREATE TABLE IF NOT EXISTS transfer_references (
			customer TEXT NOT NULL, reference TEXT NOT NULL, transfer_id TEXT NOT NULL,
			UNIQUE (customer, reference))`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		const insert = `INSERT INTO transfer_references (customer, reference, transfer_id) VALUES (?, ?, ?)`
		if _, err := db.ExecContext(ctx, insert, "c", "INV-1", "tr_held"); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		db.FailReferenceWrites(3)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		refused := []func() error{
			func() error {
				_, err := tx.ExecContext(ctx, insert, "c", "INV-2", "tr_alone")
				return err
			},
			func() error {
				return labdb.Savepoint(ctx, tx, func() error {
					_, err := tx.ExecContext(ctx, insert, "c", "INV-3", "tr_in_a_savepoint")
					return err
				})
			},
			func() error {
				var id string
				return tx.QueryRowContext(ctx, insert+` ON CONFLICT (customer, reference) DO NOTHING RETURNING transfer_id`,
					"c", "INV-4", "tr_returning").Scan(&id)
			},
		}
		for i, run := range refused {
			if err := run(); !errors.Is(err, fault.ErrReferenceWriteRefused) {
				t.Errorf("%s: armed reference insert %d: err = %v, want %v", engine, i+1, err, fault.ErrReferenceWriteRefused)
			}
		}
		var holder string
		if err := tx.QueryRowContext(ctx, `SELECT transfer_id FROM transfer_references WHERE customer = ? AND reference = ?`, "c", "INV-1").Scan(&holder); err != nil || holder != "tr_held" {
			t.Errorf("%s: the lookup of the holder after the refused inserts, in their transaction: %q, %v; want tr_held", engine, holder, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES (?)`, "beside-the-refused-references"); err != nil {
			t.Errorf("%s: a statement after the refused inserts, in their transaction: %v", engine, err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("%s: commit after the refused inserts: %v", engine, err)
		}
		if _, err := db.ExecContext(ctx, insert, "c", "INV-5", "tr_taken"); err != nil {
			t.Errorf("%s: the insert after the armed ones: %v", engine, err)
		}
		ids := column(t, db, `SELECT transfer_id FROM transfer_references ORDER BY transfer_id`)
		if want := []string{"tr_held", "tr_taken"}; !slices.Equal(ids, want) {
			t.Errorf("%s: transfer_references holds %v; want %v", engine, ids, want)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = 'beside-the-refused-references'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: the transaction's other row: %d rows, %v; want it committed", engine, n, err)
		}
	}
}

// column returns the text column query reads from db, row by row.
func column(t *testing.T, db *labdb.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSlowBeginFault_OnEitherEngine catches an engine whose connections
// skip the slow-begin fault, and one that holds read-only transactions
// too: the armed write transaction must still be waiting when its context
// ends, well inside the delay; a read-only one, and a write transaction
// once the count is spent, must begin.
func TestSlowBeginFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		db.SlowBegins(1)
		ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: a read-only transaction while armed: %v", engine, err)
		}
		if err := ro.Rollback(); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, fault.BeginDelay/2)
		tx, err := db.BeginTx(short, nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			if err == nil {
				tx.Rollback()
			}
			t.Errorf("%s: a write transaction while armed: err = %v; want it held past its context's end (%v)", engine, err, context.DeadlineExceeded)
		}
		if n := db.SlowBeginsLeft(); n != 0 {
			t.Errorf("%s: %d left after the armed begin; want 0", engine, n)
		}
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("%s: a write transaction once the count is spent: %v", engine, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFailBeginFault_OnEitherEngine catches an engine whose connections
// skip the fail-begin fault, and one that refuses read-only transactions
// too: the armed write transaction must be refused with ErrBeginRefused,
// a read-only one must begin, and a write transaction once the count is
// spent must begin too.
func TestFailBeginFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		db.FailBegins(1)
		ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: a read-only transaction while armed: %v", engine, err)
		}
		if err := ro.Rollback(); err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if !errors.Is(err, fault.ErrBeginRefused) {
			if err == nil {
				tx.Rollback()
			}
			t.Errorf("%s: a write transaction while armed: err = %v; want %v", engine, err, fault.ErrBeginRefused)
		}
		if n := db.FailedBeginsLeft(); n != 0 {
			t.Errorf("%s: %d left after the armed begin; want 0", engine, n)
		}
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("%s: a write transaction once the count is spent: %v", engine, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlowKeyUpdateFault_OnEitherEngine catches an engine whose
// connections skip the slow-key-update fault: inside a transaction, as a
// takeover runs, a read of the key table must run, the armed update of
// it must still be waiting when its context ends, well inside the delay,
// and an update once the count is spent must run.
func TestSlowKeyUpdateFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES ('leased')`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		db.SlowKeyUpdates(1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM idempotency_keys WHERE key = 'leased'`).Scan(&id); err != nil {
			t.Errorf("%s: a read of the key table while armed: %v", engine, err)
		}
		short, cancel := context.WithTimeout(ctx, fault.KeyUpdateDelay/2)
		_, err = tx.ExecContext(short, `UPDATE idempotency_keys SET key = 'taken' WHERE id = ?`, id)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: an update of the key table while armed: err = %v; want it held past its context's end (%v)", engine, err, context.DeadlineExceeded)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := db.SlowKeyUpdatesLeft(); n != 0 {
			t.Errorf("%s: %d left after the armed update; want 0", engine, n)
		}
		if _, err := db.ExecContext(ctx, `UPDATE idempotency_keys SET key = 'taken' WHERE key = 'leased'`); err != nil {
			t.Errorf("%s: an update of the key table once the count is spent: %v", engine, err)
		}
	}
}

// TestCommitAnswerLostFault_OnEitherEngine catches an engine whose
// connections skip the commit-answer-lost fault, or fire it before the
// commit: the armed commit of a transaction that moved money reports
// ErrCommitAnswerLost and its row is there; a commit that moved none, and
// one once the count is spent, report nothing.
func TestCommitAnswerLostFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		db.LoseCommitAnswers(1)
		commit := func(key string, business bool) error { return begin(t, db, key, business).Commit() }
		if err := commit("no-money", false); err != nil {
			t.Errorf("%s: a commit that moved no money, armed: %v; want nil", engine, err)
		}
		if err := commit("lost-answer", true); !errors.Is(err, fault.ErrCommitAnswerLost) {
			t.Errorf("%s: the armed commit: err = %v; want %v", engine, err, fault.ErrCommitAnswerLost)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = 'lost-answer'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: rows of the commit whose answer was lost: %d (%v); want 1: it committed", engine, n, err)
		}
		if err := commit("answered", true); err != nil {
			t.Errorf("%s: a commit once the count is spent: %v; want nil", engine, err)
		}
	}
}

// TestFailCommitFault_OnEitherEngine catches an engine whose connections
// skip the fail-commit fault, or commit what it says rolled back: the
// armed commit of a transaction that moved money reports ErrCommitFailed
// and its row is not there; a commit that moved none, and one once the
// count is spent, commit.
func TestFailCommitFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		db.FailCommits(1)
		commit := func(key string, business bool) error { return begin(t, db, key, business).Commit() }
		if err := commit("no-money", false); err != nil {
			t.Errorf("%s: a commit that moved no money, armed: %v; want nil", engine, err)
		}
		if err := commit("rolled-back", true); !errors.Is(err, fault.ErrCommitFailed) {
			t.Errorf("%s: the armed commit: err = %v; want %v", engine, err, fault.ErrCommitFailed)
		}
		if err := commit("committed", true); err != nil {
			t.Errorf("%s: a commit once the count is spent: %v; want nil", engine, err)
		}
		for key, want := range map[string]int{"no-money": 1, "rolled-back": 0, "committed": 1} {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = ?`, key).Scan(&n); err != nil || n != want {
				t.Errorf("%s: rows of the commit %q: %d (%v); want %d", engine, key, n, err, want)
			}
		}
	}
}

// TestSlowKeyDeleteFault_OnEitherEngine catches an engine whose
// connections skip the slow-key-delete fault: inside a transaction, as a
// claim runs, a read of the key table must run, the armed delete from it
// must still be waiting when its context ends, well inside the delay, and
// a delete once the count is spent must run.
func TestSlowKeyDeleteFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES ('expired')`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		db.SlowKeyDeletes(1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM idempotency_keys WHERE key = 'expired'`).Scan(&id); err != nil {
			t.Errorf("%s: a read of the key table while armed: %v", engine, err)
		}
		short, cancel := context.WithTimeout(ctx, fault.KeyDeleteDelay/2)
		_, err = tx.ExecContext(short, `DELETE FROM idempotency_keys WHERE key = 'expired'`)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: a delete from the key table while armed: err = %v; want it held past its context's end (%v)", engine, err, context.DeadlineExceeded)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := db.SlowKeyDeletesLeft(); n != 0 {
			t.Errorf("%s: %d left after the armed delete; want 0", engine, n)
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE key = 'expired'`); err != nil {
			t.Errorf("%s: a delete from the key table once the count is spent: %v", engine, err)
		}
	}
}

// TestSlowKeyReadFault_OnEitherEngine catches an engine whose
// connections skip the slow-key-read fault: the armed read of the key
// table, as a claim's, must still be waiting when its context ends, well
// inside the delay, and a read once the count is spent must run.
func TestSlowKeyReadFault_OnEitherEngine(t *testing.T) {
	for engine, db := range engines(t) {
		db.SlowKeyReads(1)
		var n int
		read := `SELECT count(*) FROM idempotency_keys WHERE key = 'claimed'`
		short, cancel := context.WithTimeout(context.Background(), fault.KeyReadDelay/2)
		err := db.QueryRowContext(short, read).Scan(&n)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: a read of the key table while armed: err = %v; want it held past its context's end (%v)", engine, err, context.DeadlineExceeded)
		}
		if left := db.SlowKeyReadsLeft(); left != 0 {
			t.Errorf("%s: %d left after the armed read; want 0", engine, left)
		}
		if err := db.QueryRowContext(context.Background(), read).Scan(&n); err != nil {
			t.Errorf("%s: a read of the key table once the count is spent: %v", engine, err)
		}
	}
}

// TestFailKeyReadFault_OnEitherEngine catches an engine whose connections
// skip the fail-key-read fault: the armed read of the key table, as a
// claim's inside its transaction, must be refused with ErrKeyReadRefused,
// the lab's own read must run, and a read once the count is spent must
// run, in the same transaction.
func TestFailKeyReadFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		db.FailKeyReads(1)
		var n int
		read := `SELECT count(*) FROM idempotency_keys WHERE key = 'claimed'`
		if err := db.QueryRowContext(fault.LabRead(ctx), read).Scan(&n); err != nil {
			t.Errorf("%s: the lab's read of the key table while armed: %v", engine, err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if err := tx.QueryRowContext(ctx, read).Scan(&n); !errors.Is(err, fault.ErrKeyReadRefused) {
			t.Errorf("%s: a read of the key table while armed: err = %v; want %v", engine, err, fault.ErrKeyReadRefused)
		}
		if left := db.FailedKeyReadsLeft(); left != 0 {
			t.Errorf("%s: %d left after the armed read; want 0", engine, left)
		}
		if err := tx.QueryRowContext(ctx, read).Scan(&n); err != nil {
			t.Errorf("%s: a read of the key table once the count is spent: %v", engine, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlowSettingsRereadFault_OnEitherEngine: each engine's connection
// hands a statement's context to the faults, so that a read of the
// settings after a write of them in one request (fault.WithRequest) is
// held up while armed, and the read before the write is not.
func TestSlowSettingsRereadFault_OnEitherEngine(t *testing.T) {
	for engine, db := range engines(t) {
		ctx := fault.WithRequest(context.Background())
		if err := labdb.CreateTable(ctx, db.DB, `CREATE TABLE IF NOT EXISTS account_settings (account_id TEXT PRIMARY KEY, version INTEGER NOT NULL)`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO account_settings (account_id, version) VALUES ('acc', 1)`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		db.SlowSettingsRereads(1)
		read := func(ctx context.Context) error {
			var v int
			return db.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v)
		}
		if err := read(ctx); err != nil {
			t.Errorf("%s: a read before the request's write, armed: %v; want it at once", engine, err)
		}
		if _, err := db.ExecContext(ctx, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc'`); err != nil {
			t.Fatalf("%s: the request's write: %v", engine, err)
		}
		short, cancel := context.WithTimeout(ctx, fault.SettingsRereadDelay/5)
		err := read(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: a read after the request's write, armed: err = %v; want it held past its context's end (%v)", engine, err, context.DeadlineExceeded)
		}
		if n := db.SlowSettingsRereadsLeft(); n != 0 {
			t.Errorf("%s: %d left after the held read; want 0", engine, n)
		}
		if err := read(ctx); err != nil {
			t.Errorf("%s: a read once the count is spent: %v", engine, err)
		}
	}
}

// TestSlowCommitFault_OnEitherEngine catches an engine whose connections
// skip the slow-commit fault, one that holds a transaction that moved no
// money, and a fault that holds one that moved money with no firing left:
// the armed count must be spent by the commit of a transaction with a
// business write, held CommitDelay, and by nothing before; once it is
// spent, or the fault disarmed, such a commit goes at once. Each COMMIT
// runs in a synctest bubble (see commitInBubble).
func TestSlowCommitFault_OnEitherEngine(t *testing.T) {
	for engine, db := range engines(t) {
		db.SlowCommits(1)
		if d := commitInBubble(t, begin(t, db, "slow-commit-1", false)); d != 0 {
			t.Errorf("%s: a commit that moved no money, armed, was held %v; want it at once", engine, d)
		}
		if n := db.SlowCommitsLeft(); n != 1 {
			t.Errorf("%s: %d left after a commit that moved no money; want 1", engine, n)
		}
		if d := commitInBubble(t, begin(t, db, "slow-commit-2", true)); d != fault.CommitDelay {
			t.Errorf("%s: the armed commit was held %v; want %v", engine, d, fault.CommitDelay)
		}
		if n := db.SlowCommitsLeft(); n != 0 {
			t.Errorf("%s: %d left after the armed commit; want 0", engine, n)
		}
		if d := commitInBubble(t, begin(t, db, "slow-commit-3", true)); d != 0 {
			t.Errorf("%s: a commit that moved money once the count is spent was held %v; want it at once", engine, d)
		}
		db.SlowCommits(1)
		db.SlowCommits(0)
		if d := commitInBubble(t, begin(t, db, "slow-commit-4", true)); d != 0 {
			t.Errorf("%s: a commit that moved money once the fault is disarmed was held %v; want it at once", engine, d)
		}
		// The held-commit fault rides the same hook: never released, it
		// holds the armed commit HeldCommitMax.
		db.HoldCommits(1)
		if d := commitInBubble(t, begin(t, db, "held-commit", true)); d != fault.HeldCommitMax {
			t.Errorf("%s: the commit armed by held-commit, never released, was held %v; want %v", engine, d, fault.HeldCommitMax)
		}
		if n := db.HeldCommitsLeft(); n != 0 {
			t.Errorf("%s: %d held commits left after the armed commit; want 0", engine, n)
		}
	}
}

// TestSlowCommitFault_HoldsBeforeTheCommitOnEitherEngine catches an
// engine that holds the transaction after its COMMIT rather than before:
// while the commit is held, another connection must not see the row the
// transaction wrote (SQLite on a file, in WAL mode, where the reader
// does not wait for the writer; PostgreSQL at READ COMMITTED), and once
// the commit returns it must. The commit runs in a synctest bubble whose
// clock moves only while everything in it waits: the hold cannot end
// while the test reads, however busy the machine.
func TestSlowCommitFault_HoldsBeforeTheCommitOnEitherEngine(t *testing.T) {
	for engine, db := range fileEngines(t) {
		// The reader's connection is taken before the bubble, as the
		// transaction is begun before it: nothing the pool opens or
		// starts belongs to the bubble.
		reader, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		seen := func(t *testing.T) bool {
			var n int
			if err := reader.QueryRowContext(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = ?`, "held").Scan(&n); err != nil {
				t.Fatalf("%s: the reader: %v", engine, err)
			}
			return n == 1
		}
		tx := begin(t, db, "held", true)
		db.SlowCommits(1)
		synctest.Test(t, func(t *testing.T) {
			done := make(chan error)
			go func() { done <- tx.Commit() }()
			synctest.Wait() // the commit waits in its hold, or has returned
			if n := db.SlowCommitsLeft(); n != 0 {
				t.Errorf("%s: %d left with the commit under way; want it held", engine, n)
			}
			if seen(t) {
				t.Errorf("%s: another connection sees the row while its commit is held: the hold comes after the COMMIT, not before it with the transaction's locks", engine)
			}
			if err := <-done; err != nil {
				t.Fatalf("%s: the held commit: %v", engine, err)
			}
			if !seen(t) {
				t.Errorf("%s: another connection does not see the row once its commit has returned", engine)
			}
		})
		if err := reader.Close(); err != nil {
			t.Error(err)
		}
	}
}

// settingsSchema is the part of the settings table the settings faults
// look at.
const settingsSchema = `CREATE TABLE IF NOT EXISTS account_settings (account_id TEXT PRIMARY KEY, version INTEGER NOT NULL)`

// TestSlowSettingsCommitFault_OnEitherEngine catches an engine whose
// connections skip the slow-settings-commit fault, hold what is not a
// write of the settings, or hold one with no firing left: armed with
// three, a read of the settings goes at once and spends nothing; a write
// outside a transaction, by Exec and by Query (UPDATE … RETURNING), and
// the COMMIT of a transaction that wrote the settings are each held
// SettingsCommitDelay; once the count is spent, a write goes at once.
// Each runs in a synctest bubble, on a connection taken before it (see
// commitInBubble).
func TestSlowSettingsCommitFault_OnEitherEngine(t *testing.T) {
	ctx := context.Background()
	for engine, db := range engines(t) {
		if err := labdb.CreateTable(ctx, db.DB, settingsSchema); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO account_settings (account_id, version) VALUES ('acc', 1)`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held := func(run func() error) time.Duration {
			var d time.Duration
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				if err := run(); err != nil {
					t.Fatalf("%s: %v", engine, err)
				}
				d = time.Since(start)
			})
			return d
		}
		var v int64
		read := func() error {
			return c.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v)
		}
		exec := func() error {
			_, err := c.ExecContext(ctx, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc'`)
			return err
		}
		query := func() error {
			return c.QueryRowContext(ctx, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc' RETURNING version`).Scan(&v)
		}
		db.SlowSettingsCommits(3)
		if d := held(read); d != 0 {
			t.Errorf("%s: a read of the settings, armed, was held %v; want it at once", engine, d)
		}
		if d := held(exec); d != fault.SettingsCommitDelay {
			t.Errorf("%s: the armed write outside a transaction, by Exec, was held %v; want %v", engine, d, fault.SettingsCommitDelay)
		}
		if d := held(query); d != fault.SettingsCommitDelay || v != 3 {
			t.Errorf("%s: the armed write outside a transaction, by Query, was held %v and returned version %d; want %v and 3", engine, d, v, fault.SettingsCommitDelay)
		}
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc'`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		if d := commitInBubble(t, tx); d != fault.SettingsCommitDelay {
			t.Errorf("%s: the armed COMMIT of a transaction that wrote the settings was held %v; want %v", engine, d, fault.SettingsCommitDelay)
		}
		if n := db.SlowSettingsCommitsLeft(); n != 0 {
			t.Errorf("%s: %d left after three held writes; want 0", engine, n)
		}
		if d := held(exec); d != 0 {
			t.Errorf("%s: a write once the count is spent was held %v; want it at once", engine, d)
		}
		if err := read(); err != nil || v != 5 {
			t.Errorf("%s: version %d (err %v) after four writes; want 5: every held write committed", engine, v, err)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

// settingsOnPostgreSQL is the PostgreSQL database of engines, with the
// settings table and one account's row, 'acc' at version 1; it skips the
// test where no cluster is set.
func settingsOnPostgreSQL(t *testing.T) *labdb.DB {
	t.Helper()
	ctx := context.Background()
	db, ok := engines(t)[labdb.PostgreSQL]
	if !ok {
		t.Skip("no PostgreSQL cluster: " + labdb.EnvURL + " is not set")
	}
	if err := labdb.CreateTable(ctx, db.DB, settingsSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO account_settings (account_id, version) VALUES ('acc', 1)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSlowSettingsCommitFault_HoldsBeforeTheCommitOnPostgreSQL catches a
// PostgreSQL connection that holds a write of the settings outside a
// transaction after it has committed, rather than before, with its row
// lock: while the write is held, another connection must read the
// version as it was, and once the write returns, the one it made. (On
// SQLite a write outside a transaction has committed once it ran: the
// fault holds the process's writer, and the other writes wait for it.)
func TestSlowSettingsCommitFault_HoldsBeforeTheCommitOnPostgreSQL(t *testing.T) {
	ctx := context.Background()
	db := settingsOnPostgreSQL(t)
	writer, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	version := func(t *testing.T) int64 {
		var v int64
		if err := reader.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v); err != nil {
			t.Fatalf("the reader: %v", err)
		}
		return v
	}
	db.SlowSettingsCommits(1)
	synctest.Test(t, func(t *testing.T) {
		done := make(chan error)
		go func() {
			var v int64
			done <- writer.QueryRowContext(ctx, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc' RETURNING version`).Scan(&v)
		}()
		synctest.Wait() // the write waits in its hold, or has returned
		if n := db.SlowSettingsCommitsLeft(); n != 0 {
			t.Errorf("%d left with the write under way; want it held", n)
		}
		if v := version(t); v != 1 {
			t.Errorf("another connection reads version %d while the write is held; want 1: the hold comes after the COMMIT, not before it", v)
		}
		if err := <-done; err != nil {
			t.Fatalf("the held write: %v", err)
		}
		if v := version(t); v != 2 {
			t.Errorf("another connection reads version %d once the write has returned; want 2", v)
		}
	})
	for _, c := range []*sql.Conn{writer, reader} {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestSlowSettingsCommitFault_LeavesABeginOfItsOwnAlone catches a
// PostgreSQL connection that, armed, runs a write of the settings in a
// transaction of its own while the session is in one that a BEGIN
// statement began, which database/sql does not see: its COMMIT would end
// the stage's transaction at that write, and the ROLLBACK that follows
// would undo nothing. Rolled back, the write must be gone; it is still
// held, once it has run.
func TestSlowSettingsCommitFault_LeavesABeginOfItsOwnAlone(t *testing.T) {
	ctx := context.Background()
	db := settingsOnPostgreSQL(t)
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db.SlowSettingsCommits(1)
	for _, q := range []string{`BEGIN`, `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc'`, `ROLLBACK`} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != 1 {
		t.Errorf("version %d after a write the stage's own BEGIN began and its ROLLBACK ended; want 1: the fault committed the stage's transaction", v)
	}
	if n := db.SlowSettingsCommitsLeft(); n != 0 {
		t.Errorf("%d left after the write; want 0: held once it ran, in the stage's transaction", n)
	}
}

// begin begins a transaction on db that inserts key into
// idempotency_keys, marked as moving money if business.
func begin(t *testing.T, db *labdb.DB, key string, business bool) *sql.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := ctx
	if business {
		w = fault.MarkBusinessWrite(ctx)
	}
	if _, err := tx.ExecContext(w, `INSERT INTO idempotency_keys (key) VALUES (?)`, key); err != nil {
		t.Fatal(err)
	}
	// A read in the transaction makes the channel its context is done
	// on here, as the goroutine database/sql starts for it waits on that
	// channel outside any bubble: made by Commit in a bubble, it would be
	// the bubble's (see commitInBubble).
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = ?`, key).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the transaction reads back its own row: %d rows, err %v", n, err)
	}
	return tx
}

// commitInBubble commits tx in a synctest bubble and returns how far the
// bubble's clock moved meanwhile. That clock moves only while everything
// in the bubble waits on it: a fault's hold (fault.Hold) moves it by the
// hold exactly, and a COMMIT that waits on no timer, however long the
// engine takes, not at all. The transaction is begun outside the bubble,
// so that the connection it runs on, and whatever the pool starts, are
// not the bubble's. That leans on database/sql as it is: the channel the
// transaction's context is done on is made before the bubble (begin's
// read), and the pool's connection cleaner (SQLite's connections have an
// idle time) was started before it, when the schema was made; a cleaner
// started by a connection put back inside the bubble would keep the
// bubble from ending.
func commitInBubble(t *testing.T, tx *sql.Tx) time.Duration {
	t.Helper()
	var d time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		d = time.Since(start)
	})
	return d
}

// TestArmedFaults_CountPreparedStatementsOnceOnEitherEngine catches a
// connection that runs the faults when a statement is prepared as well
// as when it runs, or twice at a run: an armed count would be spent by
// the prepare (or by half the runs), and a run it was armed for would go
// through. Armed with two, a statement prepared once must be refused at
// its first two runs and go through at its third, whether it is run
// with Exec or with Query.
func TestArmedFaults_CountPreparedStatementsOnceOnEitherEngine(t *testing.T) {
	ctx := context.Background()
	exec := func(st *sql.Stmt, arg string) error {
		_, err := st.ExecContext(ctx, arg)
		return err
	}
	query := func(st *sql.Stmt, arg string) error {
		rows, err := st.QueryContext(ctx, arg)
		if err != nil {
			return err
		}
		return rows.Close()
	}
	for engine, db := range engines(t) {
		if err := labdb.CreateTable(ctx, db.DB, `CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL)`); err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		for _, armed := range []struct {
			arm   func(int64)
			query string
			run   func(*sql.Stmt, string) error
			want  error
		}{
			{db.FailOutboxWrites, `INSERT INTO outbox (transfer_id) VALUES (?)`, exec, fault.ErrOutboxWriteRefused},
			{db.FailKeyStore, `INSERT INTO idempotency_keys (key) VALUES (?)`, exec, fault.ErrKeyStoreUnavailable},
			{db.FailKeyStore, `SELECT key FROM idempotency_keys WHERE key = ?`, query, fault.ErrKeyStoreUnavailable},
		} {
			armed.arm(2)
			st, err := db.PrepareContext(ctx, armed.query)
			if err != nil {
				t.Fatalf("%s: prepare %q with two failures armed: %v; want it prepared, the failures kept for its runs", engine, armed.query, err)
			}
			for run := 1; run <= 3; run++ {
				err := armed.run(st, fmt.Sprintf("prepared-%s-%d", engine, run))
				switch {
				case run <= 2 && !errors.Is(err, armed.want):
					t.Errorf("%s: run %d of %q, two armed: err = %v, want %v", engine, run, armed.query, err, armed.want)
				case run == 3 && err != nil:
					t.Errorf("%s: run 3 of %q, the two armed spent: %v", engine, armed.query, err)
				}
			}
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestLockWaits_SeesAWriterWaitingOnARow: on PostgreSQL, a writer that
// waits for a row another open transaction updated is counted, and none
// once that transaction ends; on SQLite nothing is ever counted. Caught:
// a count that looks at the wrong column of pg_stat_activity, or at
// other databases' sessions only, never sees the wait the grader relies
// on to tell a retry blocked on a lock from a slow one.
func TestLockWaits_SeesAWriterWaitingOnARow(t *testing.T) {
	for engine, db := range engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			ctx := t.Context()
			if err := labdb.CreateTable(ctx, db.DB, keySchema); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_keys (key) VALUES ('k')`); err != nil {
				t.Fatal(err)
			}
			if engine == labdb.SQLite {
				if n, err := db.LockWaits(ctx); n != 0 || err != nil {
					t.Errorf("LockWaits on SQLite = %d, %v; want 0", n, err)
				}
				return
			}
			holder, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback()
			if _, err := holder.ExecContext(ctx, `UPDATE idempotency_keys SET body = NULL WHERE key = 'k'`); err != nil {
				t.Fatal(err)
			}
			waiter := make(chan error, 1)
			go func() {
				_, err := db.ExecContext(ctx, `UPDATE idempotency_keys SET body = NULL WHERE key = 'k'`)
				waiter <- err
			}()
			for {
				n, err := db.LockWaits(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if n > 1 {
					t.Fatalf("LockWaits = %d with one writer waiting; want 1", n)
				}
				select {
				case err := <-waiter:
					t.Fatalf("the second writer ended (%v) while the first transaction held the row", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			holder.Rollback()
			if err := <-waiter; err != nil {
				t.Fatal(err)
			}
			if n, err := db.LockWaits(ctx); n != 0 || err != nil {
				t.Errorf("LockWaits once the row was let go = %d, %v; want 0", n, err)
			}
		})
	}
}
