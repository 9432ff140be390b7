package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/studentloop"
)

// fakeLoop points the loop's commands at a fresh checkout in a temporary
// folder (the repository's lessons and hints, words and code, copied in) with a runner
// that returns outcome instead of running go test, and at answer as what
// the student types.
func fakeLoop(t *testing.T, outcome studentloop.Outcome, answer string) string {
	t.Helper()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module idemlab\n"), 0o644)
	for _, dir := range []string{"docs/lessons", "docs/hints"} {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		entries, _ := os.ReadDir(filepath.Join("../..", dir))
		for _, e := range entries {
			if raw, err := os.ReadFile(filepath.Join("../..", dir, e.Name())); err == nil {
				os.WriteFile(filepath.Join(root, dir, e.Name()), raw, 0o644)
			}
		}
	}
	for _, dir := range []string{studentloop.StageDir(1), studentloop.SolutionDir(1)} {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "keys.go"), []byte("package stage1\n// "+dir+"\n"), 0o644)
	}
	// The last step of each hint, the code, lies beside the solution.
	for n := range studentloop.Stages {
		path := studentloop.HintCodePath(n)
		if raw, err := os.ReadFile(filepath.Join("../..", path)); err == nil {
			os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)
			os.WriteFile(filepath.Join(root, path), raw, 0o644)
		}
	}
	oldRoot, oldRunner, oldStdin := findRoot, newRunner, stdin
	t.Cleanup(func() { findRoot, newRunner, stdin = oldRoot, oldRunner, oldStdin })
	findRoot = func() (string, error) { return root, nil }
	newRunner = func(string, string, string, bool) studentloop.Runner { return fixedRunner{outcome} }
	stdin = strings.NewReader(answer)
	return root
}

type fixedRunner struct{ o studentloop.Outcome }

func (f fixedRunner) Run(ctx context.Context, stage int, each func(studentloop.CheckResult)) (studentloop.Outcome, error) {
	o := f.o
	o.Stage = stage
	return o, nil
}

var failingS1 = studentloop.Outcome{Seed: "7", Checks: []studentloop.CheckResult{
	{ID: "S0.happy-path", Passed: true},
	{ID: "S1.missing-key", Report: "FAIL S1.missing-key  a transfer without a key gets 400"},
}}

var passingS1 = studentloop.Outcome{Seed: "7", Checks: []studentloop.CheckResult{
	{ID: "S0.happy-path", Passed: true}, {ID: "S1.missing-key", Passed: true},
}}
