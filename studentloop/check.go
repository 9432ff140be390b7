package studentloop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// CheckResult is one check's outcome in a run of a stage.
type CheckResult struct {
	ID     string
	Passed bool
	// Report is the check's failure as the grader printed it (the FAIL or
	// COULD NOT RUN block), empty for a pass.
	Report string
}

// Outcome is what one run of a stage's checks found.
type Outcome struct {
	Stage int
	// Only is the RUN filter the run had, if any.
	Only string
	// Seed is the run's seed, as the grader printed it.
	Seed string
	// Build is the compiler's (or vet's) message when the stage did not
	// build; then there are no checks.
	Build string
	// Checks are in catalogue order: by stage, then ID.
	Checks []CheckResult
	// Other is what the run printed outside any check when it failed
	// without a failing check (a panic, a timeout, a bad SEED).
	Other string
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

// FirstFailing is the ID of the first failing check, or "".
func (o Outcome) FirstFailing() string {
	if f := o.Failed(); len(f) > 0 {
		return f[0].ID
	}
	return ""
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
	o := Outcome{Stage: stage}
	outputs := map[string]*strings.Builder{}
	results := map[string]bool{}
	var build, other strings.Builder
	packageFailed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev testEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return Outcome{}, fmt.Errorf("not a go test -json event: %q", line)
		}
		switch ev.Action {
		case "build-output":
			if !strings.HasPrefix(ev.Output, "# ") {
				build.WriteString(ev.Output)
			}
			continue
		case "build-fail":
			continue
		}
		if m := seedLine.FindStringSubmatch(ev.Output); m != nil && o.Seed == "" {
			o.Seed = m[1]
		}
		id := ""
		if m := checkName.FindStringSubmatch(ev.Test); m != nil {
			id = m[1]
		}
		switch {
		case id != "" && ev.Action == "output":
			if outputs[id] == nil {
				outputs[id] = &strings.Builder{}
			}
			outputs[id].WriteString(ev.Output)
		case id != "" && (ev.Action == "pass" || ev.Action == "fail"):
			results[id] = ev.Action == "pass"
		case id == "" && ev.Action == "output":
			other.WriteString(ev.Output)
		case ev.Test == "" && ev.Action == "fail":
			packageFailed = true
		}
	}
	if err := sc.Err(); err != nil {
		return Outcome{}, err
	}
	o.Build = strings.TrimSpace(build.String())
	for id, passed := range results {
		c := CheckResult{ID: id, Passed: passed}
		if !passed && outputs[id] != nil {
			c.Report = failureReport(outputs[id].String())
		}
		o.Checks = append(o.Checks, c)
	}
	sort.Slice(o.Checks, func(i, j int) bool { return checkLess(o.Checks[i].ID, o.Checks[j].ID) })
	if packageFailed && o.Build == "" && len(o.Failed()) == 0 {
		o.Other = strings.TrimSpace(other.String())
		if o.Other == "" {
			o.Other = "the checks failed without saying why"
		}
	}
	return o, nil
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

// checkLess orders check IDs as the catalogue does: by stage, then name.
func checkLess(a, b string) bool {
	sa, sb := checkStage(a), checkStage(b)
	if sa != sb {
		return sa < sb
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

// Runner runs a stage's checks.
type Runner interface {
	Run(ctx context.Context, stage int) (Outcome, error)
}

// CheckRunner runs one check of a stage alone. Its outcome has the
// check's ID in Only, so it is never recorded as the stage's progress.
type CheckRunner interface {
	RunCheck(ctx context.Context, stage int, id string) (Outcome, error)
}

// GoTest runs a stage's checks the way make stage-N does, in a child
// process: it builds (and vets) the stage's test binary with go test -c
// and runs it under test2json. Building apart from running lets a check
// run alone and then every check share one build: the second go test -c
// finds the binary in Go's build cache.
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
func (g GoTest) Run(ctx context.Context, stage int) (Outcome, error) {
	return g.goTest(ctx, stage, g.Only, true)
}

// RunCheck runs the check id of stage alone, and without vet, for an
// answer in about a second: compiling and linking the test binary is most
// of what is left, where a run of every check waits for the slowest. The
// -run filter holds it to that exact ID (RUN= alone picks every check
// whose ID contains it). It returns Run's errors.
func (g GoTest) RunCheck(ctx context.Context, stage int, id string) (Outcome, error) {
	return g.goTest(ctx, stage, id, false, "-test.run=^TestStage$/^"+regexp.QuoteMeta(id)+"$")
}

func (g GoTest) goTest(ctx context.Context, stage int, only string, vet bool, flags ...string) (Outcome, error) {
	goCmd := g.Go
	if goCmd == "" {
		goCmd = "go"
	}
	dir := StageDir(stage)
	if g.Solution {
		dir = SolutionDir(stage)
	}
	tmp, err := os.MkdirTemp("", "lab-check-")
	if err != nil {
		return Outcome{}, err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "stage.test")
	// go test -c vets as go test does (the same checks), unless told not
	// to. Without the symbol table and DWARF (-s -w) the link takes about
	// 0.35 s less, most of what a save waits for; a panic's stack trace
	// still names every function and line.
	args := []string{"test", "-c", "-ldflags=-s -w", "-o", exe, "./" + dir}
	if !vet {
		args = append(args, "-vet=off")
	}
	build := exec.CommandContext(ctx, goCmd, args...)
	build.Dir = g.Root
	killGroupOnCancel(build)
	if out, err := build.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		msg := compilerMessage(out)
		if msg == "" {
			return Outcome{}, fmt.Errorf("go test -c: %v", err)
		}
		return Outcome{Stage: stage, Only: only, Build: msg}, nil
	}
	args = append([]string{"tool", "test2json", exe, "-test.v=test2json", "-test.count=1", "-test.timeout=10m"}, flags...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = filepath.Join(g.Root, dir)
	cmd.Env = append(os.Environ(), "SEED="+g.Seed, "RUN="+only)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killGroupOnCancel(cmd)
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return Outcome{}, ctx.Err()
	}
	o, err := ParseTestJSON(&stdout, stage)
	if err != nil {
		return Outcome{}, err
	}
	o.Only = only
	if len(o.Checks) == 0 && o.Other == "" && runErr != nil {
		return Outcome{}, fmt.Errorf("run the checks: %v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return o, nil
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
