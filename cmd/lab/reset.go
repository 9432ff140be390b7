package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"idemlab/studentloop"
)

func runReset(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	from := fs.String("from", "HEAD", "the git commit whose scaffold to put back (if you committed your own work, the commit before it)")
	if done, err := parseFlags(fs, reorder(args)); done {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return cannotRun(fmt.Errorf("which stage? (lab reset N)"))
	}
	n, err := studentloop.ParseStage(fs.Arg(0))
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
		fmt.Fprintf(stdout, "%s is the scaffold of %s already: nothing to reset.\n", studentloop.StageDir(n), *from)
		return nil
	}
	sort.Strings(changed)
	fmt.Fprintf(stdout, "%s: these files differ from the scaffold of %s: %s\n", studentloop.StageDir(n), *from, strings.Join(changed, ", "))
	if !*yes && !confirm(stdout, "put the scaffold back (your files go to a backup folder first)?") {
		fmt.Fprintln(stdout, "nothing changed.")
		return nil
	}
	backup, err := studentloop.Reset(root, n, scaffold, now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stage %d is the untouched scaffold again; your files are in %s\n", n, backup)
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		return err
	}
	delete(p.Stages, fmt.Sprint(n))
	return p.Save(root)
}
