package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
)

type gradeFlags struct {
	serverFlags
	runFlags
}

// runFlags are the flags of a run of the checks, lab grade's and lab
// audit's.
type runFlags struct {
	seed    uint64
	run     string
	results string
}

// register defines the flags on fs.
func (f *runFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&f.seed, "seed", 0, "the run's seed (default: a fresh one, printed)")
	fs.StringVar(&f.run, "run", "", "run only the checks whose ID contains this")
	fs.StringVar(&f.results, "results", "", "write results.json and history.jsonl to this folder")
}

func runGrade(ctx context.Context, in *invocation) error {
	var f gradeFlags
	f.define(in.FlagSet, "run the checks of stages 0..N", "grade")
	f.register(in.FlagSet)
	if done, err := in.parse(); done {
		return err
	}
	if err := checkStage(f.stage, f.solution); err != nil {
		return err
	}
	if f.url != "" && f.admin == "" {
		return cannotRun(errors.New("--url needs --admin-token: the checks reset the server through /lab"))
	}
	db, err := f.freshDB()
	if err != nil {
		return err
	}
	subject, start, err := gradeTarget(ctx, f, db, in.stderr)
	if err != nil {
		return err
	}
	checks, err := f.checks(subject)
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "lab grade: %s, the checks of stages 0..%d (%d), seed %d\n", subject.Name, f.stage, len(checks), f.seed)
	// A running server is one server: its checks take turns. Child
	// processes are each check's own, so a few run at once.
	parallel := 4
	if f.url != "" {
		parallel = 1
	}
	results := runChecks(ctx, subject, checks, f.seed, start, parallel, f.results != "", in.stdout)
	return gradeReport(f, results, in.stdout)
}

// checks returns the checks of subject whose ID contains --run, or an
// error with exit status 2 if none does, and draws the run's seed unless
// --seed gave one.
func (f *runFlags) checks(subject grader.Subject) ([]grader.Check, error) {
	var checks []grader.Check
	for _, c := range grader.For(subject) {
		if strings.Contains(c.ID, f.run) {
			checks = append(checks, c)
		}
	}
	if len(checks) == 0 {
		return nil, cannotRun(fmt.Errorf("--run %q matches no check of stage %d", f.run, subject.Stage))
	}
	if f.seed == 0 {
		seed, err := grader.RunSeed()
		if err != nil {
			return nil, cannotRun(err)
		}
		f.seed = seed
	}
	return checks, nil
}

// gradeTarget says what is graded and how each check gets a server: the
// running one at --url, or a fresh child process of the stage's test
// binary, which the crash checks may kill, on a fresh database on db
// (see freshDB).
func gradeTarget(ctx context.Context, f gradeFlags, db string, stderr io.Writer) (grader.Subject, targets.Start, error) {
	if f.url != "" {
		return grader.Subject{Stage: f.stage, Name: f.url}, targets.Running(f.url, f.admin), nil
	}
	root, err := targets.Root()
	if err != nil {
		return grader.Subject{}, nil, err
	}
	dir := fmt.Sprintf("stages/stage%d", f.stage)
	if f.solution {
		dir = fmt.Sprintf("solutions/stage%d", f.stage)
	}
	compiling(stderr, dir)
	bin, err := testBinary(ctx, root, dir, stderr)
	if err != nil {
		return grader.Subject{}, nil, err
	}
	return grader.Subject{Stage: f.stage, Name: dir}, targets.ChildProcess(bin, db), nil
}

// runChecks runs the checks, parallel at a time, printing a line as each
// one ends, and returns the results in catalogue order; with record, each
// keeps its history whatever it found, for history.jsonl.
func runChecks(ctx context.Context, subject grader.Subject, checks []grader.Check, seed uint64, start targets.Start, parallel int, record bool, stdout io.Writer) []grader.Result {
	runCheck := grader.RunCheck
	if record {
		runCheck = grader.RunCheckRecorded
	}
	results := make([]grader.Result, len(checks))
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := runCheck(ctx, subject, c, seed, start)
			results[i] = r
			mu.Lock()
			line := fmt.Sprintf("  %-4s %-36s %v", verdictWord(r), c.ID, r.Duration.Round(1e6))
			if h := r.Harm(); h != "" {
				line += "  money: " + string(h)
			}
			fmt.Fprintln(stdout, line)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

func verdictWord(r grader.Result) string {
	switch {
	case r.Passed():
		return "pass"
	case r.Caught():
		return "FAIL"
	}
	return "N/A"
}

// gradeResults is results.json.
type gradeResults struct {
	// Valid is true, false, or "unknown" when some check could not run.
	Valid   any    `json:"valid"`
	Subject string `json:"subject"`
	Stage   int    `json:"stage"`
	Seed    uint64 `json:"seed"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	// Money counts the failures that harmed money; the others are
	// contract differences.
	Money   int `json:"money_failures"`
	Unknown int `json:"could_not_run"`
	// NotRun names the checks that could not run: they found nothing,
	// either way, and Counts holds nothing of them.
	NotRun []string `json:"checks_not_run"`
	// Counts sums the failures' findings, under the day replay's names
	// where they mean the same (grader.Counts).
	Counts grader.Counts `json:"counts"`
	Checks []checkResult `json:"checks"`
}

type checkResult struct {
	ID     string `json:"id"`
	Result string `json:"result"`
	// Harm is the money verdict of a failure ("double", "lost", …); empty
	// for a contract difference.
	Harm   string `json:"harm,omitempty"`
	Lesson string `json:"lesson"`
	Detail string `json:"detail,omitempty"`
	// Timeline is the HTML timeline of a money failure, beside this file.
	Timeline string `json:"timeline,omitempty"`
}

// gradeReport prints the failures grouped by lesson and the closing
// counts, writes results.json if asked, and chooses the exit status.
func gradeReport(f gradeFlags, results []grader.Result, stdout io.Writer) error {
	rep := report{subject: subjectName(f), stage: f.stage, seed: f.seed, results: results, dir: f.results,
		reproduce: func(id string) string { return reproduceGrade(f, id) },
		section: func(r grader.Result) string {
			lesson, _, _ := strings.Cut(r.Lesson(), "#")
			return lesson
		}}
	return rep.write(stdout)
}

// report is what lab grade and lab audit print and write once their
// checks have run.
type report struct {
	subject string
	stage   int
	seed    uint64
	results []grader.Result
	// dir, if set, is the folder results.json goes to.
	dir string
	// reproduce is the command that runs one check again.
	reproduce func(id string) string
	// section is the heading a result that did not pass is printed under.
	section func(r grader.Result) string
	// order lists the headings in the order they are printed; nil means
	// in sorted order.
	order []string
	// moneyOnly counts only the failures that harmed money against the
	// verdict: the contract differences are reported, and the run is
	// still valid (lab audit).
	moneyOnly bool
}

// write prints the results that did not pass, section by section, and the
// closing counts, writes results.json if asked, and chooses the exit
// status: 0 valid, 1 invalid, 2 could not run.
func (rep report) write(stdout io.Writer) error {
	out := gradeResults{Subject: rep.subject, Stage: rep.stage, Seed: rep.seed, NotRun: []string{}}
	sections := map[string][]string{}
	for _, r := range rep.results {
		cr := checkResult{ID: r.Check.ID, Lesson: r.Lesson()}
		switch verdictWord(r) {
		case "pass":
			out.Passed++
			cr.Result = "pass"
		case "FAIL":
			out.Failed++
			cr.Result = "fail"
			if h := r.Harm(); h != "" {
				out.Money++
				cr.Harm = string(h)
			}
		default:
			out.Unknown++
			out.NotRun = append(out.NotRun, r.Check.ID)
			cr.Result = "could not run"
		}
		reproduce := rep.reproduce(r.Check.ID)
		if err := grader.WriteTimeline(&r, rep.timelineDir(), reproduce); err != nil {
			fmt.Fprintf(stdout, "%v\n", err)
		}
		if !r.Passed() {
			cr.Detail = r.Err.Error()
			if r.TimelinePath != "" {
				cr.Timeline = filepath.Base(r.TimelinePath)
			}
			s := rep.section(r)
			sections[s] = append(sections[s], grader.FormatColor(r, reproduce, isTerminal(stdout)))
		}
		out.Checks = append(out.Checks, cr)
	}
	order := rep.order
	if order == nil {
		for s := range sections {
			order = append(order, s)
		}
		sort.Strings(order)
	}
	for _, s := range order {
		if len(sections[s]) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "\n── %s\n", s)
		for _, block := range sections[s] {
			fmt.Fprint(stdout, "\n"+block)
		}
	}
	fmt.Fprintf(stdout, "\n%d passed, %d failed", out.Passed, out.Failed)
	if out.Failed > 0 {
		fmt.Fprintf(stdout, " (%d harmed money, %d contract differences)", out.Money, out.Failed-out.Money)
	}
	if out.Unknown > 0 {
		fmt.Fprintf(stdout, ", %d could not run", out.Unknown)
	}
	fmt.Fprintln(stdout)
	invalid := out.Failed
	if rep.moneyOnly {
		invalid = out.Money
	}
	out.Valid = invalid == 0
	if invalid == 0 && out.Unknown > 0 {
		out.Valid = "unknown"
	}
	if rep.dir != "" {
		counts, err := grader.CountFindings(rep.results)
		if err != nil {
			return cannotRun(err)
		}
		out.Counts = counts
		if err := writeGradeResults(rep.dir, out, rep.results); err != nil {
			return err
		}
	}
	switch {
	case rep.moneyOnly && invalid > 0:
		return &exitCode{code: 1, err: fmt.Errorf("%d of %d checks found money harmed", invalid, len(rep.results))}
	case invalid > 0:
		return &exitCode{code: 1, err: fmt.Errorf("%d of %d checks failed", out.Failed, len(rep.results))}
	case out.Unknown > 0:
		return cannotRun(fmt.Errorf("%d checks could not run", out.Unknown))
	}
	return nil
}

// timelineDir is where the HTML timelines of money failures go: beside
// results.json, or without one in the project's .idemlab/timelines.
func (rep report) timelineDir() string {
	if rep.dir != "" {
		return rep.dir
	}
	return grader.TimelineDir()
}

func subjectName(f gradeFlags) string {
	switch {
	case f.url != "":
		return f.url
	case f.solution:
		return fmt.Sprintf("solutions/stage%d", f.stage)
	}
	return fmt.Sprintf("stages/stage%d", f.stage)
}

// reproduceGrade is the command that runs check id again as this run
// did: make grade where its variables say it all, the program itself for
// a running server or a database of one's own.
func reproduceGrade(f gradeFlags, id string) string {
	if f.url == "" && f.db == "" {
		cmd := fmt.Sprintf("make grade STAGE=%d", f.stage)
		if f.solution {
			cmd += " SOLUTION=1"
		}
		return fmt.Sprintf("%s%s SEED=%d RUN=%s", labdb.AgainPrefix(), cmd, f.seed, id)
	}
	cmd := fmt.Sprintf("%s grade --stage %d", program(), f.stage)
	switch {
	case f.url != "":
		cmd += fmt.Sprintf(" --url %s --admin-token %s", f.url, f.admin)
	case f.solution:
		cmd += " --solution"
	}
	if f.url == "" && f.db != "" {
		cmd += " --db " + labdb.Redacted(f.db)
	}
	return fmt.Sprintf("%s --seed %d --run %s", cmd, f.seed, id)
}

// writeGradeResults writes the results bundle into dir: results.json, and
// history.jsonl with every attempt of every check that kept its history.
func writeGradeResults(dir string, out gradeResults, results []grader.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write the results: %w", err)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("write the results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the results: %w", err)
	}
	h, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return fmt.Errorf("write the history: %w", err)
	}
	if err := grader.WriteHistory(h, results); err != nil {
		h.Close()
		return err
	}
	if err := h.Close(); err != nil {
		return fmt.Errorf("write the history: %w", err)
	}
	return nil
}
