package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"idemlab/kit/labdb"
	"idemlab/kit/pgdb"
)

func TestGrade_SolutionPassesItsScaffoldFails(t *testing.T) {
	ctx := context.Background()
	var out, errb strings.Builder
	if code := run(ctx, []string{"grade", "--stage", "1", "--solution", "--seed", "9", "--run", "S1.missing-key"}, &out, &errb); code != 0 {
		t.Fatalf("grading solution 1 exited %d:\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("no closing count:\n%s", out.String())
	}

	out.Reset()
	results := t.TempDir()
	code := run(ctx, []string{"grade", "--stage", "1", "--seed", "9", "--run", "S1.concurrent-duplicates", "--results", results}, &out, &errb)
	if code != 1 {
		t.Fatalf("grading the untouched stage 1 scaffold exited %d, want 1:\n%s", code, out.String())
	}
	for _, want := range []string{"FAIL S1.concurrent-duplicates", "docs/lessons/01-claim.md", "reproduce " + labdb.AgainPrefix() + "make grade STAGE=1 SEED=9 RUN=S1.concurrent-duplicates", "0 passed, 1 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	raw, err := os.ReadFile(filepath.Join(results, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Valid  any `json:"valid"`
		Failed int `json:"failed"`
		Checks []struct {
			Timeline string `json:"timeline"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Valid != false || res.Failed != 1 {
		t.Fatalf("results.json = %s", raw)
	}
	// The copies paid again and again: the double's timeline lies beside
	// results.json, and the failure names it.
	if len(res.Checks) != 1 || res.Checks[0].Timeline == "" {
		t.Fatalf("results.json names no timeline: %s", raw)
	}
	page := filepath.Join(results, res.Checks[0].Timeline)
	if _, err := os.Stat(page); err != nil {
		t.Errorf("the timeline results.json names: %v", err)
	}
	if !strings.Contains(out.String(), "timeline: ") || !strings.Contains(out.String(), res.Checks[0].Timeline) {
		t.Errorf("the failure does not print its timeline's path:\n%s", out.String())
	}
}

func TestGrade_URLNeedsAdminToken(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"grade", "--stage", "1", "--url", "http://127.0.0.1:1"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errb.String())
	}
}

func TestFreshDB_DefaultsToTheClusterAndRefusesAFile(t *testing.T) {
	const cluster = "postgres://idemlab@127.0.0.1:5432/lab"
	for _, c := range []struct {
		flag, env, want string
	}{
		{"", "", ":memory:"},
		{"", cluster, cluster},
		{":memory:", cluster, ":memory:"},
		{cluster, "", cluster},
		{"postgresql://idemlab@127.0.0.1/lab", "", "postgresql://idemlab@127.0.0.1/lab"},
	} {
		t.Setenv(labdb.EnvURL, c.env)
		if got, err := freshDB(c.flag); err != nil || got != c.want {
			t.Errorf("--db %q with $%s=%q: %q, %v; want %q", c.flag, labdb.EnvURL, c.env, got, err, c.want)
		}
	}
	for _, args := range [][]string{
		{"grade", "--stage", "1", "--solution", "--db", "tmp/lab.db"},
		{"replay", "--log", "datasets/day-small.plan.jsonl", "--solution", "--db", "tmp/lab.db"},
		{"demo", "--plain", "--db", "tmp/lab.db"},
		{"grade", "--stage", "1", "--url", "http://127.0.0.1:1", "--admin-token", "adm_x", "--db", ":memory:"},
		{"replay", "--log", "datasets/day-small.plan.jsonl", "--url", "http://127.0.0.1:1", "--admin-token", "adm_x", "--db", ":memory:"},
	} {
		if code, _, errs := runLabCommand(t, args...); code != 2 || !strings.Contains(errs, "--db ") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and why --db is refused", strings.Join(args, " "), code, errs)
		}
	}
}

// TestGrade_PassesItsDBToTheServers catches a --db that never reaches the
// servers: a cluster no one listens on must stop every check.
func TestGrade_PassesItsDBToTheServers(t *testing.T) {
	code, out, errs := runLabCommand(t, "grade", "--stage", "1", "--solution", "--seed", "9", "--run", "S1.sequential",
		"--db", "postgres://idemlab@127.0.0.1:1/none?connect_timeout=2")
	if code != 2 || !strings.Contains(out, "1 could not run") {
		t.Fatalf("grading on a cluster that is not there: exit %d, want 2 and a check that could not run:\n%s%s", code, out, errs)
	}
}

// TestGrade_OnPostgreSQLLeavesTheURLsTablesAlone grades on the cluster
// $IDEMLAB_DATABASE_URL names (make test-pg starts one): the checks pass
// on a database of their own, and the database the URL names keeps its
// tables, which a reset there would have dropped.
func TestGrade_OnPostgreSQLLeavesTheURLsTablesAlone(t *testing.T) {
	cluster := os.Getenv(labdb.EnvURL)
	if cluster == "" {
		t.Skip("IDEMLAB_DATABASE_URL is not set: make test-pg runs this on a throwaway PostgreSQL cluster")
	}
	ctx := t.Context()
	mine, drop, err := pgdb.CreateDatabase(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	defer drop(context.Background())
	db, err := labdb.Open(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE kept (note TEXT); INSERT INTO kept VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runLabCommand(t, "grade", "--stage", "1", "--solution", "--seed", "9", "--run", "S1.sequential", "--db", mine)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("grading solution 1 on PostgreSQL exited %d:\n%s%s", code, out, errs)
	}
	var note string
	if err := db.QueryRowContext(ctx, `SELECT note FROM kept`).Scan(&note); err != nil || note != "mine" {
		t.Fatalf("the URL's own table after grading: %q, %v; want it kept", note, err)
	}
}

func TestGrade_ResultsBundleHoldsEveryAttemptAndTheFindingsCounts(t *testing.T) {
	var out, errb strings.Builder
	dir := t.TempDir()
	// On the stage 1 scaffold: S1.key-forms and S1.same-key-edited-body
	// pay twice, S1.missing-key and S1.invalid-key differ from the
	// contract, S1.distinct-keys-same-body passes.
	code := run(context.Background(), []string{"grade", "--stage", "1", "--seed", "9", "--run", "key", "--results", dir}, &out, &errb)
	if code != 1 {
		t.Fatalf("grading the stage 1 scaffold exited %d, want 1:\n%s%s", code, out.String(), errb.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Counts map[string]int `json:"counts"`
		NotRun []string       `json:"checks_not_run"`
		Checks []struct {
			ID, Result, Harm string
		} `json:"checks"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	lines := readHistory(t, filepath.Join(dir, "history.jsonl"))

	attempts := map[string]int{}
	doubled := map[string]bool{}
	harms := map[string]string{}
	for _, c := range res.Checks {
		harms[c.ID] = c.Harm
		if c.Result == "could not run" {
			t.Errorf("%s could not run:\n%s", c.ID, out.String())
		}
	}
	for _, l := range lines {
		if l.Event == "" {
			attempts[l.Check]++
		}
		// The books' word, in a check that found a double: an operation
		// that ran a second time (a check may run one twice on purpose,
		// under two keys).
		if l.Event == "execution" && l.Count >= 2 && harms[l.Check] == "double" {
			doubled[l.Check+" "+l.Op] = true
		}
	}
	var passed, failed int
	for _, c := range res.Checks {
		if attempts[c.ID] == 0 {
			t.Errorf("history.jsonl holds no attempt of %s (%s)", c.ID, c.Result)
		}
		switch c.Result {
		case "pass":
			passed++
		case "fail":
			failed++
		}
	}
	if passed == 0 || failed == 0 || len(doubled) == 0 {
		t.Fatalf("want a check that passed and one that paid twice: %s", raw)
	}
	if res.NotRun == nil || len(res.NotRun) != 0 {
		t.Errorf("checks_not_run = %v, want none", res.NotRun)
	}
	// Each contract difference is printed once: as the evidence of a
	// failure whose money is right, under "contract" beside another, or
	// in the list of those past the first few ("✗ and N more").
	differences := strings.Count(out.String(), "  money     ✓") + strings.Count(out.String(), "  contract  ✗")
	for _, m := range regexp.MustCompile(`  contract  ✗ and (\d+) more`).FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		differences += n - 1
	}
	want := map[string]int{
		"double_applied":       len(doubled),
		"contract_differences": differences,
	}
	if want["contract_differences"] == 0 {
		t.Fatalf("no contract difference printed:\n%s", out.String())
	}
	for _, name := range []string{"double_applied", "lost_transfers", "told_duplicate", "wrong_answers", "no_usable_answer",
		"stuck_in_progress", "lost_updates", "not_posted", "posted_twice", "posted_unexecuted", "contract_differences"} {
		got, ok := res.Counts[name]
		if !ok || got != want[name] {
			t.Errorf("counts.%s = %d (present: %t), want %d: %s", name, got, ok, want[name], raw)
		}
	}
}

// historyLine is what the test reads of a line of history.jsonl.
type historyLine struct {
	Check string `json:"check"`
	Event string `json:"event"`
	Op    string `json:"op"`
	Count int64  `json:"count"`
}

// readHistory reads history.jsonl at path, a line per attempt or event,
// each naming its check.
func readHistory(t *testing.T, path string) []historyLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the results bundle: %v", err)
	}
	if len(raw) == 0 {
		t.Fatal("history.jsonl is empty: no check's attempts")
	}
	var lines []historyLine
	for i, s := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		var l historyLine
		if err := json.Unmarshal([]byte(s), &l); err != nil || l.Check == "" {
			t.Fatalf("history.jsonl line %d names no check (%v): %s", i+1, err, s)
		}
		lines = append(lines, l)
	}
	return lines
}
