package dayplan

import (
	"slices"
	"testing"
)

// A shared key is an earlier operation's key of another customer, never
// the same customer's (that would be a retry or an edit), and the plan's
// command line asks for it again.
func TestGenerate_SharedKeys(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.SharedKeyRate = 0.1 })
	owner := map[string]string{}
	shared := 0
	for _, op := range plan.Ops {
		first, seen := owner[op.Key]
		switch {
		case !seen:
			owner[op.Key] = op.Customer
		case first == op.Customer:
			t.Errorf("%s reuses a key of its own customer %s", op.Op, op.Customer)
		default:
			shared++
		}
	}
	if shared < 20 || shared > 60 {
		t.Errorf("%d operations with another customer's key of 400 at a rate of 0.1", shared)
	}
	if got := plan.Header.Command; got != "lab gen --seed 7 --ops 400 --shared-key-rate 0.1" {
		t.Errorf("Command() = %q: it must reproduce the shared-key rate", got)
	}
}

// A day with crashes names one of the server's crash points before some
// operations, and the plan's command line asks for them again.
func TestGenerate_Crashes(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.CrashRate = 0.05 })
	points := map[string]int{}
	for _, op := range plan.Ops {
		if op.Fate.Crash != "" {
			points[op.Fate.Crash]++
		}
	}
	if n := plan.Crashes(); n < 8 || n > 35 || len(points) != len(crashPoints) {
		t.Errorf("%d crashes of 400 at a rate of 0.05, at %v; want every crash point", n, points)
	}
	for p := range points {
		if !slices.Contains(crashPoints, p) {
			t.Errorf("crash point %q is not one of %v", p, crashPoints)
		}
	}
	if got := plan.Header.Command; got != "lab gen --seed 7 --ops 400 --crash-rate 0.05" {
		t.Errorf("Command() = %q: it must reproduce the crash rate", got)
	}
}
