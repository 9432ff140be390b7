package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/grader/scoreboard"
	"idemlab/kit/server"
)

// The scoreboard's default day adds knobs to lab gen's defaults, each the
// only thing that tells a stage from the next: operations sent with
// another customer's key (only stage 5 scopes keys to the customer),
// crashes of the server in the middle of a request (only stage 6's lease
// frees the key they leave in progress), two clerks editing an account's
// settings from one copy (only stage 7's If-Match keeps both changes; the
// stages before serve no settings), and invoices paid again under a new
// key (only stage 8 pays a reference once). Every row's server posts to a
// core ledger the replay reads at the end: only stage 9 tells it of every
// transfer.
const (
	scoreboardSharedKeys   = 0.01
	scoreboardCrashes      = 0.005
	scoreboardInvoices     = 0.1
	scoreboardRepays       = 0.01
	scoreboardSettingsEdit = 0.005
)

// scoreboardLast is the last stage the scoreboard replays, the clean row.
const scoreboardLast = 9

// scoreboardHorizon is the clients' retry horizon on the plan's clock:
// ten minutes, as S6.day-replay-through-faults gives them, instead of the
// published hour, so that a key stuck in progress costs a stage under a
// second of real time instead of four.
const scoreboardHorizon = 10 * time.Minute

func runScoreboard(ctx context.Context, in *invocation) error {
	planPath := in.String("log", "", "the day plan to replay (default: lab gen --seed SEED --ops OPS and the rates below)")
	seed := in.Uint64("seed", 7, "the seed of the default day")
	ops := in.Int("ops", 2000, "how many operations the default day has")
	day := scoreboardParams()
	for _, r := range day.Rates() {
		in.Float64Var(r.Value, r.Flag, *r.Value, "the default day's "+r.Help)
	}
	horizon := in.Duration("horizon", scoreboardHorizon, "the clients' retry horizon on the plan's clock (the published policy's is 1h)")
	clients := in.Int("clients", 1, "operations in flight at once (1 repeats every row, but for which of a double click's two requests wins the race)")
	mine := in.Bool("mine", false, "replay your stages/stageN, built and started, instead of the reference solutions")
	asJSON := in.Bool("json", false, "write the rows as JSON")
	if done, err := in.parse(); done {
		return err
	}
	plan, err := scoreboardDay(*planPath, *seed, *ops, day)
	if err != nil {
		return cannotRun(err)
	}
	var rows []scoreboard.Row
	for n := 0; n <= scoreboardLast; n++ {
		if !*mine && n >= len(solutions) {
			break
		}
		policy := replay.DefaultRetryPolicy()
		policy.Horizon = *horizon
		began := time.Now()
		// A core ledger of the row's own, outside the server: the replay
		// reads its postings at the end.
		_, coreURL, stopCore, err := server.StartCore(ctx)
		if err != nil {
			return cannotRun(err)
		}
		opts := replay.Options{Clients: *clients, Policy: policy, CoreURL: coreURL}
		var run *replay.DayRun
		target := fmt.Sprintf("solutions/stage%d", n)
		if *mine {
			target = fmt.Sprintf("stages/stage%d", n)
			run, err = replayMine(ctx, n, plan, opts, in.stderr)
		} else {
			run, err = replay.InProcess(ctx, solutions[n], plan, nil, opts)
		}
		stopCore()
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		row := scoreboard.NewRow(n, target, replay.ReconcileDay(run.Result))
		row.Elapsed = time.Since(began).Round(time.Millisecond).String()
		rows = append(rows, row)
		fmt.Fprintf(in.stderr, "stage %d: %s in %s\n", n, row.Verdict, row.Elapsed)
	}
	if *asJSON {
		enc := json.NewEncoder(in.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Plan string           `json:"plan"`
			Rows []scoreboard.Row `json:"rows"`
		}{plan.Header.Command, rows})
	}
	fmt.Fprintf(in.stdout, "the day: %s, replayed by %d client(s) at a time, retrying for %s\n\n", plan.Header.Command, *clients, *horizon)
	return scoreboard.Write(in.stdout, rows)
}

// scoreboardDay reads the plan at path, or draws the default day: lab
// gen's defaults with the knobs' rates.
func scoreboardDay(path string, seed uint64, ops int, p dayplan.Params) (*dayplan.Plan, error) {
	if path != "" {
		return readPlan(path)
	}
	p.Ops, p.Reset.Seed = ops, seed
	return dayplan.Generate(seed, p)
}

// scoreboardParams are the default day's parameters: lab gen's, with the
// scoreboard's knobs.
func scoreboardParams() dayplan.Params {
	p := dayplan.DefaultParams(0, 0)
	p.SharedKeyRate, p.CrashRate = scoreboardSharedKeys, scoreboardCrashes
	p.InvoiceRate, p.RepayRate, p.SettingsEditRate = scoreboardInvoices, scoreboardRepays, scoreboardSettingsEdit
	return p
}
