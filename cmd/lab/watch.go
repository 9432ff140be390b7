package main

import (
	"context"
	"flag"
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
	fs := flag.NewFlagSet("lab watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Duration("quiet", 100*time.Millisecond, "how long the folder must stay still after a save before the checks run")
	poll := fs.Bool("poll", false, "scan the folder instead of listening for file events (where they do not work)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab watch [N] [--poll]   (Ctrl-C to stop)")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, reorder(args)); done {
		return err
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		return err
	}
	n, err := stageArg(fs.Args(), p)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, studentloop.StageDir(n))
	fmt.Fprintf(stdout, "watching %s: every save reruns stage %d's checks (Ctrl-C to stop)\n", studentloop.StageDir(n), n)
	w := studentloop.Watch{
		Dir: dir, Stage: n, Quiet: *quiet, Polling: *poll,
		Runner: recording{root: root, r: newRunner(root, "", "", false)},
		Started: func(savedAt time.Time) {
			fmt.Fprintf(stdout, "\n── %s  running stage %d's checks…\n", now().Format("15:04:05"), n)
		},
		Done: func(o studentloop.Outcome, err error, savedAt time.Time) {
			if err != nil {
				fmt.Fprintf(stdout, "could not run the checks: %v\n", err)
				return
			}
			after := ""
			if !savedAt.IsZero() {
				after = fmt.Sprintf("  (%.2fs after the save)", now().Sub(savedAt).Seconds())
			}
			fmt.Fprintln(stdout, studentloop.FirstLine(o)+after)
			switch o.State() {
			case studentloop.Failing:
				fmt.Fprintln(stdout)
				fmt.Fprintln(stdout, o.Failed()[0].Report)
				fmt.Fprintf(stdout, "\nlab hint %d for a hint; lab check %d lists every failure\n", n, n)
			case studentloop.Passing:
				fmt.Fprintln(stdout)
				studentloop.Summarize(stdout, root, o)
			default:
				fmt.Fprintln(stdout)
				studentloop.Summarize(stdout, root, o)
			}
		},
		Fallback: func(err error) {
			fmt.Fprintf(stdout, "file events do not work here (%v): scanning the folder instead\n", err)
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

func (r recording) Run(ctx context.Context, n int) (studentloop.Outcome, error) {
	return runAndRecord(ctx, r.root, r.r, n)
}
