package sqlitedb

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// In WAL mode a commit appends the pages it changed to the write-ahead log
// (the file's "-wal"), and a checkpoint copies them back into the database
// file. Left to itself, SQLite runs a checkpoint inside the commit that
// takes the log past 1,000 pages (wal_autocheckpoint): that commit copies
// the pages and syncs both files while it still holds the write lock, and
// with it this process's write gate, so every writer queued behind it
// waits for the copy. The checkpointer runs checkpoints on a connection of
// its own instead, beside the writers:
//
//   - Woken each time a writer leaves the gate, it reads from the
//     wal-index (the "-shm" file) how many pages the log holds and how
//     many of them have been copied already. Once checkpointMark pages
//     wait, it runs a PASSIVE checkpoint, which takes no write lock:
//     writers go on appending while it copies (and syncs), and it copies
//     what no reader still needs.
//   - If that copied every page it found, it takes the write gate, as a
//     writer would, and runs a second PASSIVE checkpoint for the few pages
//     appended during the first. The log starts over from its beginning
//     only at a write that finds every page of it copied, and under a
//     steady stream of commits a checkpoint beside the writers never
//     leaves it so: a log that does not start over grows, and a longer
//     file costs every commit. With the gate held, no page comes in
//     between, and the next writer starts the log over (unless a reader
//     that began before still reads from it).
//   - A reader that keeps an old snapshot can still keep pages from being
//     copied and the log from starting over; the checkpointer then waits
//     for another checkpointMark pages before it tries again. Once the log
//     holds walLimit pages, the checkpointer, the gate held, runs a
//     RESTART checkpoint, which waits for the readers (up to
//     checkpointWait) so that the next writer starts the log over.
//   - The writer keeps an automatic checkpoint, at writerAutocheckpoint
//     pages, as the last resort should the checkpointer fall behind.
//   - Close stops it, then runs a last TRUNCATE checkpoint, which also
//     empties the file, while it holds the gate.
//
// A checkpoint that fails, or is killed halfway, loses nothing: the pages
// stay in the log, which SQLite reads and copies again (a restart after
// kill -9 too). An in-memory database has no log and no checkpointer.

// checkpointMark is how many pages not yet copied start a PASSIVE
// checkpoint: SQLite's own default for wal_autocheckpoint.
const checkpointMark = 1000

// walLimit is how many pages in the log make the checkpointer restart it
// under the gate.
const walLimit = 4 * checkpointMark

// writerAutocheckpoint is the writer's wal_autocheckpoint: a commit that
// takes the log past it checkpoints, under the gate, as every commit past
// 1,000 pages did before the checkpointer.
const writerAutocheckpoint = 10 * checkpointMark

// checkpointerMarks are the mark and limit a new checkpointer starts
// with: checkpointMark and walLimit, which a test lowers.
var checkpointerMarks = struct{ mark, limit uint32 }{checkpointMark, walLimit}

// checkpointWait is how long a RESTART or TRUNCATE checkpoint waits for
// the readers (the checkpointer's busy timeout), the gate held: a reader
// that keeps its snapshot longer makes it give up, and the checkpointer
// tries again once the log has grown by another walLimit pages.
const checkpointWait = 100 * time.Millisecond

// checkpointer runs a database file's checkpoints (see above).
type checkpointer struct {
	conn driver.Conn // its own connection to the file
	path string      // the database file's
	// shm is the wal-index ("-shm") file, once it has been opened: SQLite
	// makes it when the file is first read in WAL mode.
	shm  *os.File
	gate *writeGate
	// mark and limit are checkpointerMarks'.
	mark, limit uint32
	// next is the log's size, in pages, at which run restarts it.
	next uint32
	// tried is the log's size when a checkpoint beside the writers last
	// left pages a reader held back, and 0 once one has copied them all:
	// a reader that keeps pages from being copied would otherwise have it
	// try again after every commit.
	tried uint32

	cancel  context.CancelFunc // ends a wait for the gate
	stopped chan struct{}      // closed to stop run
	done    chan struct{}      // closed when run has returned
	once    sync.Once

	// passive, gated and restart count the checkpoints that ran to their
	// end (PASSIVE beside the writers, PASSIVE with the gate held, and
	// RESTART), failed those that returned an error or gave up on a
	// reader.
	passive, gated, restart, failed atomic.Int64
}

// startCheckpointer opens the checkpointer's connection through base and
// starts it. It returns the connection's error.
func startCheckpointer(base driver.Connector, path string, gate *writeGate) (*checkpointer, error) {
	conn, err := base.Connect(context.Background())
	if err != nil {
		return nil, fmt.Errorf("open the checkpointer's connection: %w", err)
	}
	wait := fmt.Sprintf("PRAGMA busy_timeout(%d)", checkpointWait.Milliseconds())
	if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), wait, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open the checkpointer's connection: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &checkpointer{conn: conn, path: path, gate: gate,
		mark: checkpointerMarks.mark, limit: checkpointerMarks.limit, next: checkpointerMarks.limit,
		cancel: cancel, stopped: make(chan struct{}), done: make(chan struct{})}
	go k.run(ctx)
	return k, nil
}

// run checkpoints when a writer has left the gate, until stop.
func (k *checkpointer) run(ctx context.Context) {
	defer close(k.done)
	for {
		select {
		case <-k.stopped:
			return
		case <-k.gate.released:
		}
		k.pass(ctx)
	}
}

// pass runs the checkpoints the log needs now, if any.
func (k *checkpointer) pass(ctx context.Context) {
	frames, pending, err := k.frames()
	if err == nil && frames < k.tried {
		k.tried = 0 // the log has started over
	}
	// A wal-index that cannot be read says nothing: checkpoint, which
	// costs little when there is little to copy.
	if err != nil || pending >= k.mark && frames >= k.tried+k.mark {
		var all bool
		all, err = walCheckpoint(k.conn, "PASSIVE")
		k.count(err, &k.passive)
		k.tried = 0
		if !all {
			k.tried = frames
		}
		// Finish under the gate only when a reader did not hold pages
		// back: one that does keeps the log from starting over anyway.
		if err == nil && all {
			if k.gate.acquire(ctx) != nil {
				return
			}
			_, err = walCheckpoint(k.conn, "PASSIVE")
			k.gate.releaseQuietly()
			k.count(err, &k.gated)
		}
		frames, _, err = k.frames()
	}
	if err == nil && frames < k.limit {
		k.next = k.limit // the log has started over since a RESTART gave up
	}
	if err != nil || frames < k.next {
		return
	}
	if k.gate.acquire(ctx) != nil {
		return
	}
	err = waitingCheckpoint(k.conn, "RESTART")
	k.gate.releaseQuietly()
	k.count(err, &k.restart)
	// Not k.limit, even when it restarted the log: the wal-index still
	// counts the old pages until the next writer starts the log over, and
	// a pass before that would restart it again, and again. Once it has
	// started over, next is back to k.limit (above).
	k.next = frames + k.limit
}

// count counts a checkpoint that ran to its end in done, and one that
// did not in k.failed.
func (k *checkpointer) count(err error, done *atomic.Int64) {
	if err != nil {
		k.failed.Add(1)
		return
	}
	done.Add(1)
}

// waitingCheckpoint runs a PASSIVE checkpoint, then one in mode, RESTART or
// TRUNCATE, which waits for the readers: the PASSIVE copies what they let
// it without waiting, and the second then has little left to copy while
// it waits.
// (Run first on a connection, a TRUNCATE checkpoint also waited out the
// whole busy timeout with no reader or writer left on the file,
// modernc.org/sqlite v1.62.0.)
func waitingCheckpoint(conn driver.Conn, mode string) error {
	if _, err := walCheckpoint(conn, "PASSIVE"); err != nil {
		return err
	}
	_, err := walCheckpoint(conn, mode)
	return err
}

// frames reads the log's size from the wal-index (walFrames), opening it
// the first time.
func (k *checkpointer) frames() (frames, pending uint32, err error) {
	if k.shm == nil {
		if k.shm, err = os.Open(k.path + "-shm"); err != nil {
			k.shm = nil
			return 0, 0, fmt.Errorf("read the wal-index: %w", err)
		}
	}
	return walFrames(k.shm)
}

// errCheckpointBusy is a checkpoint that could not finish: a reader kept
// pages it had to copy, or, for a RESTART or TRUNCATE, kept the log in
// use.
var errCheckpointBusy = errors.New("checkpoint: a reader or writer held on")

// walCheckpoint runs PRAGMA wal_checkpoint(mode) on conn, and reports
// whether it copied every page of the log (the pragma's last two columns
// agree; a PASSIVE checkpoint leaves the pages a reader still needs). It
// returns the statement's error, or errCheckpointBusy if the checkpoint
// could not finish (the pragma's busy column).
func walCheckpoint(conn driver.Conn, mode string) (all bool, err error) {
	rows, err := conn.(driver.QueryerContext).QueryContext(context.Background(), "PRAGMA wal_checkpoint("+mode+")", nil)
	if err != nil {
		return false, fmt.Errorf("checkpoint (%s): %w", mode, err)
	}
	defer rows.Close()
	row := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(row); err != nil {
		return false, fmt.Errorf("checkpoint (%s): %w", mode, err)
	}
	if busy, ok := row[0].(int64); ok && busy != 0 {
		return false, fmt.Errorf("%w (%s)", errCheckpointBusy, mode)
	}
	return row[1] == row[2], nil
}

// stop ends run and waits for it: a checkpoint under way finishes first.
// It may be called more than once.
func (k *checkpointer) stop() {
	k.once.Do(func() {
		k.cancel()
		close(k.stopped)
	})
	<-k.done
}

// close runs the last checkpoint, which empties the log unless a reader
// still holds on, and closes the connection. The caller has stopped the
// checkpointer and holds the gate. A checkpoint that gives up is no error:
// the pages stay in the log.
func (k *checkpointer) close() error {
	err := waitingCheckpoint(k.conn, "TRUNCATE")
	if errors.Is(err, errCheckpointBusy) {
		err = nil
	}
	if k.shm != nil {
		err = errors.Join(err, k.shm.Close())
	}
	return errors.Join(err, k.conn.Close())
}

// The wal-index header, as https://www.sqlite.org/walformat.html (2.1)
// lays it out in the first bytes of the "-shm" file, in the machine's byte
// order: mxFrame, the last valid page in the log, at byte 16 of the first
// of two 48-byte copies of the header; and nBackfill, how many of the
// log's pages have been copied into the database, at byte 96, the first
// field after them.
const (
	mxFrameAt   = 16
	nBackfillAt = 96
	walIndexLen = nBackfillAt + 4
)

// walFrames reads from the wal-index file shm how many pages the log holds
// and how many of them wait to be copied. A writer may be changing the
// header as it is read: the figures may be a commit old, which is all a
// decision to checkpoint needs. It returns the file's error.
func walFrames(shm io.ReaderAt) (frames, pending uint32, err error) {
	var hdr [walIndexLen]byte
	if _, err := shm.ReadAt(hdr[:], 0); err != nil {
		return 0, 0, fmt.Errorf("read the wal-index: %w", err)
	}
	frames = binary.NativeEndian.Uint32(hdr[mxFrameAt:])
	backfilled := binary.NativeEndian.Uint32(hdr[nBackfillAt:])
	if backfilled > frames {
		return frames, 0, nil
	}
	return frames, frames - backfilled, nil
}
