package studentloop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"idemlab/grader"
	"idemlab/kit/labdb"
)

// CheckResult is one check's outcome in a run of a stage.
type CheckResult struct {
	ID     string
	Passed bool
	// Report is the check's failure as the grader printed it (the FAIL or
	// COULD NOT RUN block), empty for a pass.
	Report string
}

// CouldNotRun reports whether the check did not pass because it could
// not observe what it needs (the grader's COULD NOT RUN block): it says
// nothing of the server, for or against.
func (c CheckResult) CouldNotRun() bool {
	return !c.Passed && strings.HasPrefix(c.Report, "COULD NOT RUN ")
}

// WhyNot is what a check that could not run says it could not observe
// (its report's "why not", on one line), or "" for any other result.
func (c CheckResult) WhyNot() string {
	if !c.CouldNotRun() {
		return ""
	}
	var why []string
	for _, l := range strings.Split(c.Report, "\n") {
		switch rest, ok := strings.CutPrefix(l, "  why not "); {
		case ok:
			why = append(why, strings.TrimSpace(rest))
		case len(why) > 0 && strings.HasPrefix(l, whyNotIndent):
			why = append(why, strings.TrimSpace(l))
		case len(why) > 0:
			return strings.Join(why, " ")
		}
	}
	return strings.Join(why, " ")
}

// Lesson is the lesson section a failing check's report points to (its
// "lesson" line): the check's own, or the one the failure's cause is
// taught in when the grader saw another cause (a stage 5 server that
// forgot a key inside a stage 1 check is sent to lesson 5). It is ""
// for a pass.
func (c CheckResult) Lesson() string {
	for _, l := range strings.Split(c.Report, "\n") {
		if rest, ok := strings.CutPrefix(l, "  lesson "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// CatalogueLesson is the lesson section the catalogue gives check id, ""
// for an ID it does not hold.
func CatalogueLesson(id string) string {
	if c, ok := grader.Lookup(id); ok {
		return c.Lesson
	}
	return ""
}

// LessonCheck is the first check in catalogue order whose own lesson
// section is lesson, and no later than stage n: the check that teaches
// it, whose hint follows that lesson. ok is false when no check has it
// as its own (a section such as lesson 1's on PostgreSQL, which only a
// failure's cause points to).
func LessonCheck(lesson string, n int) (id string, ok bool) {
	for _, c := range grader.Catalogue() {
		if c.Lesson == lesson && c.Stage <= n {
			return c.ID, true
		}
	}
	return "", false
}

// whyNotIndent is how far the grader indents the lines of a report's
// field after its first (grader.Format).
const whyNotIndent = "            "

// Outcome is what one run of a stage's checks found.
type Outcome struct {
	Stage int
	// Only is the RUN filter the run had, if any.
	Only string
	// Solution says the checks ran against the reference solution, not
	// the student's stage.
	Solution bool
	// Seed is the run's seed, as the grader printed it.
	Seed string
	// Engine is the database engine the checks ran on.
	Engine labdb.Engine
	// Build is the compiler's (or vet's) message when the stage did not
	// build; then there are no checks.
	Build string
	// Checks are in catalogue order: by stage, then as its lesson teaches them.
	Checks []CheckResult
	// Other is what the run printed outside any check when it failed
	// without a failing check (a panic, a timeout, a bad SEED).
	Other string
	// Ahead are the later stages the student's progress shows passing
	// already on this run's engine (set where the run is recorded): a pass
	// names as next the first later stage that does not.
	Ahead map[int]bool
}

// State is where the outcome leaves the stage.
func (o Outcome) State() State {
	switch {
	case o.Build != "":
		return DoesNotBuild
	case len(o.Failed()) > 0:
		return Failing
	case o.Other != "" || len(o.Checks) == 0:
		return CouldNotCheck
	}
	return Passing
}

// Failed returns the failing checks, in catalogue order.
func (o Outcome) Failed() []CheckResult {
	var out []CheckResult
	for _, c := range o.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Passed returns the passing checks, in catalogue order.
func (o Outcome) Passed() []CheckResult {
	var out []CheckResult
	for _, c := range o.Checks {
		if c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// FirstFailing is the ID of the first check that found something
// against the server, or "": a check that could not run is never the one
// to start with.
func (o Outcome) FirstFailing() string {
	return o.First().ID
}

// First is the check FirstFailing names, with its report; the zero
// CheckResult if none failed or every one that did could not run.
func (o Outcome) First() CheckResult {
	f := o.Failed()
	if i := slices.IndexFunc(f, func(c CheckResult) bool { return !c.CouldNotRun() }); i >= 0 {
		return f[i]
	}
	return CheckResult{}
}

// CouldNotRun returns the checks that could not run, in catalogue order:
// among Failed, those that found nothing against the server.
func (o Outcome) CouldNotRun() []CheckResult {
	var out []CheckResult
	for _, c := range o.Checks {
		if c.CouldNotRun() {
			out = append(out, c)
		}
	}
	return out
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action     string
	Test       string
	Output     string
	ImportPath string
}

// The grader names each check's subtest after its ID, under TestStage.
var (
	checkName  = regexp.MustCompile(`^Test\w*/(S(\d+)\.[a-z0-9-]+)$`)
	seedLine   = regexp.MustCompile(`seed (\d+) \(repeat with SEED=`)
	loggedFrom = regexp.MustCompile(`^\s*\w+\.go:\d+: ?$`)
)

// ParseTestJSON reads the events of `go test -json` on stage's package
// and returns what they say about its checks. It returns an error for a
// stream that is not test2json events.
func ParseTestJSON(r io.Reader, stage int) (Outcome, error) {
	return newEvents(stage).read(r)
}

// read folds every event of r and returns the outcome.
func (e *events) read(r io.Reader) (Outcome, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if err := e.add(sc.Bytes()); err != nil {
			return Outcome{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return Outcome{}, err
	}
	return e.outcome(), nil
}

// events folds a stream of test2json events into an Outcome, one line
// at a time, so that a check can be reported as soon as it ends.
type events struct {
	o             Outcome
	outputs       map[string]*strings.Builder
	results       map[string]bool
	build, other  strings.Builder
	packageFailed bool
	// started and checked, when not nil, are called as the test binary
	// starts (the build is over) and as each check ends.
	started func()
	checked func(CheckResult)
}

func newEvents(stage int) *events {
	return &events{o: Outcome{Stage: stage}, outputs: map[string]*strings.Builder{}, results: map[string]bool{}}
}

// add takes one line of the stream.
func (e *events) add(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var ev testEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return fmt.Errorf("not a go test -json event: %q", line)
	}
	switch ev.Action {
	case "build-output":
		if !strings.HasPrefix(ev.Output, "# ") {
			e.build.WriteString(ev.Output)
		}
		return nil
	case "build-fail":
		return nil
	case "start":
		if e.started != nil {
			e.started()
		}
		return nil
	}
	if m := seedLine.FindStringSubmatch(ev.Output); m != nil && e.o.Seed == "" {
		e.o.Seed = m[1]
	}
	id := ""
	if m := checkName.FindStringSubmatch(ev.Test); m != nil {
		id = m[1]
	}
	switch {
	case id != "" && ev.Action == "output":
		if e.outputs[id] == nil {
			e.outputs[id] = &strings.Builder{}
		}
		e.outputs[id].WriteString(ev.Output)
	case id != "" && (ev.Action == "pass" || ev.Action == "fail"):
		e.results[id] = ev.Action == "pass"
		if e.checked != nil {
			e.checked(e.result(id))
		}
	case id == "" && ev.Action == "output":
		e.other.WriteString(ev.Output)
	case ev.Test == "" && ev.Action == "fail":
		e.packageFailed = true
	}
	return nil
}

// result is check id as it ended, with its report when it failed.
func (e *events) result(id string) CheckResult {
	c := CheckResult{ID: id, Passed: e.results[id]}
	if !c.Passed && e.outputs[id] != nil {
		c.Report = failureReport(e.outputs[id].String())
	}
	return c
}

// outcome is what the stream said, once it has ended.
func (e *events) outcome() Outcome {
	o := e.o
	o.Build = strings.TrimSpace(e.build.String())
	for id := range e.results {
		o.Checks = append(o.Checks, e.result(id))
	}
	sort.Slice(o.Checks, func(i, j int) bool { return checkLess(o.Checks[i].ID, o.Checks[j].ID) })
	if e.packageFailed && o.Build == "" && len(o.Failed()) == 0 {
		other := []string{strings.TrimSpace(e.other.String())}
		// A check that never ended was running as the test binary died:
		// go test gives what the binary printed last (a panic's message
		// and stack) to the test that printed last, and only that
		// check's output says why.
		for _, id := range slices.Sorted(maps.Keys(e.outputs)) {
			if _, ended := e.results[id]; ended {
				continue
			}
			if r := failureReport(e.outputs[id].String()); r != "" {
				other = append(other, id+" was running as the checks stopped:\n"+r)
			}
		}
		o.Other = strings.TrimSpace(strings.Join(other, "\n"))
		if o.Other == "" {
			o.Other = "the checks failed without saying why"
		}
	}
	return o
}

// failureReport keeps a failing check's own words: not go test's
// === RUN / --- FAIL lines nor the file:line the grader logged from, and
// without go test's indentation.
func failureReport(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") || loggedFrom.MatchString(l) {
			continue
		}
		lines = append(lines, strings.TrimPrefix(l, "        "))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// catalogueOrder is each check's place in the catalogue: by stage, and
// within a stage in the order its lesson teaches them. Made on first use,
// not when the lab starts: most subcommands never sort checks.
var catalogueOrder = sync.OnceValue(func() map[string]int {
	order := map[string]int{}
	for i, c := range grader.Catalogue() {
		order[c.ID] = i
	}
	return order
})

// checkLess orders check IDs as the catalogue does; an ID it does not
// hold (a check of a newer catalogue) goes after its stage's others,
// by name.
func checkLess(a, b string) bool {
	sa, sb := checkStage(a), checkStage(b)
	if sa != sb {
		return sa < sb
	}
	order := catalogueOrder()
	ia, okA := order[a]
	ib, okB := order[b]
	switch {
	case okA && okB:
		return ia < ib
	case okA != okB:
		return okA
	}
	return a < b
}

// CheckStage is the stage a check ID names ("S3.x" → 3). It returns an
// error for a string that is not a check ID.
func CheckStage(id string) (int, error) {
	n := checkStage(id)
	if n < 0 {
		return 0, fmt.Errorf("%q is not a check ID (S<stage>.<name>)", id)
	}
	return n, ValidStage(n)
}

// checkStage is the stage a check ID names ("S3.x" → 3), or -1.
func checkStage(id string) int {
	dot := strings.IndexByte(id, '.')
	if len(id) < 2 || id[0] != 'S' || dot < 0 {
		return -1
	}
	n, err := strconv.Atoi(id[1:dot])
	if err != nil {
		return -1
	}
	return n
}

// Runner runs a stage's checks. each, when not nil, is called with every
// check as it ends, before Run returns; the Outcome is what the stage's
// progress is made of.
type Runner interface {
	Run(ctx context.Context, stage int, each func(CheckResult)) (Outcome, error)
}

// GoTest runs a stage's checks the way make stage-N does, in a child
// process, and reports each check as it ends. It builds and runs them
// with go test -json, and vets the stage while they run: a save is
// answered without waiting for vet, and a stage vet refuses is still
// refused, as go test would.
type GoTest struct {
	Root string
	// Go is the go command (default "go").
	Go string
	// Seed and Only are passed on as SEED and RUN, as make stage-N does.
	Seed, Only string
	// Solution runs the reference solution's checks instead of the
	// student's stage.
	Solution bool
}

// Run runs stage's checks and parses what they report. It returns an
// error when they could not run at all (no Go, a broken module).
func (g GoTest) Run(ctx context.Context, stage int, each func(CheckResult)) (Outcome, error) {
	goCmd := g.Go
	if goCmd == "" {
		goCmd = "go"
	}
	dir := "./" + StageDir(stage)
	if g.Solution {
		dir = "./" + SolutionDir(stage)
	}
	// Without the symbol table and DWARF (-s -w) the link takes about
	// 0.35 s less, much of what a save waits for; a panic's stack trace
	// still names every function and line.
	args := []string{"test", "-json", "-count=1", "-vet=off", "-ldflags=-s -w", "-timeout=10m", "-parallel=" + strconv.Itoa(checksAtOnce())}
	args = append(args, engineTags()...)
	cmd := exec.CommandContext(ctx, goCmd, append(args, dir)...)
	cmd.Dir = g.Root
	cmd.Env = append(os.Environ(), "SEED="+g.Seed, "RUN="+g.Only)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Outcome{}, err
	}
	KillGroupOnCancel(cmd)
	if err := cmd.Start(); err != nil {
		return Outcome{}, err
	}
	// The stage's package is compiled once its test binary starts: vet
	// then finds what it needs in the build cache and runs beside the
	// checks.
	var vet *vetRun
	e := newEvents(stage)
	e.checked = each
	e.started = func() { vet = startVet(ctx, goCmd, g.Root, dir) }
	o, parseErr := e.read(stdout)
	if parseErr != nil {
		cmd.Process.Kill()
	}
	runErr := cmd.Wait()
	vetMsg, vetErr := vet.wait()
	if ctx.Err() != nil {
		return Outcome{}, ctx.Err()
	}
	if parseErr != nil {
		return Outcome{}, parseErr
	}
	if vetErr != nil {
		return Outcome{}, vetErr
	}
	o.Only, o.Solution, o.Engine = g.Only, g.Solution, labdb.EngineOfTarget(labdb.TestTarget())
	if o.Build == "" && vetMsg != "" {
		// go test runs no check of a stage vet refuses.
		o.Build, o.Checks, o.Other = vetMsg, nil, ""
	}
	if o.Build == "" && len(o.Checks) == 0 && o.Other == "" && runErr != nil {
		return Outcome{}, fmt.Errorf("run the checks: %v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return o, nil
}

// checksAtOnce is how many of a stage's checks run at once (go test's
// -parallel, which is the number of cores unless told). A check spends
// most of its time waiting, not computing: for the core's latency, a
// lease to run out, a statement the lab holds, a relay's next pass. Two
// at a time, as go test runs them on two cores, the reference solution of
// stage 9 took about 17 s to check on SQLite; eight at a time, about 5 s,
// on the same two cores. On PostgreSQL four, as make test-pg runs them:
// each check's server opens connections of its own, up to one for each
// request it serves at once (34 in S6.lease-takeover-once), and a cluster
// admits 100 by default: four at a time, stage 9's checks held up to 80.
// More at once gains little there: the cluster's CPU, not the waits,
// bounds that run (about 32 s of CPU for stage 9's checks, so 16 s at
// least on two cores; see pgdb.ReuseDatabases for what it was).
func checksAtOnce() int {
	if labdb.EngineOfTarget(labdb.TestTarget()) == labdb.PostgreSQL {
		return max(runtime.NumCPU(), 4)
	}
	return max(runtime.NumCPU(), 8)
}

// engineTags are the build tags of a stage's checks: on SQLite, the
// default, nopostgres, which leaves the PostgreSQL driver out of the test
// binary and takes about 0.08 s off every save's link; none when
// IDEMLAB_DATABASE_URL names a PostgreSQL cluster to run them on.
func engineTags() []string {
	if labdb.EngineOfTarget(labdb.TestTarget()) == labdb.PostgreSQL {
		return nil
	}
	return []string{"-tags=nopostgres"}
}

// vetRun is go vet running on a stage.
type vetRun struct {
	done chan struct{}
	msg  string
	err  error
}

// goTestVet is the subset of go vet's analyzers that go test runs before
// a package's tests (go help test): a finding of another one, such as
// unreachable code left while editing, does not keep go test from
// running the checks, and must not keep make stage-N from it either.
var goTestVet = []string{"-atomic", "-bool", "-buildtags", "-directive", "-errorsas",
	"-ifaceassert", "-nilfunc", "-printf", "-stringintconv", "-tests"}

// startVet runs go vet on dir, with the checks go test runs before a
// stage's tests, in the background.
func startVet(ctx context.Context, goCmd, root, dir string) *vetRun {
	v := &vetRun{done: make(chan struct{})}
	args := append(append(append([]string{"vet"}, goTestVet...), engineTags()...), dir)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = root
	KillGroupOnCancel(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	go func() {
		defer close(v.done)
		err := cmd.Start()
		if err == nil {
			// Vet gives way to the checks, which the student waits for.
			yieldCPU(cmd)
			err = cmd.Wait()
		}
		if err == nil {
			return
		}
		if v.msg = compilerMessage(out.Bytes()); v.msg == "" {
			v.err = fmt.Errorf("go vet: %v", err)
		}
	}()
	return v
}

// wait returns vet's findings ("" for none), or an error when vet could
// not run. A vet that never started found nothing.
func (v *vetRun) wait() (string, error) {
	if v == nil {
		return "", nil
	}
	<-v.done
	return v.msg, v.err
}

// compilerMessage is what go test -c printed, the compiler's and vet's
// findings, without the "# package" headers it puts above them.
func compilerMessage(out []byte) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "# ") {
			lines = append(lines, l)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
