package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/grader/targets"
	"idemlab/studentloop"
)

// TestPrinted_EveryCommandWorksAsTyped collects every command the lab
// prints for a person to type next (status's next step, check's and the
// watch's hints, hint's and diff's pointers, the hints' own text, the reproduce line of a
// failure under make stage-N, lab grade and lab audit, the dashboard line
// of lab serve) and resolves each on this checkout as a fresh clone has
// it: a make target must exist, take every variable the line gives it,
// and run a lab subcommand whose flags and stage parse; bin/lab must be
// what make lab builds; go run ./cmd/lab must name the command. A bare
// "lab hint 1", which a shell does not know, fails, and so does a target,
// variable, subcommand or flag that does not exist.
func TestPrinted_EveryCommandWorksAsTyped(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: the printed commands are make targets")
	}
	printed := printedByTheLab(t)
	var found []string
	for source, text := range printed {
		for _, line := range strings.Split(text, "\n") {
			if bare := bareLab.FindString(line); bare != "" {
				t.Errorf("%s prints %q: on a fresh clone lab is not a command (%q)", source, bare, line)
			}
			for _, cmd := range commandsIn(line) {
				found = append(found, cmd)
				if err := resolve(cmd); err != nil {
					t.Errorf("%s prints %q, which does not work as typed: %v", source, cmd, err)
				}
			}
		}
	}
	// The collection itself must see the commands it exists for.
	for _, want := range []string{"make docs N=0", "make watch N=0", "make hint N=0", "make hint N=1", "make stage-1",
		"make watch N=2", "make diff N=1", "make grade STAGE=3 SEED=42 RUN=S3.x", "make grade STAGE=3 SOLUTION=1 SEED=42 RUN=S3.x",
		"go run ./cmd/lab grade --stage 3 --url", "bin/lab dash --url", "go run ./cmd/lab dash --url",
		"make audit PKG=./audit/examples/naive SEED=42 RUN=S1.x", "make stage-2 SEED=42 RUN=S2.x", "make solution-2 SEED=42 RUN=S2.x",
		"go run ./cmd/lab replay --log datasets/day-small.plan.jsonl --stage 4 --solution --clients 8 --op op-0042",
		"go run ./cmd/lab replay --log datasets/day-small.plan.jsonl --url", "go run ./cmd/lab replay --log PLAN --url http://127.0.0.1:8080 --admin-token adm_x --core http://core_x@127.0.0.1:8079", "go run ./cmd/lab gen -o day.jsonl",
		"make reset N=3", "make reset N=3 YES=1", "make reset N=3 FROM=abc1234 YES=1", "go run ./cmd/lab docs 3",
		"make stage-7 RUN=S6.x", "go run ./cmd/lab grade --stage 7 --run S6.x", "go run ./cmd/lab replay --log day.jsonl --stage 6 --solution"} {
		if !containsPrefix(found, want) {
			t.Errorf("no printed command starts %q; found %q", want, found)
		}
	}
}

// printedByTheLab runs the loop's commands through the states a student
// meets, and renders the lines other commands print, keyed by what
// printed them.
func printedByTheLab(t *testing.T) map[string]string {
	out := map[string]string{}
	fakeLoop(t, failingS1, "no\n")
	out["status, nothing run"] = labOutput(t, "status")
	out["hint before a run"] = labOutput(t, "hint", "1")
	out["check failing"] = labOutput(t, "check", "1")
	for i := 0; i < studentloop.Tiers; i++ {
		out["hint, the last tier"] = labOutput(t, "hint", "1")
	}
	out["diff before a pass"] = labOutput(t, "diff", "1")
	out["status, stage 1 failing"] = labOutput(t, "status")
	fakeLoop(t, passingS1, "")
	out["check passing"] = labOutput(t, "check", "1")
	only := passingS1
	only.Only = "S1"
	fakeLoop(t, only, "")
	out["check, RUN only"] = labOutput(t, "check", "1")
	fakeLoop(t, studentloop.Outcome{Build: "keys.go:3:1: syntax error"}, "")
	out["check, no build"] = labOutput(t, "check", "1")
	out["watch"] = watchOutput(t)
	for n := 0; n < studentloop.Stages; n++ {
		for _, path := range []string{studentloop.HintsPath(n), studentloop.HintCodePath(n)} {
			raw, err := os.ReadFile(filepath.Join(repoRoot, path))
			if err != nil {
				t.Fatal(err)
			}
			// In markdown, a command is in backquotes: "make sure" is prose.
			spans := codeSpan.FindAllStringSubmatch(string(raw), -1)
			var code []string
			for _, m := range spans {
				code = append(code, m[1])
			}
			out["lab hint's text, "+path] = strings.Join(code, "\n")
		}
	}

	var grade gradeFlags
	grade.stage, grade.seed, grade.run = 3, 42, "S3.x"
	var lines []string
	for _, f := range []func(*gradeFlags){
		func(*gradeFlags) {},
		func(f *gradeFlags) { f.solution = true },
		func(f *gradeFlags) { f.url, f.admin = "http://127.0.0.1:8080", "adm_x" },
		func(f *gradeFlags) { f.db = ":memory:" },
	} {
		g := grade
		f(&g)
		lines = append(lines, "  reproduce "+reproduceGrade(g, "S3.x"))
	}
	out["lab grade's failures"] = strings.Join(lines, "\n")
	audit := auditFlags{pkg: "./audit/examples/naive"}
	audit.seed = 42
	out["lab audit's failures"] = "  reproduce " + reproduceAudit(audit, "S1.x")
	out["make stage-N's failures"] = "  reproduce " + gradertest.Reproduce(grader.Subject{Stage: 2, Name: "stages/stage2"}, 42, "S2.x") +
		"\n  reproduce " + gradertest.Reproduce(grader.Subject{Stage: 2, Name: "solutions/stage2"}, 42, "S2.x")

	for _, err := range []error{targets.ErrNoChild, targets.ErrNoReplicas} {
		out["a check that needs a server of its own, under --url"] += grader.WithRunHint(err, 7, "S6.x").Error() + "\n"
	}
	for _, name := range []string{"stages/stage6", "solutions/stage6", "./audit/examples/naive"} {
		out["S6's day, "+name] = grader.DayResults(targets.Subject{Stage: 6, Name: name})
	}

	var replays []string
	for _, f := range []func(*replayFlags){
		func(*replayFlags) {},
		func(f *replayFlags) { f.solution, f.clients = true, 8 },
		func(f *replayFlags) { f.url, f.admin = "http://127.0.0.1:8080", "adm_x" },
	} {
		r := replayFlags{plan: "datasets/day-small.plan.jsonl", op: "op-0042"}
		r.stage = 4
		f(&r)
		replays = append(replays, "  reproduce "+replayCommand(r))
	}
	out["lab replay --op's reproduce"] = strings.Join(replays, "\n")
	// A command's usage comes first, then the error, which says what to run.
	_, _, noLog := runLabCommand(t, "replay")
	out["lab replay without --log"] = lastLine(noLog)
	_, _, noStage := runLabCommand(t, "reset")
	out["lab reset without a stage"] = lastLine(noStage)
	out["lab reset, not agreed"] = notReset(3, "HEAD")
	out["lab reset --from, not agreed"] = notReset(3, "abc1234")
	out["lab help docs"] = labOutput(t, "help", "docs")

	var banner strings.Builder
	printBanner(&banner, serveFlags{stage: 1, db: ":memory:", admin: "adm_x"}, "stage 1", "http://127.0.0.1:8080", []string{"http://127.0.0.1:8081"})
	out["lab serve --replicas, run by go run"] = banner.String()
	var core strings.Builder
	printBanner(&core, serveFlags{stage: 9, db: ":memory:", admin: "adm_x", core: "http://core_x@127.0.0.1:8079"}, "stage 9", "http://127.0.0.1:8080", nil)
	out["lab serve --stage 9"] = core.String()
	out["lab serve --replicas, run as bin/lab"] = bannerAsBinLab(t)
	return out
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// labOutput is what lab args printed on stdout.
func labOutput(t *testing.T, args ...string) string {
	t.Helper()
	_, out, _ := runLabCommand(t, args...)
	return out
}

// watchOutput is what the watch prints for a failing stage: after its
// first run, and after a save that leaves the same check failing.
func watchOutput(t *testing.T) string {
	root := fakeLoop(t, failingS1, "")
	newRunner = func(string, string, string, bool) studentloop.Runner { return eachRunner{failingS1} }
	ctx, cancel := context.WithCancel(context.Background())
	buf := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "1", "--quiet", "5ms"}, buf, buf) }()
	waitOutput(t, buf, "lists every failure")
	os.WriteFile(filepath.Join(root, "stages/stage1/keys.go"), []byte("package stage1 // edited\n"), 0o644)
	waitOutput(t, buf, "report is above")
	cancel()
	<-done
	return buf.String()
}

// eachRunner hands every check of its outcome to each, as go test does.
type eachRunner struct{ o studentloop.Outcome }

func (r eachRunner) Run(ctx context.Context, stage int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	o := r.o
	o.Stage = stage
	for _, c := range o.Checks {
		if each != nil {
			each(c)
		}
	}
	return o, nil
}

// bannerAsBinLab is lab serve's banner when the program running is the
// checkout's bin/lab.
func bannerAsBinLab(t *testing.T) string {
	root := fakeLoop(t, passingS1, "")
	bin := filepath.Join(root, "bin", "lab")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("a built lab"), 0o755)
	old := executable
	t.Cleanup(func() { executable = old })
	executable = func() (string, error) { return bin, nil }
	var banner strings.Builder
	printBanner(&banner, serveFlags{stage: 1, db: ":memory:", admin: "adm_x"}, "stage 1", "http://127.0.0.1:8080", []string{"http://127.0.0.1:8081"})
	return banner.String()
}

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// bareLab is a lab subcommand named as if lab were a command of the
// shell: not after bin/ or ./cmd/, followed by an argument or the end.
var bareLab = regexp.MustCompile(`(?:^|[\s(])lab (?:` + subcommandNames() + `)(?: [-\w]|$)`)

func subcommandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, "|")
}

// printedCommand is a command as printed: a make target and its
// variables (the punctuation and backquotes around them left out), or the lab program and its arguments up to the end of the
// line, a semicolon, a pipe or a closing parenthesis.
var printedCommand = regexp.MustCompile(`make [a-z][a-z0-9-]*(?: [A-Z][A-Z_]*=[^\s;,)\x60]*[^\s;,).\x60])*|(?:bin/lab|go run \./cmd/lab) [^;|)\x60\n]*`)

func commandsIn(line string) []string {
	var cmds []string
	for _, c := range printedCommand.FindAllString(line, -1) {
		cmds = append(cmds, strings.TrimSpace(c))
	}
	return cmds
}

// repoRoot is the checkout the test runs in, which the printed commands
// run from.
const repoRoot = "../.."

// resolve says why cmd would not work as typed at the checkout's root,
// or nil.
func resolve(cmd string) error {
	words := strings.Fields(cmd)
	switch {
	case words[0] == "make":
		return resolveMake(words[1:])
	case words[0] == "bin/lab":
		if err := builtByMake("lab"); err != nil {
			return err
		}
		return parseLab(words[1:])
	case strings.HasPrefix(cmd, "go run ./cmd/lab "):
		if _, err := os.Stat(filepath.Join(repoRoot, "cmd", "lab", "main.go")); err != nil {
			return err
		}
		return parseLab(words[3:])
	}
	return errNotACommand
}

var errNotACommand = errors.New("not a command: make, bin/lab or go run ./cmd/lab")

// resolveMake asks make what the target would run (make -n runs
// nothing), requires each variable to change what it runs (make takes
// any variable, used or not), and the lab's arguments to parse; a target
// that runs bin/lab must build it first.
func resolveMake(args []string) error {
	out, err := makeDryRun(args)
	if err != nil {
		return err
	}
	for i, a := range args[1:] {
		without := append(append([]string{}, args[:i+1]...), args[i+2:]...)
		if other, err := makeDryRun(without); err == nil && other == out {
			return &makeError{args: args, out: a + " changes nothing the target runs:\n" + out}
		}
	}
	built := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "go build -o bin/lab ./cmd/lab") {
			built = true
			continue
		}
		if lab := labInvocation.FindStringSubmatch(line); lab != nil {
			if lab[1] == "bin/lab" && !built {
				return &makeError{args: args, out: "runs bin/lab without building it:\n" + out}
			}
			return parseLab(strings.Fields(lab[2]))
		}
	}
	return &makeError{args: args, out: "runs no lab command:\n" + out}
}

// makeDryRun is what make -n prints for args at the checkout's root.
func makeDryRun(args []string) (string, error) {
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory"}, args...)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", &makeError{args: args, out: string(out)}
	}
	return string(out), nil
}

var labInvocation = regexp.MustCompile(`(bin/lab|go run \./cmd/lab) (.*)$`)

type makeError struct {
	args []string
	out  string
}

func (e *makeError) Error() string {
	return "make " + strings.Join(e.args, " ") + ": " + strings.TrimSpace(e.out)
}

// builtByMake requires make target to build bin/lab.
func builtByMake(target string) error {
	out, err := makeDryRun([]string{target})
	if err != nil {
		return err
	}
	if !strings.Contains(out, "go build -o bin/lab ./cmd/lab") {
		return &makeError{args: []string{target}, out: "does not build bin/lab:\n" + out}
	}
	return nil
}

// loopCommands take a stage number as their one argument.
var loopCommands = map[string]bool{"check": true, "watch": true, "hint": true, "docs": true, "diff": true, "reset": true}

// parseLab parses args as lab's command line would, without running the
// command: the subcommand must exist, its flags parse, and only the
// loop's commands take an argument, a stage number.
func parseLab(args []string) error {
	if len(args) == 0 {
		return errNotACommand
	}
	var c command
	for _, k := range commands {
		if k.name == args[0] {
			c = k
		}
	}
	if c.run == nil {
		return &labError{args: args, why: "no such subcommand"}
	}
	// Asked for help, a subcommand defines its flags and stops there.
	fs := flag.NewFlagSet("lab "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := c.run(context.Background(), &invocation{FlagSet: fs, args: []string{"-h"}, stdout: io.Discard, stderr: io.Discard}); err != nil {
		return &labError{args: args, why: err.Error()}
	}
	rest := args[1:]
	if loopCommands[c.name] {
		rest = reorder(rest)
	}
	if err := fs.Parse(rest); err != nil {
		return &labError{args: args, why: err.Error()}
	}
	switch {
	case fs.NArg() == 0:
		return nil
	case loopCommands[c.name] && fs.NArg() == 1:
		if _, err := studentloop.ParseStage(fs.Arg(0)); err != nil {
			return &labError{args: args, why: err.Error()}
		}
		return nil
	}
	return &labError{args: args, why: "arguments it does not take: " + strings.Join(fs.Args(), " ")}
}

type labError struct {
	args []string
	why  string
}

func (e *labError) Error() string { return "lab " + strings.Join(e.args, " ") + ": " + e.why }

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
