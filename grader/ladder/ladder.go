// Package ladder proves the stage ladder holds (docs/grader.md): for every
// stage N, solution N passes every check of stages 0..N; solution N-1 and
// the untouched scaffold N each fail at least one stage-N check (so every
// stage teaches something a check can see); the scaffold passes every
// earlier check (so a student starts from working code); the stage-N
// checks that solution N-1 passes are exactly the guards the catalogue
// declares (grader.Check.Guard); and every mutant, a deliberately broken
// solution, is caught by the check named for its bug.
package ladder

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"idemlab/grader"
	"idemlab/grader/targets"
)

// Rung is one stage: its reference solution and its student scaffold.
type Rung struct {
	Stage    int
	Solution grader.Subject
	Scaffold grader.Subject
}

// Cell is the outcome of running some checks against one subject.
type Cell struct {
	Subject string
	Stage   int
	Checks  []string
	// Failed are the checks that failed with evidence (grader.Result.Caught).
	Failed []string
	// Broken are the checks that could not run at all: a server that did
	// not start, a check that panicked or timed out. They prove nothing
	// either way, so the ladder treats them as errors.
	Broken []string
	Errors map[string]string
}

// Run runs checks against subject, several at a time, and reports which failed.
func Run(ctx context.Context, subject grader.Subject, checks []grader.Check, seed uint64) Cell {
	cell := Cell{Subject: subject.Name, Stage: subject.Stage, Errors: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, c := range checks {
		cell.Checks = append(cell.Checks, c.ID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := grader.RunCheck(ctx, subject, c, seed, targets.InProcess)
			if r.Passed() {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if r.Caught() {
				cell.Failed = append(cell.Failed, c.ID)
			} else {
				cell.Broken = append(cell.Broken, c.ID)
			}
			cell.Errors[c.ID] = grader.Format(r, fmt.Sprintf("SEED=%d", seed))
		}()
	}
	wg.Wait()
	sort.Strings(cell.Failed)
	sort.Strings(cell.Broken)
	return cell
}

// OfStage returns the checks of subject's own stage that apply to it.
func OfStage(subject grader.Subject) []grader.Check {
	var out []grader.Check
	for _, c := range grader.For(subject) {
		if c.Stage == subject.Stage {
			out = append(out, c)
		}
	}
	return out
}

// Before returns the checks of stages before subject's that apply to it.
func Before(subject grader.Subject) []grader.Check {
	var out []grader.Check
	for _, c := range grader.For(subject) {
		if c.Stage < subject.Stage {
			out = append(out, c)
		}
	}
	return out
}

// PrintMatrix writes the ladder as a table: one row per stage, one column
// per subject, "pass" or the number of stage-N checks that failed.
func PrintMatrix(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			fmt.Fprintf(&b, "%-*s  ", widths[i], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// Guards returns the checks among checks that the catalogue declares
// guards (grader.Check.Guard): stage-N checks that solution N-1 passes by
// design.
func Guards(checks []grader.Check) []grader.Check {
	var out []grader.Check
	for _, c := range checks {
		if c.Guard != "" {
			out = append(out, c)
		}
	}
	return out
}

// CompareGuards holds what solution N-1 did with stage N's checks (below,
// a run of checks) to the guards the catalogue declares among them. It
// returns a sentence for each check that passed without being declared a
// guard (a check that stopped catching its stage's bug passes just so),
// and for each declared guard that failed (it is then no guard). A check
// that could not run proves nothing either way: it is left to the caller,
// which reports it as broken.
func CompareGuards(checks []grader.Check, below Cell) []string {
	var out []string
	for _, c := range checks {
		if slices.Contains(below.Broken, c.ID) {
			continue
		}
		failed := slices.Contains(below.Failed, c.ID)
		switch {
		case !failed && c.Guard == "":
			out = append(out, fmt.Sprintf("%s passes on %s and is not declared a guard: either it no longer catches the bug of stage %d "+
				"it was written for (make it catch it again), or the stage before passes it by design (say why in its Guard, grader/catalogue.go)",
				c.ID, below.Subject, c.Stage))
		case failed && c.Guard != "":
			out = append(out, fmt.Sprintf("%s is declared a guard (%s), and fails on %s: it is no guard. "+
				"Drop its Guard if the stage before should fail it, or read its failure:\n%s",
				c.ID, c.Guard, below.Subject, below.Errors[c.ID]))
		}
	}
	return out
}

// PrintGuards writes guards one a line: the check, and why the stage
// before passes it by design.
func PrintGuards(w io.Writer, guards []grader.Check) {
	width := 0
	for _, c := range guards {
		width = max(width, len(c.ID))
	}
	for _, c := range guards {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.ID, c.Guard)
	}
}
