package studentloop

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch reruns a stage's checks every time a Go file of its folder is
// saved. Saves that come close together (an editor writes a file in
// several steps, a "save all" writes several files) make one run; and
// file events that leave the Go files as the last run read them (the
// rest of a save that arrived late, a save without an edit) make none.
type Watch struct {
	// Dir is the folder watched: the stage's.
	Dir    string
	Stage  int
	Runner Runner
	// Quiet is how long the folder must stay still after a save before
	// the checks run again (the debounce).
	Quiet time.Duration
	// Poll is how often the folder is scanned when file events do not
	// work (some network and container file systems); Polling forces it.
	Poll    time.Duration
	Polling bool
	// Started is called as a run begins, with the time of the save that
	// caused it (zero for the first run) and the check that failed first
	// in the run before ("" when there is none): the one the student is
	// working on.
	Started func(savedAt time.Time, first string)
	// Checked is called with each check as it ends, before the run does,
	// so that the check the student is working on is answered without
	// waiting for the slowest.
	Checked func(c CheckResult, savedAt time.Time)
	// Done is called with each run's outcome of every check, or its
	// error: the outcome the stage's progress is made of.
	Done func(o Outcome, err error, savedAt time.Time)
	// Fallback is called once if file events do not work and the watch
	// polls instead, with the reason.
	Fallback func(err error)
	// Unchanged is called, with the save's time, for file events after
	// which the Go files are what the last run read: no run follows.
	Unchanged func(savedAt time.Time)
}

// Run runs the checks once, then again after every save, until ctx ends.
// It returns ctx's error, or an error if the folder cannot be watched at
// all.
func (w Watch) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	saves := make(chan time.Time)
	if err := w.startWatching(ctx, saves); err != nil {
		return err
	}
	runs := make(chan time.Time, 1)
	go debounce(ctx, saves, runs, w.Quiet, time.After)
	return w.serve(ctx, runs)
}

// serve runs the checks once, then again for every save on runs that
// changed the Go files since the run before, until ctx ends, and returns
// ctx's error.
//
// The debounce alone cannot make one save one run: an editor's save is
// several file events, and on a busy machine the last of them can come
// after the quiet time, when the checks already run on the saved file.
// What the files hold can: a run starts only when they differ from what
// the run before read.
func (w Watch) serve(ctx context.Context, runs <-chan time.Time) error {
	read := contents(w.Dir)
	first := w.runOnce(ctx, time.Time{}, "")
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case savedAt := <-runs:
			now := contents(w.Dir)
			if now == read {
				if w.Unchanged != nil {
					w.Unchanged(savedAt)
				}
				continue
			}
			read = now
			first = w.runOnce(ctx, savedAt, first)
		}
	}
}

// contents is a digest of the Go files of dir, their names and bytes:
// equal digests, the same files. A file that cannot be read counts as
// absent, so that its return is a change.
func contents(dir string) [sha256.Size]byte {
	h := sha256.New()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !isSource(e.Name()) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(raw))
		h.Write(raw)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// runOnce runs every check and returns the one that fails first now, or
// first, the one that failed first before, if this run could not say (an
// error, or a stage that does not build: a typo fixed, the check the
// student was working on is still the one to answer first) or first
// could not run (it says nothing of the server, as Progress.Record has it).
func (w Watch) runOnce(ctx context.Context, savedAt time.Time, first string) string {
	if w.Started != nil {
		w.Started(savedAt, first)
	}
	var each func(CheckResult)
	if w.Checked != nil {
		each = func(c CheckResult) { w.Checked(c, savedAt) }
	}
	o, err := w.Runner.Run(ctx, w.Stage, each)
	if ctx.Err() != nil {
		return first
	}
	if w.Done != nil {
		w.Done(o, err, savedAt)
	}
	if err != nil || o.State() == DoesNotBuild {
		return first
	}
	if f := o.FirstFailing(); f != "" || !slices.ContainsFunc(o.CouldNotRun(), func(c CheckResult) bool { return c.ID == first }) {
		return f
	}
	return first
}

// startWatching sends the time of every save in w.Dir on saves: from file
// events, or from scanning the folder when they do not work.
func (w Watch) startWatching(ctx context.Context, saves chan<- time.Time) error {
	if _, err := os.Stat(w.Dir); err != nil {
		return err
	}
	if !w.Polling {
		fw, err := fsnotify.NewWatcher()
		if err == nil {
			if err = fw.Add(w.Dir); err == nil {
				go forwardEvents(ctx, fw, saves)
				return nil
			}
			fw.Close()
		}
		if w.Fallback != nil {
			w.Fallback(err)
		}
	}
	poll := w.Poll
	if poll <= 0 {
		poll = 300 * time.Millisecond
	}
	go pollFolder(ctx, w.Dir, scan(w.Dir), poll, saves)
	return nil
}

// isSource says whether a file event concerns a Go file: editors also
// write swap and backup files beside the one they save.
func isSource(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".go") && !strings.HasPrefix(base, ".")
}

func forwardEvents(ctx context.Context, fw *fsnotify.Watcher, saves chan<- time.Time) {
	defer fw.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if !isSource(ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			select {
			case saves <- time.Now():
			case <-ctx.Done():
				return
			}
		case _, ok := <-fw.Errors:
			if !ok {
				return
			}
		}
	}
}

// snapshot is what polling compares: each Go file's size and time.
type snapshot map[string][2]int64

func scan(dir string) snapshot {
	s := snapshot{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s
	}
	for _, e := range entries {
		if !isSource(e.Name()) {
			continue
		}
		if info, err := e.Info(); err == nil {
			s[e.Name()] = [2]int64{info.Size(), info.ModTime().UnixNano()}
		}
	}
	return s
}

func (s snapshot) equal(t snapshot) bool {
	if len(s) != len(t) {
		return false
	}
	for k, v := range s {
		if t[k] != v {
			return false
		}
	}
	return true
}

// pollFolder scans dir every so often and sends the time of every change
// from last, the folder as it was when the watch began.
func pollFolder(ctx context.Context, dir string, last snapshot, every time.Duration, saves chan<- time.Time) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			now := scan(dir)
			if now.equal(last) {
				continue
			}
			last = now
			select {
			case saves <- time.Now():
			case <-ctx.Done():
				return
			}
		}
	}
}

// debounce passes a save on to runs once no other save came for quiet,
// with the time of the first save of the burst. A run already waiting in
// runs absorbs the next (runs has room for one).
func debounce(ctx context.Context, saves <-chan time.Time, runs chan<- time.Time, quiet time.Duration, after func(time.Duration) <-chan time.Time) {
	var fire <-chan time.Time
	var first time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-saves:
			if fire == nil {
				first = at
			}
			fire = after(quiet)
		case <-fire:
			fire = nil
			select {
			case runs <- first:
			default:
			}
		}
	}
}
