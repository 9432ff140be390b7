package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"idemlab/studentloop"
)

func runStatus(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	if done, err := parseFlags(fs, args); done {
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
	fmt.Fprintf(stdout, "%-6s %-15s %-7s %s\n", "stage", "state", "checks", "first failing check")
	for n := 0; n < studentloop.Stages; n++ {
		sp := p.Stage(n)
		checks := ""
		if sp.Total > 0 {
			checks = fmt.Sprintf("%d/%d", sp.Passed, sp.Total)
		}
		mark := " "
		switch sp.State {
		case studentloop.Passing:
			mark = "✓"
		case studentloop.Failing, studentloop.DoesNotBuild:
			mark = "✗"
		}
		fmt.Fprintf(stdout, "%s %-4d %-15s %-7s %s\n", mark, n, sp.State, checks, sp.FirstFailing)
	}
	cur := p.Current()
	fmt.Fprintln(stdout)
	if p.Stage(cur).State == studentloop.Passing {
		fmt.Fprintln(stdout, "every stage passes.")
		return nil
	}
	lesson, _ := studentloop.LessonPath(root, cur, "")
	fmt.Fprintf(stdout, "next: stage %d (%s): lab docs %d, then lab watch %d; stuck? lab hint %d\n", cur, lesson, cur, cur, cur)
	return nil
}
