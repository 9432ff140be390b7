package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"idemlab/grader/targets"
)

// shippedDay is the small day in datasets/, checked by S0.tally-shipped.
var shippedDay = dayFiles{dir: "datasets", name: "day-small", seed: 1, ops: 1000}

// dayFiles names the three files of one day: NAME.plan.jsonl, the naive
// server's NAME.access.jsonl and the tally's NAME.answer.json.
type dayFiles struct {
	dir, name string
	seed      uint64
	ops       int
}

func (d dayFiles) path(kind string) string { return filepath.Join(d.dir, d.name+"."+kind) }

func runDatasets(ctx context.Context, in *invocation) error {
	sizes := in.String("sizes", "10000,100000", "the sizes of the large days, in operations")
	shipped := in.Bool("shipped", false, "rewrite the shipped small day in datasets/ instead (its access log gets new times and ids)")
	if done, err := in.parse(); done {
		return err
	}
	root, err := targets.Root()
	if err != nil {
		return err
	}
	var days []dayFiles
	if *shipped {
		days = append(days, shippedDay)
	} else {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return cannotRun(fmt.Errorf("--sizes: %q is not a number of operations", s))
			}
			days = append(days, dayFiles{dir: filepath.Join("datasets", "large"), name: fmt.Sprintf("day-%d", n), seed: uint64(n), ops: n})
		}
	}
	for _, d := range days {
		d.dir = filepath.Join(root, d.dir)
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return err
		}
		if err := makeDay(ctx, d, in.stdout, in.stderr); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	return nil
}

// makeDay generates one day and replays it against the naive server,
// writing its access log and answer key: lab gen, then lab replay.
func makeDay(ctx context.Context, d dayFiles, stdout, stderr io.Writer) error {
	gen := []string{"--seed", strconv.FormatUint(d.seed, 10), "--ops", strconv.Itoa(d.ops), "-o", d.path("plan.jsonl")}
	if err := (command{name: "gen", run: runGen}).invoke(ctx, gen, stdout, stderr); err != nil {
		return err
	}
	replay := []string{"--log", d.path("plan.jsonl"), "--stage", "0", "--solution", "--examples", "0",
		"--access-log", d.path("access.jsonl"), "--answer", d.path("answer.json")}
	err := (command{name: "replay", run: runReplay}).invoke(ctx, replay, io.Discard, stderr)
	if ec, ok := err.(*exitCode); ok && ec.code == 1 {
		return nil // the naive server does not reconcile: that is the point of the day
	}
	return err
}
