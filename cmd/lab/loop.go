package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"idemlab/studentloop"
)

// The student's loop (status, check, watch, hint, docs, diff, reset)
// shares these: where the checkout is, how a stage's checks run, and
// where a confirmation is read from. Tests replace them.
var (
	findRoot  = func() (string, error) { return studentloop.FindRoot(".") }
	newRunner = func(root string, seed, only string, solution bool) studentloop.Runner {
		return studentloop.GoTest{Root: root, Seed: seed, Only: only, Solution: solution}
	}
	stdin io.Reader = os.Stdin
	now             = time.Now
)

// loopStage is where a subcommand of the loop starts: the checkout's
// root, the progress so far, and the stage it works on.
type loopStage struct {
	root     string
	progress *studentloop.Progress
	n        int
}

// startLoop parses args into fs (flags before or after the stage number)
// and finds the checkout, the progress and the stage. done is true when
// parsing ended the command (-h, or a flag error, which err then says).
func startLoop(in *invocation) (s loopStage, done bool, err error) {
	if done, err := parseFlags(in.FlagSet, reorder(in.args)); done {
		return s, true, err
	}
	if s.root, err = findRoot(); err != nil {
		return s, true, err
	}
	if s.progress, err = studentloop.LoadProgress(s.root); err != nil {
		return s, true, err
	}
	s.n, err = stageArg(in.Args(), s.progress)
	return s, err != nil, err
}

// stageArg reads the optional stage argument; without one, the stage to
// work on is the first that does not pass yet.
func stageArg(args []string, p *studentloop.Progress) (int, error) {
	switch len(args) {
	case 0:
		return p.Current(), nil
	case 1:
		return studentloop.ParseStage(args[0])
	}
	return 0, cannotRun(errors.New("one stage number, please"))
}

// runAndRecord runs a stage's checks, handing each to each as it ends,
// and records the outcome as the stage's progress.
func runAndRecord(ctx context.Context, root string, r studentloop.Runner, n int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	o, err := r.Run(ctx, n, each)
	if err != nil {
		return o, err
	}
	p, err := studentloop.LoadProgress(root)
	if err != nil {
		return o, err
	}
	p.Record(o, now())
	o.Ahead = map[int]bool{}
	for later := n + 1; later < studentloop.Stages; later++ {
		o.Ahead[later] = p.PassesOn(later, o.Engine)
	}
	return o, p.Save(root)
}

// confirm asks a yes-or-no question on stdout and reads the answer from
// stdin: only "y" or "yes" agrees.
func confirm(stdout io.Writer, question string) bool {
	fmt.Fprintf(stdout, "%s [y/N] ", question)
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
