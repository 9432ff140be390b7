// Command lab is idemlab's one command line: it serves a stage, generates
// and replays days of traffic, tallies access logs, grades servers, audits
// idempotency middlewares and runs the classroom demo. Each subcommand
// lives in its own file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
)

// command is one subcommand.
type command struct {
	name string
	// usage is what its usage line says after "lab name": the arguments.
	usage   string
	summary string
	// run defines the subcommand's flags on its invocation, parses the
	// arguments into them, and runs.
	run func(ctx context.Context, in *invocation) error
}

// invocation is one run of a command: a flag set named for it (lab hint),
// the arguments after its name, and where it writes, passed in so that
// tests can read it. The flag set's errors and usage go to stderr.
type invocation struct {
	*flag.FlagSet
	args           []string
	stdout, stderr io.Writer
}

// commands are lab's subcommands, in the order its usage lists them;
// each one's run function is in the file named for it.
var commands = []command{
	{name: "audit", usage: "--pkg PATH [--seed S] [--run ID] [--results DIR]   (docs/audit.md)", summary: "run the checks against any net/http idempotency middleware, through an adapter package", run: runAudit},
	{name: "check", usage: "[N] [--seed S] [--run ID] [--solution]", summary: "run a stage's checks with a summary, and record the progress (make stage-N)", run: runCheck},
	{name: "conform", usage: "--url URL --profile FILE [--json] [--junit FILE] [--seed S] [--max-operations N] [--timeout D]   (docs/conform.md)", summary: "attack any HTTP API that takes an Idempotency-Key, through its public API, with the course's scenarios", run: runConform},
	{name: "dash", usage: "--url http://127.0.0.1:8080[,http://127.0.0.1:8081…] --token adm_…", summary: "watch a running lab server live (your make serve)", run: runDash},
	{name: "datasets", usage: "[--sizes N,N…] [--shipped]", summary: "regenerate the day datasets: plans, naive access logs, answer keys", run: runDatasets},
	{name: "demo", usage: "[--stage N] [--yours] [--faults PROFILE] [--db :memory:|URL] [--plain [--duration 10s]]", summary: "the classroom demo: the naive server and a safe one, side by side", run: runDemo},
	{name: "diff", usage: "[N] [--yes]", summary: "your stage against the reference solution (a spoiler: asks first until the stage passes)", run: runDiff},
	{name: "docs", usage: "[N] [--lang en|ja] [--plain]   (go run ./cmd/lab docs 3 | less -R to page)", summary: "a stage's lesson in the terminal", run: runDocs},
	{name: "gen", usage: "[--seed S] [--ops N] [-o FILE] [flags]", summary: "generate a day plan (JSONL): operations and what will happen to them", run: runGen},
	{name: "grade", usage: "--stage N [--solution | --url URL --admin-token T] [--db :memory:|URL] [--seed S] [--run ID] [--results DIR]", summary: "run the checks of a stage against your code, a solution, or a running server", run: runGrade},
	{name: "hint", usage: "[N] [--check ID]", summary: "a hint for a stage's first failing check: one step more each time you ask", run: runHint},
	{name: "replay", usage: "--log PLAN [--stage N] [--solution | --url URL --admin-token T [--core URL]] [--db :memory:|URL] [--rate OPS] [--access-log FILE] [--answer FILE] [--results DIR]", summary: "drive a day plan through the fault transport and reconcile the money", run: runReplay},
	{name: "reset", usage: "N [--yes] [--from COMMIT]", summary: "put a stage's untouched scaffold back (your files are kept in .idemlab/backup)", run: runReset},
	{name: "scoreboard", usage: "[--log PLAN | --seed S --ops N] [--mine] [--json]", summary: "the same day replayed against every stage: one row per stage, one column per finding", run: runScoreboard},
	{name: "serve", usage: "[--stage N] [--solution] [--db FILE|URL] [--replicas N] [--addr HOST:PORT] [--admin-token T] [--access-log FILE] [--public]", summary: "serve a stage (yours, or the reference solution) as a lab server", run: runServe},
	{name: "status", usage: "", summary: "where each stage stands: not started, failing (and on which check), passing", run: runStatus},
	{name: "tally", usage: "--log FILE [--student] [--json]", summary: "count the double transfers in a server's access log (stage 0's exercise)", run: runTally},
	{name: "watch", usage: "[N] [--poll]   (Ctrl-C to stop)", summary: "rerun a stage's checks on every save and show the first failing one", run: runWatch},
}

// exitCode lets a subcommand choose its exit status (lab grade: 1 invalid,
// 2 could not run) while still reporting an error.
type exitCode struct {
	code int
	err  error
}

// Error is err's text; an exitCode without err is a status whose reason
// the command has already printed, and run prints nothing more.
func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// cannotRun is err with exit status 2: the command could not run (a
// command line it cannot run, a stage that does not build, a check that
// could not observe what it needs).
func cannotRun(err error) error { return &exitCode{code: 2, err: err} }

// executable is the path of the running program; tests replace it.
var executable = os.Executable

// program is how a command printed for a person names this program (see
// grader.Program): bin/lab when that is the checkout's binary
// running, go run ./cmd/lab otherwise.
func program() string {
	root, _ := findRoot()
	exe, _ := executable()
	return grader.ProgramAt(root, exe)
}

func main() {
	if targets.IsCoreChild() {
		// lab serve --stage 9 runs this binary again to serve the core
		// ledger as a process of its own.
		os.Exit(targets.ServeCoreChild())
	}
	if targets.IsChild() {
		// lab serve --solution --replicas N runs this binary again, once
		// per replica, to serve a reference solution.
		os.Exit(targets.ServeChild(solutionSubjects()...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if root, err := findRoot(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if dir := rootFrom(root, wd); dir != "" {
				os.Setenv(labdb.EnvRootFrom, dir)
			}
		}
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// rootFrom is the way from wd to the checkout's root when wd is a folder
// under it ("../.." from stages/stage3), so that the commands lab prints
// to be typed, written for the root, can say to go there first
// (labdb.FromRoot); "" at the root, or outside it.
func rootFrom(root, wd string) string {
	rel, err := filepath.Rel(wd, root)
	if err != nil || strings.Trim(filepath.ToSlash(rel), "./") != "" || rel == "." {
		// At the root, or not under it.
		return ""
	}
	return filepath.ToSlash(rel)
}

// run runs the command line args and returns the exit status: 0, 1 when
// a command fails, 2 for a command line it cannot run (bare lab
// included, which prints the usage).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		return help(ctx, args[1:], stdout, stderr)
	}
	c, ok := lookup(args[0], stderr)
	if !ok {
		return 2
	}
	if err := c.invoke(ctx, args[1:], stdout, stderr); err != nil {
		ec, ok := err.(*exitCode)
		if !ok || ec.err != nil {
			fmt.Fprintf(stderr, "lab %s: %v\n", c.name, err)
		}
		if ok {
			return ec.code
		}
		return 1
	}
	return 0
}

// help prints the usage of the command args name (lab help serve), or
// the list of commands if they name none.
func help(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	c, ok := lookup(args[0], stderr)
	if !ok {
		return 2
	}
	// Every command prints its usage, to the writer it reports errors to,
	// when its flags are -h; asked for, the usage goes to stdout.
	if err := c.invoke(ctx, []string{"-h"}, stdout, stdout); err != nil {
		fmt.Fprintf(stderr, "lab %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// lookup finds the command name, or says there is none, with the list of
// commands, on stderr.
func lookup(name string, stderr io.Writer) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	fmt.Fprintf(stderr, "lab: unknown command %q\n\n", name)
	usage(stderr)
	return command{}, false
}

// usage lists the commands, their summaries in one column past the
// longest name.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lab <command> [flags]   (lab help <command>, or lab <command> -h, for its flags)")
	fmt.Fprintln(w)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
}

// invoke runs c with args and a flag set named for it (lab hint), whose
// errors, and usage ("usage: lab name" and c.usage, then the flags), go
// to stderr.
func (c command) invoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, strings.TrimSpace("usage: lab "+c.name+" "+c.usage))
		fs.PrintDefaults()
	}
	return c.run(ctx, &invocation{FlagSet: fs, args: args, stdout: stdout, stderr: stderr})
}

// parse parses the arguments into the flags (see parseFlags).
func (in *invocation) parse() (done bool, err error) { return parseFlags(in.FlagSet, in.args) }

// parseFlags parses a subcommand's flags. It reports done when the
// command must end here: after -h, which printed the usage (no error),
// or after a bad flag (an error with status 2).
func parseFlags(fs *flag.FlagSet, args []string) (done bool, err error) {
	err = fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return true, nil
	case err != nil:
		return true, cannotRun(err)
	}
	return false, nil
}
