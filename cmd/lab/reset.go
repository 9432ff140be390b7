package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"idemlab/studentloop"
)

func runReset(ctx context.Context, in *invocation) error {
	yes := in.Bool("yes", false, "do not ask for confirmation")
	from := in.String("from", "HEAD", "the git commit whose scaffold to put back (if you committed your own work, the commit before it)")
	if done, err := parseFlags(in.FlagSet, reorder(in.args)); done {
		return err
	}
	if in.NArg() != 1 {
		in.Usage()
		return cannotRun(fmt.Errorf("which stage? (%s puts stage 3's back)", studentloop.Command("reset", 3)))
	}
	n, err := studentloop.ParseStage(in.Arg(0))
	if err != nil {
		return err
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	scaffold, err := studentloop.Scaffold(root, n, *from)
	if err != nil {
		return err
	}
	changed, err := studentloop.Changed(root, n, scaffold)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		fmt.Fprintf(in.stdout, "%s is the scaffold of %s already: nothing to reset.\n", studentloop.StageDir(n), *from)
		return nil
	}
	sort.Strings(changed)
	fmt.Fprintf(in.stdout, "%s: these files differ from the scaffold of %s: %s\n", studentloop.StageDir(n), *from, strings.Join(changed, ", "))
	if !*yes && !confirm(in.stdout, "put the scaffold back (your files go to a backup folder first)?") {
		fmt.Fprintln(in.stdout, notReset(n, *from))
		return nil
	}
	backup, err := studentloop.Reset(root, n, scaffold, now())
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "stage %d is the untouched scaffold again; your files are in %s\n", n, backup)
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		return err
	}
	delete(p.Stages, fmt.Sprint(n))
	return p.Save(root)
}

// notReset is what reset says when the student did not agree (or make
// gave it no terminal to answer on): how to reset without the question,
// from the same commit (from, HEAD unless --from named another).
func notReset(n int, from string) string {
	again := studentloop.Command("reset", n)
	if from != "HEAD" {
		again += " FROM=" + from
	}
	return fmt.Sprintf("nothing changed (%s YES=1 puts it back without asking).", again)
}
