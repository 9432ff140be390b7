package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"idemlab/studentloop"
)

func init() {
	register(command{name: "diff", summary: "your stage against the reference solution (a spoiler: asks first until the stage passes)", run: runDiff})
}

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	yes := fs.Bool("yes", false, "do not ask: show the diff even though the stage does not pass")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab diff [N] [--yes]")
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
	if sp := p.Stage(n); sp.State != studentloop.Passing && !*yes {
		fmt.Fprintf(stdout, "spoiler: stage %d does not pass yet (%s), and this shows the reference solution's code.\n", n, sp.State)
		fmt.Fprintf(stdout, "lab hint %d gives one step at a time; the lesson's exercise says what to try.\n", n)
		if !confirm(stdout, "show the solution anyway?") {
			fmt.Fprintln(stdout, "not shown.")
			return nil
		}
	}
	d, err := studentloop.Diff(root, n)
	if err != nil {
		return err
	}
	if d == "" {
		fmt.Fprintf(stdout, "stages/stage%d is the reference solution, line for line.\n", n)
		return nil
	}
	fmt.Fprintf(stdout, "- lines: the reference (solutions/stage%d); + lines: yours (stages/stage%d)\n\n", n, n)
	_, err = io.WriteString(stdout, d)
	return err
}
