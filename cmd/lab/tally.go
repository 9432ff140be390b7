package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"idemlab/grader/targets"
	"idemlab/kit/accesslog"
	"idemlab/kit/bank"
	sol0 "idemlab/solutions/stage0"
)

func runTally(ctx context.Context, in *invocation) error {
	logPath := in.String("log", "", "the access log (JSON lines, as lab replay --access-log writes)")
	student := in.Bool("student", false, "run your Tally in stages/stage0 instead of the reference")
	asJSON := in.Bool("json", false, "print the report as JSON")
	if done, err := in.parse(); done {
		return err
	}
	if *logPath == "" {
		in.Usage()
		return cannotRun(errors.New("--log: which access log? (datasets/day-small.access.jsonl is shipped)"))
	}
	var rep accesslog.Report
	var err error
	who := "the reference Tally (solutions/stage0)"
	if *student {
		who = "your Tally (stages/stage0)"
		rep, err = studentTally(ctx, *logPath, in.stderr)
	} else {
		rep, err = referenceTally(*logPath)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(in.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(in.stdout, "%s of %s:\n", who, *logPath)
	return compareAnswer(in.stdout, *logPath, rep)
}

func referenceTally(path string) (accesslog.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return accesslog.Report{}, err
	}
	defer f.Close()
	return sol0.Tally(f)
}

// studentTally runs the student's Tally without linking stages/stage0
// into the lab command (a stage that does not compile must break only
// itself): it writes a small program under tmp/ that calls it, and runs
// that with go run. The folder's name starts with "_" so that ./...
// patterns (make test, go vet) never build it.
func studentTally(ctx context.Context, path string, stderr io.Writer) (accesslog.Report, error) {
	root, err := targets.Root()
	if err != nil {
		return accesslog.Report{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return accesslog.Report{}, err
	}
	dir := filepath.Join(root, "tmp", "_tally-student")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return accesslog.Report{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(studentTallyProgram), 0o644); err != nil {
		return accesslog.Report{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./tmp/_tally-student", abs)
	cmd.Dir = root
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		fmt.Fprint(stderr, errs.String())
		return accesslog.Report{}, cannotRun(fmt.Errorf("your Tally did not run (stages/stage0): %v", err))
	}
	var rep accesslog.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return accesslog.Report{}, fmt.Errorf("read your Tally's report: %w", err)
	}
	return rep, nil
}

// studentTallyProgram calls the student's Tally and prints its report.
const studentTallyProgram = `// Code written by lab tally --student; it is rewritten on every run.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"idemlab/stages/stage0"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rep, err := stage0.Tally(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Tally:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}
`

// writeTally writes a report, with the answer key beside it when want is
// not nil and differs.
func writeTally(w io.Writer, r accesslog.Report, want *accesslog.Report) {
	rows := []struct {
		label     string
		got, want string
		note      string
	}{
		{"executed transfers", fmt.Sprint(r.Executed), "", ""},
		{"keys executed twice+", fmt.Sprint(r.Groups), "", "groups: same customer, same Idempotency-Key"},
		{"double transfers", fmt.Sprint(r.DoubleTransfers), "", "executions after the first of their group"},
		{"  exact duplicates", fmt.Sprint(r.ExactDuplicates), "", "the same request, however it was spelled"},
		{"  edited resubmissions", fmt.Sprint(r.EditedResubmissions), "", "the same key reused for a different request"},
		{"money sent twice (won)", bank.FormatWon(r.MoneySentTwice), "", ""},
	}
	if want != nil {
		for i, v := range []string{fmt.Sprint(want.Executed), fmt.Sprint(want.Groups), fmt.Sprint(want.DoubleTransfers),
			fmt.Sprint(want.ExactDuplicates), fmt.Sprint(want.EditedResubmissions), bank.FormatWon(want.MoneySentTwice)} {
			rows[i].want, rows[i].note = v, ""
			if v != rows[i].got {
				rows[i].note = "<- differs"
			}
		}
		fmt.Fprintf(w, "  %-24s %12s %12s\n", "", "yours", "answer key")
	}
	for _, row := range rows {
		line := fmt.Sprintf("  %-24s %12s %12s   %s", row.label, row.got, row.want, row.note)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// compareAnswer compares the report with the answer key next to the log
// (day.access.jsonl → day.answer.json), when there is one.
func compareAnswer(w io.Writer, logPath string, rep accesslog.Report) error {
	base, ok := strings.CutSuffix(logPath, ".access.jsonl")
	if !ok {
		writeTally(w, rep, nil)
		return nil
	}
	raw, err := os.ReadFile(base + ".answer.json")
	if err != nil {
		writeTally(w, rep, nil)
		return nil
	}
	var want accesslog.Report
	if err := json.Unmarshal(raw, &want); err != nil {
		return fmt.Errorf("%s.answer.json: %w", base, err)
	}
	if rep == want {
		writeTally(w, rep, nil)
		fmt.Fprintf(w, "matches the answer key %s.answer.json\n", base)
		return nil
	}
	writeTally(w, rep, &want)
	return &exitCode{code: 1, err: fmt.Errorf("the tally differs from the answer key %s.answer.json", base)}
}
