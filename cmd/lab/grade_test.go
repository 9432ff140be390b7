package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	code := run(ctx, []string{"grade", "--stage", "1", "--seed", "9", "--run", "S1.missing-key", "--results", results}, &out, &errb)
	if code != 1 {
		t.Fatalf("grading the untouched stage 1 scaffold exited %d, want 1:\n%s", code, out.String())
	}
	for _, want := range []string{"FAIL S1.missing-key", "docs/lessons/01-claim.md", "reproduce lab grade --stage 1 --seed 9 --run S1.missing-key", "0 passed, 1 failed"} {
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
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Valid != false || res.Failed != 1 {
		t.Fatalf("results.json = %s", raw)
	}
}

func TestGrade_URLNeedsAdminToken(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"grade", "--stage", "1", "--url", "http://127.0.0.1:1"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errb.String())
	}
}
