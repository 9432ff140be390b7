package main

import (
	"context"
	"fmt"
	"os"

	"idemlab/grader"
	"idemlab/studentloop"
)

func runCheck(ctx context.Context, in *invocation) error {
	seed := in.String("seed", os.Getenv("SEED"), "repeat a run: the seed a failure printed (or SEED=)")
	only := in.String("run", os.Getenv("RUN"), "run only the checks whose ID contains this (or RUN=)")
	solution := in.Bool("solution", false, "run the reference solution's checks instead of yours")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, n := st.root, st.n
	colorTimelines(in)
	r := newRunner(root, *seed, *only, *solution)
	var o studentloop.Outcome
	if *solution {
		o, err = r.Run(ctx, n, nil)
	} else {
		o, err = runAndRecord(ctx, root, r, n, nil)
	}
	if err != nil {
		return err
	}
	if *solution {
		fmt.Fprintf(in.stdout, "the reference solution of stage %d (solutions/stage%d):\n", n, n)
	}
	studentloop.Summarize(in.stdout, root, o)
	return checkExit(o)
}

// checkExit is lab check's exit status for the outcome o, as lab grade's:
// 0 when the stage passes, 2 when nothing was judged (the checks did not
// finish, or every failing one could not observe what it needs), else 1.
// The summary above it has said which, so it carries no message: one
// more line under the summary would only repeat its first word.
func checkExit(o studentloop.Outcome) error {
	switch {
	case o.State() == studentloop.Passing:
		return nil
	case o.State() == studentloop.CouldNotCheck,
		o.State() == studentloop.Failing && len(o.CouldNotRun()) == len(o.Failed()):
		return &exitCode{code: 2}
	}
	return &exitCode{code: 1}
}

// colorTimelines asks the checks' go test to draw its timelines in colour
// when they are printed to a terminal that has not asked for none
// (NO_COLOR).
func colorTimelines(in *invocation) {
	if isTerminal(in.stdout) && os.Getenv("NO_COLOR") == "" {
		os.Setenv(grader.ColorEnv, "1")
	}
}

// reorder puts flags before the stage number, so that both
// "lab check 1 --run S1.x" and "lab check --run S1.x 1" work (package
// flag stops at the first argument that is not a flag).
func reorder(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if !hasValue(a) && i+1 < len(args) && isValueFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}

func hasValue(flag string) bool {
	for _, c := range flag {
		if c == '=' {
			return true
		}
	}
	return false
}

// isValueFlag says whether a flag of the loop's commands takes a value.
func isValueFlag(flag string) bool {
	switch flag {
	case "-seed", "--seed", "-run", "--run", "-lang", "--lang", "-quiet", "--quiet", "-check", "--check", "-from", "--from", "-width", "--width":
		return true
	}
	return false
}
