package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
	for _, want := range []string{"FAIL S1.concurrent-duplicates", "docs/lessons/01-claim.md", "reproduce make grade STAGE=1 SEED=9 RUN=S1.concurrent-duplicates", "0 passed, 1 failed"} {
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
