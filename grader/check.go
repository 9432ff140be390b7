// Package grader is idemlab's catalogue of black-box checks and what runs
// them: each stage's go test (against an in-process server), lab grade
// (against a running server), lab audit (against a middleware wrapped
// around the naive handlers) and the ladder test.
//
// A check attacks the HTTP contract of docs/api.md the way networks and
// processes fail, and on failure says what was sent, what came back, what
// was expected, why it matters for money, and how to reproduce it with the
// same seed. Every input (customers, accounts, amounts, keys) is drawn
// from the check's seed.
//
// The checks are built from the packages beside this one, each a role:
// dayplan and faultnet (the traffic and its faults), targets (the server
// under test), history (what was observed), judging (harms and evidence)
// and replay (a day of traffic); docs/grader.md has the map.
package grader

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"idemlab/grader/targets"
	"idemlab/kit/problem"
)

// Check is one claim about a server, with the code that tests it.
type Check struct {
	// ID is "S<stage>.<name>", e.g. S3.retry-during-original.
	ID string
	// Stage is the first stage that must pass it.
	Stage int
	// Claim is one line: what a correct server does.
	Claim string
	// Lesson is the lesson section that teaches it.
	Lesson string
	// Why says what goes wrong with money when the claim is false.
	Why string
	// Guard, when set, makes the check a guard: it says, for a student,
	// why the stage before passes it by design. A guard keeps the stage's
	// new idea from overshooting (a fingerprint so strict that a reordered
	// retry is refused) rather than demand what the stage before lacks.
	// The ladder test fails when solution N-1 passes a check that is no
	// guard (it may have stopped catching its stage's bug), or fails one
	// declared a guard.
	Guard string
	// Tally marks a check of stage 0's Tally exercise rather than of the
	// server: it runs only for a subject that has a Tally.
	Tally bool
	// Run tests the claim; it returns a *Failure (or another error if the
	// check itself could not run).
	Run func(t *T) error
}

// The problem types the checks expect (docs/api.md, "Problem types").
var (
	pMissingKey           = problem.MissingIdempotencyKey.URI()
	pInvalidKey           = problem.InvalidIdempotencyKey.URI()
	pDuplicate            = problem.DuplicateRequest.URI()
	pInProgress           = problem.RequestInProgress.URI()
	pKeyReused            = problem.IdempotencyKeyReused.URI()
	pInsufficient         = problem.InsufficientFunds.URI()
	pUnavailable          = problem.Unavailable.URI()
	pForbidden            = problem.Forbidden.URI()
	pPreconditionFailed   = problem.PreconditionFailed.URI()
	pPreconditionRequired = problem.PreconditionRequired.URI()
	pDailyLimit           = problem.DailyLimitExceeded.URI()
	pDuplicateReference   = problem.DuplicateReference.URI()
)

// checksByID indexes the catalogue (catalogue.go) by ID.
var checksByID = indexByID(catalogue)

// indexByID maps each check's ID to it; it panics on an ID that is not
// unique or not named for the check's stage, and on a guard of stage 0,
// which has no stage before, so that a catalogue with any of these
// mistakes cannot start.
func indexByID(checks []Check) map[string]Check {
	byID := make(map[string]Check, len(checks))
	for _, c := range checks {
		if _, dup := byID[c.ID]; dup {
			panic("grader: duplicate check " + c.ID)
		}
		if !strings.HasPrefix(c.ID, fmt.Sprintf("S%d.", c.Stage)) {
			panic("grader: check " + c.ID + " is not named for its stage")
		}
		if c.Guard != "" && c.Stage == 0 {
			panic("grader: check " + c.ID + " is a guard, and stage 0 has no stage before to pass it")
		}
		byID[c.ID] = c
	}
	return byID
}

// Catalogue returns every check, by stage, and within a stage in the
// order its lesson teaches them (the order they are listed in): a student
// told to start with the first failing check starts where the lesson does.
func Catalogue() []Check {
	out := slices.Clone(catalogue)
	slices.SortStableFunc(out, func(a, b Check) int { return a.Stage - b.Stage })
	return out
}

// Upto returns the checks of stages 0..n.
func Upto(n int) []Check {
	var out []Check
	for _, c := range Catalogue() {
		if c.Stage <= n {
			out = append(out, c)
		}
	}
	return out
}

// For returns the checks of stages 0..subject.Stage that apply to subject:
// the Tally checks only if it has a Tally.
func For(subject targets.Subject) []Check {
	var out []Check
	for _, c := range Upto(subject.Stage) {
		if !c.Tally || subject.Tally != nil {
			out = append(out, c)
		}
	}
	return out
}

// Lookup finds a check by ID.
func Lookup(id string) (Check, bool) {
	c, ok := checksByID[id]
	return c, ok
}

// CheckSeed derives a check's own seed from a run's seed, so that running
// one check alone (RUN=…) draws the same inputs as in the full run.
func CheckSeed(run uint64, id string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", run, id)
	return h.Sum64()
}

// Subject is what is being graded (targets.Subject): named here too, so
// that a stage's stage_test.go imports the grader alone.
type Subject = targets.Subject
