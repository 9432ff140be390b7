package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"idemlab/studentloop"
)

func runWatch(ctx context.Context, in *invocation) error {
	quiet := in.Duration("quiet", 50*time.Millisecond, "how long the folder must stay still after a save before the checks run")
	poll := in.Bool("poll", false, "scan the folder instead of listening for file events (where they do not work)")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, n := st.root, st.n
	hint, check := studentloop.Command("hint", n), studentloop.Command("check", n)
	dir := filepath.Join(root, studentloop.StageDir(n))
	fmt.Fprintf(in.stdout, "watching %s: every save reruns stage %d's checks (Ctrl-C to stop)\n", studentloop.StageDir(n), n)
	after := func(savedAt time.Time) string {
		if savedAt.IsZero() {
			return ""
		}
		return fmt.Sprintf("  (%.2fs after the save)", now().Sub(savedAt).Seconds())
	}
	// The check the student is working on (the first failing one of the
	// run before), and whether its report was printed as it ended, so
	// that the end of the run does not print it again.
	var working string
	var shown bool
	colorTimelines(in)
	w := studentloop.Watch{
		Dir: dir, Stage: n, Quiet: *quiet, Polling: *poll,
		Runner: recording{root: root, r: newRunner(root, "", "", false)},
		Started: func(savedAt time.Time, first string) {
			working, shown = first, false
			if first == "" {
				fmt.Fprintf(in.stdout, "\n── %s  running stage %d's checks…\n", now().Format("15:04:05"), n)
				return
			}
			fmt.Fprintf(in.stdout, "\n── %s  running stage %d's checks, %s first…\n", now().Format("15:04:05"), n, first)
		},
		Checked: func(c studentloop.CheckResult, savedAt time.Time) {
			switch {
			case c.ID != working:
			case c.Passed:
				fmt.Fprintf(in.stdout, "✓ %s passes now%s; the rest are running…\n", c.ID, after(savedAt))
			case c.CouldNotRun():
				fmt.Fprintf(in.stdout, "? %s could not run%s: it says nothing of your server\n\n%s\n\nthe other checks are running…\n", c.ID, after(savedAt), c.Report)
				shown = true
			default:
				fmt.Fprintf(in.stdout, "✗ %s still fails%s\n\n%s\n\n%s for a hint; the other checks are running…\n", c.ID, after(savedAt), c.Report, hint)
				shown = true
			}
		},
		Done: func(o studentloop.Outcome, err error, savedAt time.Time) {
			if err != nil {
				fmt.Fprintf(in.stdout, "could not run the checks: %v\n", err)
				return
			}
			fmt.Fprintln(in.stdout, studentloop.FirstLine(o)+after(savedAt))
			switch {
			case o.State() == studentloop.Failing && shown && o.FirstFailing() == working:
				fmt.Fprintf(in.stdout, "%s's report is above; %s lists every failure\n", working, check)
			case o.FirstFailing() != "":
				fmt.Fprintln(in.stdout)
				fmt.Fprintln(in.stdout, o.First().Report)
				fmt.Fprintf(in.stdout, "\n%s for a hint; %s lists every failure\n", hint, check)
			default:
				fmt.Fprintln(in.stdout)
				studentloop.Summarize(in.stdout, root, o)
			}
		},
		Unchanged: func(time.Time) {
			fmt.Fprintf(in.stdout, "── %s  saved, but the Go files are as the last run read them: nothing to rerun\n", now().Format("15:04:05"))
		},
		Fallback: func(err error) {
			fmt.Fprintf(in.stdout, "file events do not work here (%v): scanning the folder instead\n", err)
		},
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

func (r recording) Run(ctx context.Context, n int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	return runAndRecord(ctx, r.root, r.r, n, each)
}
