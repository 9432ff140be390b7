package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"idemlab/grader"
	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
	"idemlab/kit/labdb"
	"idemlab/kit/pgdb"
	"idemlab/kit/server"
	sol0 "idemlab/solutions/stage0"
)

type replayFlags struct {
	serverFlags
	plan      string
	accessLog string
	answer    string
	results   string
	clients   int
	examples  int
	rate      float64
	op        string
	// core is the core ledger the server at url posts to (--core).
	core string
}

func runReplay(ctx context.Context, in *invocation) error {
	var f replayFlags
	in.StringVar(&f.plan, "log", "", "the day plan to replay (from lab gen)")
	in.StringVar(&f.plan, "plan", "", "the same as --log")
	f.define(in.FlagSet, "the stage to replay against, 0..9", "replay against")
	in.StringVar(&f.accessLog, "access-log", "", "write the server's access log to this file (with --solution)")
	in.StringVar(&f.answer, "answer", "", "write the tally's answer key, from the server's books, to this file (with --solution)")
	in.StringVar(&f.results, "results", "", "write results.json and history.jsonl into this folder")
	in.IntVar(&f.clients, "clients", 1, "operations in flight at once (1 repeats the day's outcome, but for which of a double click's two requests wins the race)")
	in.IntVar(&f.examples, "examples", 5, "how many operations to show for each kind of finding")
	in.Float64Var(&f.rate, "rate", 0, "operations started per second, to watch the day go by in lab dash (0: as fast as possible)")
	in.StringVar(&f.core, "core", "", "with --url: the core ledger that server posts to, as lab serve prints it (http://TOKEN@HOST:PORT), whose postings the replay then reconciles with the transfers too")
	in.StringVar(&f.op, "op", "", "draw this operation's timeline (its attempts and what the lab saw), in the terminal and as HTML beside results.json (or in .idemlab/timelines)")
	if done, err := in.parse(); done {
		return err
	}
	if f.plan == "" {
		in.Usage()
		return cannotRun(fmt.Errorf("--log: which day plan? (datasets/day-small.plan.jsonl is shipped; for another, run %s gen -o day.jsonl)", program()))
	}
	if f.rate < 0 || math.IsNaN(f.rate) || math.IsInf(f.rate, 0) {
		return cannotRun(fmt.Errorf("--rate %g: operations per second, 0 for as fast as possible", f.rate))
	}
	if f.url == "" {
		if err := checkStage(f.stage, f.solution); err != nil {
			return err
		}
	}
	if f.core != "" && f.url == "" {
		return cannotRun(errors.New("--core is the core ledger of the server at --url: without --url, the replay runs a core of its own from stage 9 on"))
	}
	if (f.accessLog != "" || f.answer != "") && (f.url != "" || !f.solution) {
		return cannotRun(errors.New("--access-log and --answer need the server in this process: use them with --solution"))
	}
	db, err := f.freshDB()
	if err != nil {
		return err
	}
	plan, err := readPlan(f.plan)
	if err != nil {
		return cannotRun(err)
	}
	if f.op != "" && !slices.ContainsFunc(plan.Ops, func(op dayplan.Op) bool { return op.Op == f.op }) {
		return cannotRun(fmt.Errorf("--op %s: the plan has no such operation", f.op))
	}
	opts := replay.Options{Clients: f.clients, Progress: progress(in.stderr, len(plan.Ops)), Pace: replay.NewPace(f.rate), DB: db, History: f.op != ""}
	defer opts.Pace.Stop()

	if f.url == "" && f.stage >= grader.CoreStage {
		// A core ledger the replay can read: a server started elsewhere
		// posts to one of its own, which it cannot.
		_, url, stop, err := server.StartCore(ctx)
		if err != nil {
			return cannotRun(err)
		}
		defer stop()
		opts.CoreURL = url
	}
	var run *replay.DayRun
	var target string
	began := time.Now()
	switch {
	case f.url != "":
		target = f.url
		opts.URL, opts.Admin, opts.CoreURL = f.url, f.admin, f.core
		res, err := replay.Run(ctx, plan, opts)
		if err != nil {
			return cannotRun(err)
		}
		run = &replay.DayRun{Result: res}
	case f.solution:
		target = fmt.Sprintf("the reference solutions/stage%d, in this process", f.stage)
		// The server writes an access log only for the files that need it:
		// a line per request, which a day of 100,000 operations would keep
		// in memory for nothing.
		var log bytes.Buffer
		var accessLog io.Writer
		if f.accessLog != "" || f.answer != "" {
			accessLog = &log
		}
		if run, err = replay.InProcess(ctx, solutions[f.stage], plan, accessLog, opts); err != nil {
			return cannotRun(err)
		}
		if err := writeDayFiles(f, run, log.Bytes(), in.stderr); err != nil {
			return err
		}
	default:
		target = fmt.Sprintf("your stages/stage%d, as a child process", f.stage)
		if run, err = replayMine(ctx, f.stage, plan, opts, in.stderr); err != nil {
			return err
		}
	}
	took := time.Since(began)

	rc := replay.ReconcileDay(run.Result)
	fmt.Fprintf(in.stdout, "replayed %s (%s) against %s in %s\n", f.plan, plan.Header.Command, target, took.Round(time.Millisecond))
	all := "--results DIR writes all of them to DIR/results.json"
	if f.results != "" {
		all = "all of them in " + filepath.Join(f.results, "results.json")
	}
	rc.WriteReport(in.stdout, f.examples, all)
	if f.results != "" {
		if err := writeResults(f.results, plan, target, rc, run.Result); err != nil {
			return err
		}
		fmt.Fprintf(in.stdout, "results in %s\n", filepath.Join(f.results, "results.json"))
	}
	if f.op != "" {
		if err := drawOp(in.stdout, f, rc, run.Result, isTerminal(in.stdout)); err != nil {
			return err
		}
	}
	if !rc.Valid {
		return &exitCode{code: 1, err: errors.New("the day does not reconcile: " + firstLine(rc))}
	}
	return nil
}

// replayMine builds the student's stages/stageN, starts it as a child
// process on a fresh database of its own (opts.DB: in memory, or a new
// database on a PostgreSQL cluster, dropped at the end) and replays plan
// against it.
func replayMine(ctx context.Context, n int, plan *dayplan.Plan, opts replay.Options, stderr io.Writer) (*replay.DayRun, error) {
	root, err := targets.Root()
	if err != nil {
		return nil, cannotRun(err)
	}
	compiling(stderr, fmt.Sprintf("stages/stage%d", n))
	bin, err := stageBinary(ctx, root, n, stderr)
	if err != nil {
		return nil, err
	}
	db := opts.DB
	if labdb.EngineOfTarget(db) == labdb.PostgreSQL {
		var drop func(context.Context) error
		if db, drop, err = pgdb.CreateDatabase(ctx, db); err != nil {
			return nil, cannotRun(err)
		}
		defer drop(context.Background())
	}
	admin := targets.AdminToken()
	child, err := startStage(ctx, bin, serveFlags{addr: "127.0.0.1:0", db: db, admin: admin, core: opts.CoreURL}, stderr)
	if err != nil {
		return nil, cannotRun(err)
	}
	defer child.Stop()
	opts.URL, opts.Admin = child.URL, admin
	res, err := replay.Run(ctx, plan, opts)
	if err != nil {
		return nil, cannotRun(err)
	}
	return &replay.DayRun{Result: res}, nil
}

// progress reports a long replay's progress: on a terminal, one line
// rewritten in place; otherwise a plain line every tenth of a large day.
func progress(w io.Writer, total int) func(done, total int) {
	f, ok := w.(*os.File)
	tty := false
	if ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	switch {
	case tty:
		step := max(total/100, 1)
		return func(done, total int) {
			if done%step == 0 || done == total {
				fmt.Fprintf(w, "\rreplaying: %d/%d operations", done, total)
			}
			if done == total {
				fmt.Fprint(w, "\r\033[K")
			}
		}
	case total >= 10_000:
		step := total / 10
		return func(done, total int) {
			if done%step == 0 {
				fmt.Fprintf(w, "replaying: %d/%d operations\n", done, total)
			}
		}
	}
	return nil
}

func firstLine(rc replay.DayReconciliation) string {
	for _, f := range rc.Findings {
		return f.Kind + ": " + f.Op + f.Account
	}
	return "see above"
}

func readPlan(path string) (*dayplan.Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	plan, err := dayplan.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plan, nil
}

// writeDayFiles writes the access log and the answer key of an in-process
// replay. The answer key comes from the server's books; the reference
// Tally of the log must agree with it, or the dataset is not shipped.
func writeDayFiles(f replayFlags, run *replay.DayRun, log []byte, stderr io.Writer) error {
	if f.accessLog != "" {
		if err := os.WriteFile(f.accessLog, log, 0o644); err != nil {
			return err
		}
	}
	if f.answer == "" {
		return nil
	}
	tally, err := sol0.Tally(bytes.NewReader(log))
	if err != nil {
		return fmt.Errorf("the reference Tally could not read the access log: %w", err)
	}
	if tally != run.Truth {
		return fmt.Errorf("the reference Tally (%+v) disagrees with the server's books (%+v): answer key not written", tally, run.Truth)
	}
	raw, err := json.MarshalIndent(run.Truth, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.answer, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: %d double transfers (the reference Tally of the access log agrees with the server's books)\n",
		f.answer, run.Truth.DoubleTransfers)
	return nil
}

// resultsFile is results.json: the day's reconciliation and what it was a
// reconciliation of (docs/grader.md, "A day of faults").
type resultsFile struct {
	Plan    string `json:"plan"`
	Seed    uint64 `json:"seed"`
	Target  string `json:"target"`
	Elapsed string `json:"elapsed"`
	replay.DayReconciliation
}

func writeResults(dir string, plan *dayplan.Plan, target string, rc replay.DayReconciliation, res *replay.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(resultsFile{
		Plan: plan.Header.Command, Seed: plan.Header.Seed, Target: target,
		Elapsed: res.Elapsed.Round(time.Millisecond).String(), DayReconciliation: rc,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	h, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return err
	}
	if err := replay.WriteHistory(h, res.Attempts); err != nil {
		h.Close()
		return err
	}
	return h.Close()
}

// drawOp prints the timeline of operation f.op from the day's history,
// with what the reconciliation found about it highlighted, and writes it
// as HTML beside results.json (or in .idemlab/timelines). The worst of
// its findings (they come worst first) names the picture and decides how
// its executions are drawn; a told_duplicate finding among them marks the
// 409 of the submission it names as well.
func drawOp(w io.Writer, f replayFlags, rc replay.DayReconciliation, res *replay.Result, color bool) error {
	finding := timeline.Finding{Check: "lab replay --op " + f.op, Claim: "operation " + f.op + " of " + f.plan,
		Harm: "reconciled", Explain: "nothing found about this operation", Reproduce: replayCommand(f)}
	var stories []string
	for _, d := range rc.Findings {
		if d.Op != f.op {
			continue
		}
		if len(stories) == 0 {
			finding.Harm, finding.Explain = d.Kind, d.Story
		}
		stories = append(stories, d.Kind+": "+d.Story)
		switch d.Kind {
		case "double_applied":
			finding.Excess = append(finding.Excess, f.op)
		case "lost_transfers":
			finding.Missing = append(finding.Missing, f.op)
		case "told_duplicate":
			finding.ToldDuplicate = true
			finding.Clients = append(finding.Clients, d.Submission)
		}
	}
	finding.Got = strings.Join(stories, "\n")
	if len(finding.Excess)+len(finding.Missing) == 0 {
		finding.Named = []string{f.op}
	}
	v, ok := res.History.Focus(finding, timeline.TextLanes)
	if !ok {
		return cannotRun(fmt.Errorf("--op %s: the day's history holds no attempt of it", f.op))
	}
	fmt.Fprintf(w, "\n%s\n", f.op)
	for _, s := range stories {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprint(w, timeline.Text(v, timeline.TextOptions{Color: color}))
	dir := f.results
	if dir == "" {
		dir = grader.TimelineDir()
	}
	page, _ := res.History.Focus(finding, timeline.HTMLLanes)
	path, err := timeline.WriteHTML(dir, "replay-"+f.op, page)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  timeline: %s\n", path)
	return nil
}

// replayCommand is the command that replays the same day and draws the
// same operation.
func replayCommand(f replayFlags) string {
	cmd := fmt.Sprintf("%s replay --log %s --stage %d", program(), f.plan, f.stage)
	if f.solution {
		cmd += " --solution"
	}
	if f.url != "" {
		cmd = fmt.Sprintf("%s replay --log %s --url %s --admin-token …", program(), f.plan, f.url)
		if f.core != "" {
			cmd += " --core …"
		}
	}
	if f.clients > 1 {
		// The operations in flight at once decide which requests race.
		cmd += fmt.Sprintf(" --clients %d", f.clients)
	}
	if f.rate > 0 {
		// So do the pace the operations start at,
		cmd += fmt.Sprintf(" --rate %g", f.rate)
	}
	if f.url == "" && f.db != "" && f.db != ":memory:" {
		// and the engine (its password left out, as --admin-token's is).
		cmd += " --db " + labdb.Redacted(f.db)
	}
	return cmd + " --op " + f.op
}
