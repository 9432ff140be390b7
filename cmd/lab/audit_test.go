package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/problem"
)

// auditRun runs lab audit on the adapter at pkg with a fixed seed (and
// more flags, if given, such as --run) and returns its exit status and
// output, cut into the report's sections (before the first heading: the
// list of checks), and results.json.
func auditRun(t *testing.T, pkg string, flags ...string) (code int, out string, sections map[string]string, results gradeResults) {
	t.Helper()
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	args := append([]string{"audit", "--pkg", pkg, "--seed", "5", "--results", dir}, flags...)
	code = run(context.Background(), args, &stdout, &stderr)
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
	readHistory(t, filepath.Join(dir, "history.jsonl"))
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
	for id, harm := range map[string]judging.Harm{
		"S1.concurrent-duplicates": judging.Double,
		"S3.retry-during-original": judging.Double,
		"S5.customers-scoped":      judging.Leak,
		"S4.replay-byte-identical": judging.WrongAnswer,
		"S6.crash-recovery":        judging.Double,
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
	if len(results.NotRun) != results.Unknown || !slices.Contains(results.NotRun, "S1.fail-closed") || !slices.Contains(results.NotRun, "S5.purge-bounded") {
		t.Errorf("results.json names %v as the %d checks that could not run", results.NotRun, results.Unknown)
	}
	if c := results.Counts; c.DoubleApplied < 3 || c.CrossCustomerLeaks == 0 || c.WrongAnswers == 0 || c.ContractDifferences == 0 {
		t.Errorf("results.json counts %+v: want the three doubles, the leak, the wrong answer and the contract differences above", c)
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

// moneyFinding audits the adapter at pkg with check id alone and returns
// the check's block under money safety; it fails the test unless the
// block names harm.
func moneyFinding(t *testing.T, pkg, id string, harm judging.Harm) string {
	t.Helper()
	_, out, sections, _ := auditRun(t, pkg, "--run", id)
	b := blocks(sections[auditMoney])[id]
	if !strings.Contains(b, "money     ✗ "+string(harm)) {
		t.Fatalf("%s names no %s under money safety:\n%s", id, harm, out)
	}
	return b
}

// A middleware that replays every answer faithfully and never marks a
// replay: the marker is the contract's, and one check's (a contract
// difference); the money is judged from the books, and no check finds it
// harmed.
func TestAudit_NoMarkerExampleHasNoMoneyFinding(t *testing.T) {
	code, out, sections, results := auditRun(t, "idemlab/audit/examples/nomarker")
	if code == 1 || results.Money != 0 || sections[auditMoney] != "" {
		t.Fatalf("exit %d, %d money findings, want none:\n%s", code, results.Money, out)
	}
	if _, ok := blocks(sections[auditContract])["S4.replay-marker-only-on-replays"]; !ok {
		t.Errorf("the missing marker is not a contract difference of S4.replay-marker-only-on-replays:\n%s", out)
	}
}

// A middleware whose keys are not scoped to the customer, and which
// replays before the handler checks whose account a body names: the
// second customer is handed the first one's transfer when it sends after
// the first completed (at once, it is told to wait). The leak is the
// money finding, and the refusals met on the way are listed beside it.
func TestAudit_SharedScopeExampleLeaksOneAfterTheOther(t *testing.T) {
	b := moneyFinding(t, "idemlab/audit/examples/sharedscope", "S5.customers-scoped", judging.Leak)
	evidence, _, _ := strings.Cut(b, "contract  ✗")
	if !strings.Contains(evidence, "one after the other") {
		t.Errorf("the leak is not the one-after-the-other probe's:\n%s", b)
	}
	if !strings.Contains(b, "contract  ✗ also, beside the money finding") {
		t.Errorf("the refusals met before the leak are not listed beside it:\n%s", b)
	}
}

// A middleware whose lock on a key outlives a successful request and
// answers a plain-text 409: the plain 409 during the original is a
// contract difference, and the check goes on to what it exists for: after
// the original answered, every retry is still refused, and its client
// never learns the result of an operation that executed.
func TestAudit_HeldLockExampleLeavesNoUsableAnswer(t *testing.T) {
	b := moneyFinding(t, "idemlab/audit/examples/heldlock", "S3.retry-during-original", judging.NoUsableAnswer)
	if !strings.Contains(b, "contract  ✗ also") || !strings.Contains(b, "expected  409 "+problem.RequestInProgress.URI()) {
		t.Errorf("the plain-text 409 is not listed beside the money finding:\n%s", b)
	}
}

// A middleware that tells every request of a key after the first 409
// request-in-progress, for good (audit/testdata/every409): the original
// executes and its key is completed in the lab's table, so the key is not
// stuck; the client can never learn the result of money that moved. The
// 409's problem type does not make it a stuck key: the key table does.
func TestAudit_Every409LeavesNoUsableAnswer(t *testing.T) {
	b := moneyFinding(t, "idemlab/audit/testdata/every409", "S3.retry-during-original", judging.NoUsableAnswer)
	if !strings.Contains(b, "state: completed") {
		t.Errorf("the finding does not show the key row completed:\n%s", b)
	}
}

// every409's refused transfer and its payment failed with the key store
// never ran, and every retry of them is told to wait, three times after
// Retry-After too. The key table says which harm that is, as for an
// operation that executed: the refusal is stored, its key completed (no
// usable answer: the client never learns it was refused); the failed
// claim's key is still in progress (a stuck key). Before, both were a
// stuck key from the 409 alone.
func TestAudit_Every409HoldsTheKeysOfPaymentsThatNeverRan(t *testing.T) {
	for id, harm := range map[string]judging.Harm{
		"S4.insufficient-funds-replayed": judging.NoUsableAnswer,
		"S6.outage-mid-request":          judging.StuckKey,
	} {
		moneyFinding(t, "idemlab/audit/testdata/every409", id, harm)
	}
}

// A middleware that scopes keys by the client's remote address
// (audit/testdata/remoteaddr) takes a retry over a new connection for a
// new request: under another customer's expired lease of the same key
// string, S6.takeover-own-key's retry of a live lease executes, once, and
// is told 201. The money is right (the crashed original moved nothing);
// the call to the core under a live lease is a contract difference, not
// money moved though refused.
func TestAudit_RemoteAddrRetryToldCreatedIsNotRefused(t *testing.T) {
	_, out, sections, _ := auditRun(t, "idemlab/audit/testdata/remoteaddr", "--run", "S6.takeover-own-key", "--seed", "1")
	if _, ok := blocks(sections[auditMoney])["S6.takeover-own-key"]; ok {
		t.Fatalf("a retry told 201 and executed once is a money finding:\n%s", out)
	}
	if _, ok := blocks(sections[auditContract])["S6.takeover-own-key"]; !ok {
		t.Errorf("the call to the core under a live lease is not a contract difference:\n%s", out)
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
		{&judging.Failure{Harm: judging.Double}, auditMoney},
		{&judging.Failure{Contract: &judging.Failure{}, Harm: judging.Lost}, auditMoney},
		{&judging.Failure{Reconciled: true}, auditContract},
		{&judging.Unobserved{What: "the key table"}, auditUnseen},
		{errors.New("the check panicked"), auditUnseen},
	} {
		if got := auditSection(grader.Result{Err: tt.err}); got != tt.want {
			t.Errorf("%v: section %q, want %q", tt.err, got, tt.want)
		}
	}
}

// A middleware that keeps only its successes frees the key of a refusal
// for insufficient funds: the retry of a client that lost the refusal
// executes once money has come in, money its client was told would not
// move, and the audit reads it from the books.
func TestAudit_SuccessOnlyExampleMovesMoneyThoughRefused(t *testing.T) {
	moneyFinding(t, "idemlab/audit/examples/successonly", "S4.insufficient-funds-replayed", judging.MovedThoughRefused)
}
