package sqlitedb

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pageBlob is a row's payload of six database pages: a commit that
// inserts one appends about seven pages to the log.
var pageBlob = make([]byte, 6*4096)

// openLog opens a database file with a table of blobs for the
// checkpointer's tests.
func openLog(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS b (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// commitBlobs commits n rows, one a transaction.
func commitBlobs(t *testing.T, db *DB, n int) {
	t.Helper()
	for range n {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO b (v) VALUES (?)`, pageBlob); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// growLog commits rows until enough says the log is as long as the test
// needs, and fails the test if it is not after a thousand commits (seven
// thousand pages).
func growLog(t *testing.T, db *DB, enough func(frames, pending uint32) bool) {
	t.Helper()
	for range 50 {
		if enough(logFrames(t, db)) {
			return
		}
		commitBlobs(t, db, 20)
	}
	frames, pending := logFrames(t, db)
	t.Fatalf("the log holds %d pages, %d of them waiting, after a thousand commits: not what the test needs", frames, pending)
}

// logFrames reads db's log size from its wal-index.
func logFrames(t *testing.T, db *DB) (frames, pending uint32) {
	t.Helper()
	frames, pending, err := db.ckpt.frames()
	if err != nil {
		t.Fatal(err)
	}
	return frames, pending
}

// No commit checkpoints any more: with the checkpointer stopped, the log
// grows past SQLite's default 1,000 pages and every page of it waits to be
// copied. Caught: a writer that still checkpoints at 1,000 pages (the
// crossing commit copies them all, and fewer than 1,000 wait).
func TestCheckpointer_ACommitRunsNoCheckpoint(t *testing.T) {
	db := openLog(t, filepath.Join(t.TempDir(), "lab.db"))
	db.ckpt.stop()
	commitBlobs(t, db, 2*checkpointMark/7)
	frames, pending := logFrames(t, db)
	if frames < checkpointMark || pending != frames {
		t.Fatalf("%d of the log's %d pages wait to be copied: a commit checkpointed", pending, frames)
	}
}

// A pass copies the log once checkpointMark pages wait, beside the writers
// and then for the rest with the gate held, and restarts it, the gate
// held, once it holds walLimit pages: the next commit writes at its
// beginning. Caught: a pass that never checkpoints, one that checkpoints
// below the mark, one that does not finish under the gate, and a log left
// to grow.
func TestCheckpointer_PassCopiesPastTheMarkAndRestartsPastTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db := openLog(t, path)
	k := db.ckpt
	k.stop()
	ctx := context.Background()

	commitBlobs(t, db, 10)
	k.pass(ctx)
	if _, pending := logFrames(t, db); pending == 0 || k.passive.Load() != 0 {
		t.Fatalf("below the mark: %d pages wait, %d checkpoints ran; want pages waiting and none run", pending, k.passive.Load())
	}
	growLog(t, db, func(_, pending uint32) bool { return pending >= k.mark })
	before := db.GateUse()
	k.pass(ctx)
	if _, pending := logFrames(t, db); pending != 0 || k.passive.Load() != 1 || k.gated.Load() != 1 || db.GateUse().Sub(before).Holds != 1 {
		t.Fatalf("past the mark: %d pages wait after %d checkpoints beside the writers and %d under the gate (%d holds); want 0 after 1 and 1 (1)",
			pending, k.passive.Load(), k.gated.Load(), db.GateUse().Sub(before).Holds)
	}

	growLog(t, db, func(frames, _ uint32) bool { return frames >= k.limit })
	k.pass(ctx)
	if k.restart.Load() != 1 {
		t.Fatalf("past the limit: %d RESTART checkpoints; want 1", k.restart.Load())
	}
	// Until a writer starts the log over, the wal-index still counts its
	// old pages: a pass now has nothing to do, and must not restart it
	// again (a checkpointer that did spun on a quiet database).
	holds := db.GateUse().Holds
	select {
	case <-db.gate.released: // the writes' own news
	default:
	}
	k.pass(ctx)
	if k.restart.Load() != 1 || db.GateUse().Holds != holds {
		t.Fatalf("a pass after the RESTART, no write between: %d RESTART checkpoints, %d holds of the gate; want 1 and none",
			k.restart.Load(), db.GateUse().Holds-holds)
	}
	select {
	case <-db.gate.released:
		t.Fatal("the checkpointer's own holds of the gate woke it again")
	default:
	}
	commitBlobs(t, db, 1)
	if frames, _ := logFrames(t, db); frames > 20 {
		t.Fatalf("the commit after a RESTART checkpoint left %d pages in the log: it did not start over", frames)
	}
}

// A reader that keeps its snapshot makes the RESTART give up after
// checkpointWait, and the checkpointer tries neither again, the gate held,
// until the log has grown by another limit, nor a checkpoint beside the
// writers until it has grown by another mark. Caught: a RESTART that waits
// on forever, and one tried again at every commit (every writer waiting
// checkpointWait behind it).
func TestCheckpointer_AReaderThatHoldsOnPutsTheNextTryOff(t *testing.T) {
	db := openLog(t, filepath.Join(t.TempDir(), "lab.db"))
	k := db.ckpt
	k.stop()
	ctx := context.Background()
	commitBlobs(t, db, 1)
	reader, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback()
	var n int
	if err := reader.QueryRow(`SELECT count(*) FROM b`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	growLog(t, db, func(frames, _ uint32) bool { return frames >= k.limit })
	k.pass(ctx)
	if k.failed.Load() != 1 || k.restart.Load() != 0 || k.gated.Load() != 0 {
		t.Fatalf("with a reader on an old snapshot: %d checkpoints gave up, %d restarted the log, %d ran under the gate; want 1, 0 and 0",
			k.failed.Load(), k.restart.Load(), k.gated.Load())
	}
	holds, passive := db.GateUse().Holds, k.passive.Load()
	commitBlobs(t, db, 1)
	k.pass(ctx)
	if got := db.GateUse().Holds - holds; got != 1 || k.passive.Load() != passive {
		t.Fatalf("the next commit's pass took the gate %d times besides the commit and checkpointed %d times; want it to wait for the log to grow",
			got-1, k.passive.Load()-passive)
	}
}

// Under a long stream of commits, twice what the writer's last-resort
// automatic checkpoint lets into the log, the log file never grows much
// past that. The checkpointer's passes run here between the commits, as
// it runs them when a writer leaves the gate: left to its goroutine, a
// checkpoint whose fsync a busy disk holds up for seconds lets every
// commit meanwhile into the log (it keeps the writer's own checkpoint from
// running too), and the file's size would measure the disk. Caught: a
// writer with no checkpoint at all (wal_autocheckpoint(0) and no
// checkpointer: the file takes every page written).
func TestCheckpointer_ALongStreamKeepsTheLogBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db := openLog(t, path)
	db.ckpt.stop()
	for range 2 * writerAutocheckpoint / 7 {
		commitBlobs(t, db, 1)
		db.ckpt.pass(context.Background())
	}
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	if limit := int64(32 + writerAutocheckpoint*3/2*frame); st.Size() > limit {
		k := db.ckpt
		t.Fatalf("the log grew to %d bytes, past the %d of %d pages (checkpoints: %d beside the writers, %d under the gate, %d restarts, %d failed)",
			st.Size(), limit, writerAutocheckpoint*3/2, k.passive.Load(), k.gated.Load(), k.restart.Load(), k.failed.Load())
	}
	if k := db.ckpt; k.passive.Load() == 0 {
		t.Fatalf("the checkpointer ran no checkpoint in %d commits (%d failed)", 2*writerAutocheckpoint/7, k.failed.Load())
	}
}

// Close stops the checkpointer, its goroutine returned, and empties the log
// even while another handle keeps the file open (SQLite empties it by
// itself only when the last connection closes); the other handle goes on
// writing. Caught: a Close that leaves the goroutine running, and one with
// no last checkpoint.
func TestCheckpointer_CloseStopsItAndEmptiesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, other := openLog(t, path), openLog(t, path)
	commitBlobs(t, db, 50)
	k := db.ckpt
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.done:
	default:
		t.Fatal("the checkpointer's goroutine is still running after Close")
	}
	if st, err := os.Stat(path + "-wal"); err != nil || st.Size() != 0 {
		t.Fatalf("the log after Close, another handle open: %d bytes, %v; want an empty file", st.Size(), err)
	}
	commitBlobs(t, other, 5)
	var n int
	if err := other.QueryRow(`SELECT count(*) FROM b`).Scan(&n); err != nil || n != 55 {
		t.Fatalf("rows = %d, %v; want 55", n, err)
	}
}

// Two handles on one file (a lab server restarted on it while the old one
// closes), each with its checkpointer, write at once past the mark several
// times: every row is there and the file is sound.
func TestCheckpointer_TwoHandlesOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	handles := []*DB{openLog(t, path), openLog(t, path)}
	var wg sync.WaitGroup
	for _, db := range handles {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 150 {
					if _, err := db.Exec(`INSERT INTO b (v) VALUES (?)`, pageBlob); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	checkFile(t, handles[1], 600)
	// Each checkpointer runs when a writer of its handle leaves the gate,
	// beside the other's: on a busy machine every pass of the burst may
	// have met the other's checkpoint. The log is still past the mark, so
	// the next writes, of rows the check above does not count, wake them
	// again; none checkpointing within 5 s of those is a checkpointer that
	// does not run.
	ran := func() int64 {
		var n int64
		for _, db := range handles {
			n += db.ckpt.passive.Load() + db.ckpt.restart.Load()
		}
		return n
	}
	if _, err := handles[0].Exec(`CREATE TABLE IF NOT EXISTS nudge (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for deadline, i := time.Now().Add(5*time.Second), 0; ran() == 0 && time.Now().Before(deadline); i++ {
		if _, err := handles[i%2].Exec(`INSERT INTO nudge (v) VALUES (?)`, i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ran() == 0 {
		t.Errorf("neither handle's checkpointer ran a checkpoint to its end (failed: %d and %d)", handles[0].ckpt.failed.Load(), handles[1].ckpt.failed.Load())
	}
}

// checkFile checks that db holds rows 1 to want, with no gap, and that
// SQLite finds the file sound.
func checkFile(t *testing.T, db *DB, want int) {
	t.Helper()
	var n, top int
	if err := db.QueryRow(`SELECT count(*), coalesce(max(id), 0) FROM b`).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	if n != want || top != want {
		t.Errorf("rows = %d, highest id %d; want %d and %d", n, top, want, want)
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

// killChild is the environment variable that makes this test binary the
// child of TestCheckpointer_Kill9DuringACheckpointLosesNothing: it names
// the database file.
const killChild = "IDEMLAB_SQLITEDB_KILL_CHILD"

// A process killed with SIGKILL while its checkpointer copies the log
// loses no committed row: the child commits row after row, its
// checkpointer running after nearly every commit (a mark of one page),
// and prints each row once committed, with the checkpoints run so far,
// then waits for the parent's go-ahead before the next (else it commits
// on while the parent reads, and a loaded machine lets it run rows
// ahead); once it has printed some checkpoints it is killed, its
// checkpointer still copying, and the file, opened again, holds every row
// printed, with no gap, and is sound.
func TestCheckpointer_Kill9DuringACheckpointLosesNothing(t *testing.T) {
	if path := os.Getenv(killChild); path != "" {
		killedChild(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "lab.db")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCheckpointer_Kill9DuringACheckpointLosesNothing$")
	cmd.Env = append(os.Environ(), killChild+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	goAhead, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	committed := 0
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		var row, checkpoints int
		if _, err := fmt.Sscanf(lines.Text(), "committed %d checkpoints %d", &row, &checkpoints); err != nil {
			continue
		}
		committed = row
		if checkpoints >= 20 {
			break
		}
		if _, err := goAhead.Write([]byte{'\n'}); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if committed == 0 {
		t.Fatal("the child committed nothing before it ended")
	}

	db := openLog(t, path)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM b`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != committed {
		t.Fatalf("after kill -9: %d rows; the child had committed %d, and was waiting to commit the next", n, committed)
	}
	checkFile(t, db, n)
}

// killedChild commits rows to path until it is killed.
func killedChild(t *testing.T, path string) {
	checkpointerMarks.mark = 1
	db := openLog(t, path)
	goAhead := bufio.NewReader(os.Stdin)
	for i := 1; ; i++ {
		commitBlobs(t, db, 1)
		fmt.Println("committed", strconv.Itoa(i), "checkpoints", db.ckpt.passive.Load())
		if _, err := goAhead.ReadByte(); err != nil {
			t.Fatalf("waiting for the go-ahead: %v", err)
		}
		if i > 1_000_000 {
			t.Fatal("the parent never killed this child")
		}
	}
}
