package main

import (
	"context"
	"fmt"
	"strings"

	"idemlab/studentloop"
)

func runStatus(ctx context.Context, in *invocation) error {
	if done, err := in.parse(); done {
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
	fmt.Fprintf(in.stdout, "%-6s %-15s %-7s %-10s %s\n", "stage", "state", "checks", "engine", "first failing check")
	for n := 0; n < studentloop.Stages; n++ {
		sp := p.Stage(n)
		checks := ""
		if sp.Total > 0 {
			checks = fmt.Sprintf("%d/%d", sp.Passed, sp.Total)
		}
		mark, first := " ", sp.FirstFailing
		switch {
		case sp.State == studentloop.Passing:
			mark = "✓"
		case sp.OnlyCouldNotRun():
			mark, first = "?", "none; could not run: "+sp.CouldNotRun[0].ID
		case sp.State == studentloop.Failing, sp.State == studentloop.DoesNotBuild:
			mark = "✗"
		}
		line := fmt.Sprintf("%s %-4d %-15s %-7s %-10s %s", mark, n, sp.State, checks, sp.Engine.Name(), first)
		fmt.Fprintln(in.stdout, strings.TrimRight(line, " "))
	}
	cur := p.Current()
	fmt.Fprintln(in.stdout)
	if p.Stage(cur).State == studentloop.Passing {
		fmt.Fprintln(in.stdout, "every stage passes.")
		return nil
	}
	lesson, _ := studentloop.LessonPath(root, cur, "")
	fmt.Fprintf(in.stdout, "next: stage %d (%s): %s, then %s; stuck? %s\n", cur, lesson,
		studentloop.Command("docs", cur), studentloop.Command("watch", cur), studentloop.Command("hint", cur))
	return nil
}
