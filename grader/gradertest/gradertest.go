// Package gradertest is the grader's go test glue: the TestMain and the
// test of every stage. It lives apart from package grader so that the lab
// command, which links the grader, does not link the testing package.
package gradertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/labdb"
)

// Main is every stage's TestMain. Run normally, it runs the tests. Asked
// to serve (targets.IsChild: lab serve, lab grade and the crash checks
// start the test binary with IDEMLAB_SERVE set), it serves the subject in
// lab mode instead, until it is stopped.
//
// A binary that tests several subjects (the ladder test) passes them
// all; IDEMLAB_SUBJECT then says which one to serve, and the crash checks
// can start any of them as a child process (see grader.T.OnChild).
func Main(m *testing.M, subjects ...grader.Subject) {
	if targets.IsChild() {
		os.Exit(targets.ServeChild(subjects...))
	}
	targets.CanServe(subjects...)
	// A check's server is gone when its check ends: its database is
	// emptied for the next check's, not dropped and made anew.
	dropKept := labdb.ReuseDatabases()
	code := m.Run()
	if err := dropKept(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "lab: could not drop the checks' databases: %v\n", err)
	}
	os.Exit(code)
}

// TestStage runs every check of stages 0..subject.Stage against the
// subject, each as a subtest named by its ID, so that RUN=S3.x (or go
// test -run) picks one. It prints the seed; SEED=n repeats a run.
func TestStage(t *testing.T, subject grader.Subject) {
	seed, err := grader.RunSeed()
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("RUN")
	t.Logf("seed %d (repeat with SEED=%d)", seed, seed)
	ran := 0
	for _, c := range grader.For(subject) {
		if only != "" && !strings.Contains(c.ID, only) {
			continue
		}
		ran++
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			r := grader.RunCheck(context.Background(), subject, c, seed, targets.InProcess)
			reproduce := Reproduce(subject, seed, c.ID)
			if err := grader.WriteTimeline(&r, grader.TimelineDir(), reproduce); err != nil {
				t.Log(err)
			}
			if !r.Passed() {
				t.Error("\n" + grader.FormatColor(r, reproduce, os.Getenv(grader.ColorEnv) == "1"))
			}
		})
	}
	if ran == 0 {
		t.Fatalf("RUN=%q matches no check of stage %d", only, subject.Stage)
	}
}

// Reproduce is the command that runs check id against subject again with
// seed: the make target that runs the subject's checks (make stage-N for
// the student's stage, make solution-N for a reference solution), with
// scripts/pg-cluster.sh in front when the checks ran on a throwaway
// PostgreSQL cluster: without it, the same seed runs on SQLite, where a
// failure of PostgreSQL's may not show.
func Reproduce(subject grader.Subject, seed uint64, id string) string {
	target := "stage"
	if strings.HasPrefix(subject.Name, "solutions/") {
		target = "solution"
	}
	return fmt.Sprintf("%smake %s-%d SEED=%d RUN=%s", labdb.AgainPrefix(), target, subject.Stage, seed, id)
}
