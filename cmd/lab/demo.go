package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"idemlab/dashboard"
	"idemlab/dashboard/backend"
	"idemlab/grader/targets"
	"idemlab/kit/stage"
)

// demoStages are the stages the demo can run: the solutions linked into
// lab (see serve.go), and the student's own, built and run as a child
// process, never linked in.
func demoStages(root string) backend.Stages {
	s := backend.Stages{Solutions: map[int]stage.Factory{}}
	for n, f := range solutions {
		s.Solutions[n] = f
	}
	if root != "" {
		s.Build = func(ctx context.Context, n int) (string, error) {
			var out strings.Builder
			bin, err := stageBinary(ctx, root, n, &out)
			if err != nil && ctx.Err() != nil {
				return "", err
			}
			if err != nil {
				// The dashboard shows one line: the compiler's first
				// error, with its file and line.
				return "", fmt.Errorf("stages/stage%d does not compile: %s", n, firstCompileError(out.String()))
			}
			return bin, nil
		}
	}
	return s
}

// firstCompileError is the first error in the go command's output of a
// build that failed, "file.go:line:col: message", or else its first line
// that is not a package header ("# idemlab/…").
func firstCompileError(out string) string {
	first := ""
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if compilerError.MatchString(line) {
			return line
		}
		if first == "" {
			first = line
		}
	}
	if first == "" {
		return "go test -c failed with no output"
	}
	return first
}

// compilerError matches a compiler's error line: a Go file, a line, a
// message.
var compilerError = regexp.MustCompile(`^\S+\.go:\d+(:\d+)?: `)

func runDemo(ctx context.Context, in *invocation) error {
	right := in.Int("stage", demoStages("").Final(), "the stage on the right: its solution, or yours with --yours")
	yours := in.Bool("yours", false, "run your stages/stageN on the right instead of the solution")
	plain := in.Bool("plain", false, "no terminal UI: a line a second, then a summary (the default when the output is not a terminal: a pipe, a file)")
	duration := in.Duration("duration", 10*time.Second, "how long --plain runs")
	faults := in.String("faults", backend.Profiles[0].Name, "the fault profile to start with (f cycles them)")
	var db string
	defineFreshDB(in.FlagSet, &db)
	if done, err := in.parse(); done {
		return err
	}
	db, err := freshDB(db)
	if err != nil {
		return err
	}
	root, _ := targets.Root()
	stages := demoStages(root)
	stages.DB = db
	if _, ok := stages.Solutions[*right]; !ok && !*yours {
		return cannotRun(fmt.Errorf("--stage %d: this build has solutions for stages %v", *right, stages.Numbers()))
	}
	profile, err := backend.ProfileNamed(*faults)
	if err != nil {
		return cannotRun(err)
	}
	left, rightChoice := dashboard.Choice{Stage: 0}, dashboard.Choice{Stage: *right, Yours: *yours}
	if *plain || !isTerminal(in.stdout) {
		return backend.Plain(ctx, stages, left, rightChoice, profile, *duration, in.stdout)
	}

	demo := backend.NewDemo(stages)
	defer demo.Close()
	shown := demo.SetProfile(ctx, profile).Profile
	model := dashboard.NewDemo(ctx, demo, stages.Numbers(), left, rightChoice, demo.Traffic().Rate(), shown, time.Now())
	return runTUI(ctx, model, in.stdout, func(p *tea.Program) {
		if err := demo.Start(ctx, left, rightChoice, p.Send); err != nil {
			p.Send(dashboard.FatalMsg{Err: err})
		}
	})
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runTUI runs a dashboard model on the terminal. start runs beside the
// program, once it exists, to start what feeds it messages.
func runTUI(ctx context.Context, model dashboard.Model, stdout io.Writer, start func(p *tea.Program)) error {
	p := tea.NewProgram(model, tea.WithContext(ctx), tea.WithOutput(stdout))
	go start(p)
	final, err := p.Run()
	if ctx.Err() != nil {
		return nil // interrupted: a normal way to end a demo
	}
	if err != nil {
		return err
	}
	if m, ok := final.(dashboard.Model); ok {
		return m.Err()
	}
	return nil
}
