package studentloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/kit/labdb"
)

// ProgressFile is where the progress is kept, relative to the root; the
// folder is git-ignored.
const ProgressFile = ".idemlab/progress.json"

// State is where a stage stands.
type State string

// The states of a stage.
const (
	NotStarted    State = "not started"
	DoesNotBuild  State = "does not build"
	Failing       State = "failing"
	Passing       State = "passing"
	CouldNotCheck State = "could not check"
)

// StageProgress is the outcome of the last run of a stage's checks.
type StageProgress struct {
	State State `json:"state"`
	// FirstFailing is the first check in catalogue order that found
	// something against the server; a check that could not run is never it.
	FirstFailing string `json:"first_failing,omitempty"`
	// CouldNotRun are the checks that could not run, in catalogue order,
	// each with what it could not observe.
	CouldNotRun []NotRun  `json:"could_not_run,omitempty"`
	Passed      int       `json:"passed"`
	Total       int       `json:"total"`
	At          time.Time `json:"at"`
	// Engine is the database engine the run's checks ran on: a stage
	// that passes on SQLite may not on PostgreSQL, where writers race.
	Engine labdb.Engine `json:"engine,omitempty"`
	// Focus is the check a run of some of the stage's checks (RUN=…)
	// failed since the stage's last full run: the one the student is
	// working on, and the one a hint is about.
	Focus string `json:"focus,omitempty"`
	// FocusRun is the RUN= of the run that set Focus.
	FocusRun string `json:"focus_run,omitempty"`
	// FirstLesson and FocusLesson are the lesson sections the failures
	// of FirstFailing and Focus pointed to (their reports' lesson line):
	// a hint follows the one of its check when it is not the check's own.
	FirstLesson string `json:"first_lesson,omitempty"`
	FocusLesson string `json:"focus_lesson,omitempty"`
}

// NotRun is a check that could not run at a stage's last run, and what
// it could not observe (its report's "why not").
type NotRun struct {
	ID     string `json:"id"`
	WhyNot string `json:"why_not"`
}

// OnlyCouldNotRun reports whether the stage's last run failed with
// nothing but checks that could not run: nothing against the server, and
// no check to start with.
func (sp StageProgress) OnlyCouldNotRun() bool {
	return sp.State == Failing && sp.FirstFailing == "" && len(sp.CouldNotRun) > 0
}

// Progress is every stage's last outcome and the hint tier reached for
// each check (or stage) a hint was asked for.
type Progress struct {
	Stages map[string]StageProgress `json:"stages"`
	Hints  map[string]int           `json:"hints"`
}

// LoadProgress reads the progress file under root; a missing file is an
// empty progress. It returns an error for a file that is not progress.
func LoadProgress(root string) (*Progress, error) {
	p := &Progress{Stages: map[string]StageProgress{}, Hints: map[string]int{}}
	raw, err := os.ReadFile(filepath.Join(root, ProgressFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to start the count again)", ProgressFile, err)
	}
	if p.Stages == nil {
		p.Stages = map[string]StageProgress{}
	}
	if p.Hints == nil {
		p.Hints = map[string]int{}
	}
	return p, nil
}

// Save writes the progress file under root, through a temporary file so
// that a reader never sees half of it.
func (p *Progress) Save(root string) error {
	path := filepath.Join(root, ProgressFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Stage returns stage n's progress (NotStarted if it never ran).
func (p *Progress) Stage(n int) StageProgress {
	sp, ok := p.Stages[strconv.Itoa(n)]
	if !ok {
		return StageProgress{State: NotStarted}
	}
	return sp
}

// Record stores an outcome as stage n's progress. A run of some of its
// checks (RUN=…) says nothing about the whole stage: it only moves the
// focus, to the check it saw fail, or off a check it saw pass. A check
// that could not run neither takes the focus nor gives it up: it says
// nothing of the server. A check seen to pass, in either kind of run,
// starts its hints again from the first tier: when it fails again, later
// or at a later stage, it fails for another reason, and a student who
// asks should get the idea first, not the code.
func (p *Progress) Record(o Outcome, at time.Time) {
	key := strconv.Itoa(o.Stage)
	for _, c := range o.Checks {
		if c.Passed {
			delete(p.Hints, c.ID)
		}
	}
	if o.Only != "" {
		sp := p.Stage(o.Stage)
		switch first := o.First(); {
		case first.ID != "":
			sp.Focus, sp.FocusRun, sp.FocusLesson = first.ID, o.Only, first.Lesson()
		case slices.ContainsFunc(o.Checks, func(c CheckResult) bool { return c.ID == sp.Focus && c.Passed }):
			sp.Focus, sp.FocusRun, sp.FocusLesson = "", "", ""
		default:
			return
		}
		p.Stages[key] = sp
		return
	}
	var notRun []NotRun
	for _, c := range o.CouldNotRun() {
		notRun = append(notRun, NotRun{ID: c.ID, WhyNot: c.WhyNot()})
	}
	p.Stages[key] = StageProgress{
		State: o.State(), FirstFailing: o.FirstFailing(), FirstLesson: o.First().Lesson(), CouldNotRun: notRun,
		Passed: len(o.Passed()), Total: len(o.Checks), At: at, Engine: o.Engine,
	}
}

// PassesOn reports whether stage n's last run passed on engine.
func (p *Progress) PassesOn(n int, engine labdb.Engine) bool {
	sp := p.Stage(n)
	return sp.State == Passing && sp.Engine == engine
}

// NextTier moves the hint tier of topic (a check ID, or "stageN") one on,
// up to max, and returns it.
func (p *Progress) NextTier(topic string, max int) int {
	t := p.Hints[topic] + 1
	if t > max {
		t = max
	}
	p.Hints[topic] = t
	return t
}

// Current is the stage to work on: the first that does not pass yet.
func (p *Progress) Current() int {
	for n := 0; n < Stages; n++ {
		if p.Stage(n).State != Passing {
			return n
		}
	}
	return Stages - 1
}

// ParseStage reads a stage number from a command line argument.
func ParseStage(arg string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(arg, "stage"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a stage number (0 to %d)", arg, Stages-1)
	}
	return n, ValidStage(n)
}
