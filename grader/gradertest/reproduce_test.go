package gradertest

import (
	"testing"

	"idemlab/grader"
	"idemlab/kit/labdb"
)

// TestReproduce_SaysWhichEngine: under scripts/pg-cluster.sh the reproduce
// line starts with it, since the same seed without it runs on SQLite; with
// a cluster of one's own (only the URL set) or on SQLite it does not. Run
// by lab started in a stage's folder (labdb.EnvRootFrom), it goes to the
// checkout's root first, where make finds its targets.
func TestReproduce_SaysWhichEngine(t *testing.T) {
	stage := grader.Subject{Stage: 8, Name: "stages/stage8"}
	for _, c := range []struct {
		url, throwaway, from, want string
	}{
		{"", "", "", "make stage-8 SEED=7 RUN=S8.two-keys"},
		{"postgres://x@127.0.0.1:5432/postgres", "", "", "make stage-8 SEED=7 RUN=S8.two-keys"},
		{"postgres://x@127.0.0.1:5432/postgres", "1", "", "scripts/pg-cluster.sh make stage-8 SEED=7 RUN=S8.two-keys"},
		{"", "1", "", "make stage-8 SEED=7 RUN=S8.two-keys"},
		{"", "", "../..", "cd ../.. && make stage-8 SEED=7 RUN=S8.two-keys"},
		{"postgres://x@127.0.0.1:5432/postgres", "1", "../..", "cd ../.. && scripts/pg-cluster.sh make stage-8 SEED=7 RUN=S8.two-keys"},
	} {
		t.Setenv(labdb.EnvURL, c.url)
		t.Setenv(labdb.EnvThrowaway, c.throwaway)
		t.Setenv(labdb.EnvRootFrom, c.from)
		if got := Reproduce(stage, 7, "S8.two-keys"); got != c.want {
			t.Errorf("URL %q, throwaway %q, from %q: %q, want %q", c.url, c.throwaway, c.from, got, c.want)
		}
	}
}
