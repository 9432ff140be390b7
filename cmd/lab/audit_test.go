package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/grader"
)

// auditRun runs lab audit on the adapter at pkg with a fixed seed and
// returns its exit status and output, cut into the report's sections
// (before the first heading: the list of checks), and results.json.
func auditRun(t *testing.T, pkg string) (code int, out string, sections map[string]string, results gradeResults) {
	t.Helper()
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	code = run(context.Background(), []string{"audit", "--pkg", pkg, "--seed", "5", "--results", dir}, &stdout, &stderr)
	out = stdout.String()
	sections = map[string]string{}
	heading := ""
	for _, part := range strings.Split(out, "\n── ") {
		title, body, _ := strings.Cut(part, "\n")
		for _, h := range []string{auditMoney, auditContract, auditUnseen} {
			if title == h {
				heading = h
				sections[h] += body
			}
		}
		if heading == "" {
			sections[""] += part
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatalf("no results.json (exit %d): %v\n%s%s", code, err, out, stderr.String())
	}
	if err := json.Unmarshal(raw, &results); err != nil {
		t.Fatal(err)
	}
	return code, out, sections, results
}

// blocks cuts a section into its checks' blocks, by check ID.
func blocks(section string) map[string]string {
	out := map[string]string{}
	for _, b := range strings.Split(section, "\n\n") {
		fields := strings.Fields(b)
		for i, f := range fields {
			if f == "FAIL" || f == "RUN" {
				if i+1 < len(fields) {
					out[fields[i+1]] = b
				}
				break
			}
		}
	}
	return out
}

// The in-memory middleware: its money findings are named under money
// safety, its plain-text errors and other header name under contract
// differences only, and what a map in memory hides from the lab under
// could not observe, never as a failure.
func TestAudit_NaiveExampleMoneyApartFromContractApartFromUnseen(t *testing.T) {
	code, out, sections, results := auditRun(t, "idemlab/audit/examples/naive")
	if code != 1 || results.Valid != false {
		t.Fatalf("exit %d, valid %v; want 1, false:\n%s", code, results.Valid, out)
	}
	money, contract, unseen := blocks(sections[auditMoney]), blocks(sections[auditContract]), blocks(sections[auditUnseen])
	for id, harm := range map[string]grader.Harm{
		"S1.concurrent-duplicates": grader.Double,
		"S3.retry-during-original": grader.Double,
		"S5.customers-scoped":      grader.Leak,
		"S4.replay-byte-identical": grader.WrongAnswer,
		"S6.crash-recovery":        grader.Double,
	} {
		if !strings.Contains(money[id], "money     ✗ "+string(harm)) {
			t.Errorf("money safety does not name %s as %s:\n%s", id, harm, sections[auditMoney])
		}
	}
	for _, id := range []string{"S1.missing-key", "S4.replay-marker-only-on-replays"} {
		if _, ok := contract[id]; !ok {
			t.Errorf("contract differences do not list %s:\n%s", id, sections[auditContract])
		}
		if _, ok := money[id]; ok {
			t.Errorf("%s, a contract difference, is listed as a money finding", id)
		}
	}
	if strings.Contains(sections[auditContract], "money     ✗") {
		t.Errorf("a money finding under contract differences:\n%s", sections[auditContract])
	}
	if !strings.Contains(unseen["S1.fail-closed"], "could not observe the key store") {
		t.Errorf("S1.fail-closed does not say it could not observe the key store:\n%s", out)
	}
	if !strings.Contains(unseen["S5.purge-bounded"], "could not observe the key table") {
		t.Errorf("S5.purge-bounded does not say it could not observe the key table:\n%s", out)
	}
	if results.Money == 0 || results.Unknown == 0 || results.Money == results.Failed {
		t.Errorf("results.json counts %d money failures of %d, %d could not run", results.Money, results.Failed, results.Unknown)
	}
}

// The final design as a middleware, its key completed in the
// transaction that moves the money: nothing fails (a check may still be
// unable to hold an original in flight on a busy machine).
func TestAudit_FinalExampleIsClean(t *testing.T) {
	code, out, sections, results := auditRun(t, "idemlab/audit/examples/final")
	if results.Failed != 0 || sections[auditMoney] != "" || sections[auditContract] != "" {
		t.Fatalf("%d checks failed:\n%s", results.Failed, out)
	}
	if strings.Contains(sections[auditUnseen], "S1.replicas") {
		t.Errorf("S1.replicas could not run: the audit's replicas are its own binary's\n%s", out)
	}
	want := 0
	if results.Unknown > 0 {
		want = 2
	}
	if code != want {
		t.Fatalf("exit %d with %d checks that could not run, want %d", code, results.Unknown, want)
	}
}

// transactionBoundary are the checks a middleware fails when it completes
// its key after the handler committed the money on its own: a crash, a
// store failure or a lease that runs out between the two commits leaves
// the money moved and the key in progress.
var transactionBoundary = map[string]bool{
	"S3.completed-with-the-money":     true,
	"S4.answer-stored-with-the-money": true,
	"S6.crash-recovery":               true,
	"S6.late-original-fenced":         true,
	"S6.day-replay-through-faults":    true,
}

// The same design, completing its key after the handler's own commit:
// money findings there, and nowhere else; a crash right after the
// handler's commit is one.
func TestAudit_AfterCommitExampleFailsOnlyAtTheTransactionBoundary(t *testing.T) {
	code, out, sections, results := auditRun(t, "idemlab/audit/examples/aftercommit")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, c := range results.Checks {
		if c.Result == "fail" && !transactionBoundary[c.ID] {
			t.Errorf("%s failed (harm %q): %s", c.ID, c.Harm, c.Detail)
		}
	}
	if !strings.Contains(blocks(sections[auditMoney])["S6.crash-recovery"], "money     ✗ double") {
		t.Errorf("no double after a crash right after the handler's commit:\n%s", out)
	}
}

func TestAudit_NeedsAnAdapterThatBuilds(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"audit"}, &out, &errb); code != 2 {
		t.Fatalf("lab audit without --pkg exited %d, want 2: %s", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"audit", "--pkg", "idemlab/kit/clock"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "does not build into an audit") {
		t.Fatalf("lab audit of a package without New exited %d, want 2: %s", code, errb.String())
	}
}

// auditSection is the whole of the report's separation: a harm is money,
// a failure without one is the contract, anything else was not seen.
func TestAuditSection_MoneyContractUnseen(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&grader.Failure{Harm: grader.Double}, auditMoney},
		{&grader.Failure{Contract: &grader.Failure{}, Harm: grader.Lost}, auditMoney},
		{&grader.Failure{Reconciled: true}, auditContract},
		{&grader.Unobserved{What: "the key table"}, auditUnseen},
		{errors.New("the check panicked"), auditUnseen},
	} {
		if got := auditSection(grader.Result{Err: tt.err}); got != tt.want {
			t.Errorf("%v: section %q, want %q", tt.err, got, tt.want)
		}
	}
}
