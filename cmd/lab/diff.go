package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"idemlab/studentloop"
)

func runDiff(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	yes := fs.Bool("yes", false, "do not ask: show the diff even though the stage does not pass")
	st, done, err := startLoop(fs, args)
	if done {
		return err
	}
	root, p, n := st.root, st.progress, st.n
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
