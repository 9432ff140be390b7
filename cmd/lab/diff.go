package main

import (
	"context"
	"fmt"
	"io"

	"idemlab/studentloop"
)

func runDiff(ctx context.Context, in *invocation) error {
	yes := in.Bool("yes", false, "do not ask: show the diff even though the stage does not pass")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, p, n := st.root, st.progress, st.n
	if sp := p.Stage(n); sp.State != studentloop.Passing && !*yes {
		fmt.Fprintf(in.stdout, "spoiler: stage %d does not pass yet (%s), and this shows the reference solution's code.\n", n, sp.State)
		fmt.Fprintf(in.stdout, "%s gives one step at a time; the lesson's exercise says what to try.\n", studentloop.Command("hint", n))
		if !confirm(in.stdout, "show the solution anyway?") {
			fmt.Fprintln(in.stdout, "not shown.")
			return nil
		}
	}
	d, err := studentloop.Diff(root, n)
	if err != nil {
		return err
	}
	if d == "" {
		fmt.Fprintf(in.stdout, "stages/stage%d is the reference solution, line for line.\n", n)
		return nil
	}
	fmt.Fprintf(in.stdout, "- lines: the reference (solutions/stage%d); + lines: yours (stages/stage%d)\n\n", n, n)
	_, err = io.WriteString(in.stdout, d)
	return err
}
