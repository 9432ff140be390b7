package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"idemlab/studentloop"
)

func init() {
	register(command{name: "watch", summary: "rerun a stage's checks on every save and show the first failing one", run: runWatch})
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab watch", "[N] [--poll]   (Ctrl-C to stop)", stderr)
	quiet := fs.Duration("quiet", 100*time.Millisecond, "how long the folder must stay still after a save before the checks run")
	poll := fs.Bool("poll", false, "scan the folder instead of listening for file events (where they do not work)")
	st, done, err := startLoop(fs, args)
	if done {
		return err
	}
	root, n := st.root, st.n
	dir := filepath.Join(root, studentloop.StageDir(n))
	fmt.Fprintf(stdout, "watching %s: every save reruns stage %d's checks (Ctrl-C to stop)\n", studentloop.StageDir(n), n)
	after := func(savedAt time.Time) string {
		if savedAt.IsZero() {
			return ""
		}
		return fmt.Sprintf("  (%.2fs after the save)", now().Sub(savedAt).Seconds())
	}
	// What the check run alone printed, so that every check's run does
	// not print the same report again.
	var alone string
	var shown studentloop.Outcome
	r := newRunner(root, "", "", false)
	w := studentloop.Watch{
		Dir: dir, Stage: n, Quiet: *quiet, Polling: *poll,
		Runner: recording{root: root, r: r},
		Started: func(savedAt time.Time, first string) {
			alone, shown = first, studentloop.Outcome{}
			if first == "" {
				fmt.Fprintf(stdout, "\n── %s  running stage %d's checks…\n", now().Format("15:04:05"), n)
				return
			}
			fmt.Fprintf(stdout, "\n── %s  running %s alone, then all of stage %d's checks…\n", now().Format("15:04:05"), first, n)
		},
		AloneDone: func(o studentloop.Outcome, err error, savedAt time.Time) {
			switch {
			case err != nil:
				fmt.Fprintf(stdout, "could not run %s alone (%v); running every check…\n", alone, err)
				return
			case o.State() == studentloop.Passing:
				fmt.Fprintf(stdout, "✓ %s passes now%s; running the rest…\n", alone, after(savedAt))
			case o.State() == studentloop.Failing:
				fmt.Fprintf(stdout, "✗ %s still fails%s\n\n%s\n\nlab hint %d for a hint; the other checks are running…\n", alone, after(savedAt), o.Failed()[0].Report, n)
			case o.State() == studentloop.DoesNotBuild:
				fmt.Fprintln(stdout, studentloop.FirstLine(o)+after(savedAt))
				fmt.Fprintln(stdout)
				studentloop.Summarize(stdout, root, o)
			default:
				fmt.Fprintf(stdout, "? %s alone did not finish; running every check…\n", alone)
				return
			}
			shown = o
		},
		Done: func(o studentloop.Outcome, err error, savedAt time.Time) {
			if err != nil {
				fmt.Fprintf(stdout, "could not run the checks: %v\n", err)
				return
			}
			fmt.Fprintln(stdout, studentloop.FirstLine(o)+after(savedAt))
			switch {
			case o.State() == studentloop.Failing && shown.State() == studentloop.Failing && o.FirstFailing() == alone:
				fmt.Fprintf(stdout, "%s's report is above; lab check %d lists every failure\n", alone, n)
			case o.State() == studentloop.DoesNotBuild && shown.Build == o.Build:
				fmt.Fprintln(stdout, "the compiler's message is above")
			case o.State() == studentloop.Failing:
				fmt.Fprintln(stdout)
				fmt.Fprintln(stdout, o.Failed()[0].Report)
				fmt.Fprintf(stdout, "\nlab hint %d for a hint; lab check %d lists every failure\n", n, n)
			default:
				fmt.Fprintln(stdout)
				studentloop.Summarize(stdout, root, o)
			}
		},
		Fallback: func(err error) {
			fmt.Fprintf(stdout, "file events do not work here (%v): scanning the folder instead\n", err)
		},
	}
	// Running the first failing check alone is for runners that can.
	if c, ok := r.(studentloop.CheckRunner); ok {
		w.Alone = c
	}
	if err := w.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// recording is a runner that records every outcome as the stage's
// progress, so that lab status follows the watch.
type recording struct {
	root string
	r    studentloop.Runner
}

func (r recording) Run(ctx context.Context, n int) (studentloop.Outcome, error) {
	return runAndRecord(ctx, r.root, r.r, n)
}
