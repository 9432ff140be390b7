package grader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
)

// Timeline is the part of the result's history that its failure is
// about, with at most lanes client lanes. A money finding draws the
// operations that executed more often than asked, or that never ran,
// highlighted; a failure that names no such operation draws the
// operations its evidence names (their requests), when there is a story
// to see: more than one request, or a crash. ok is false when there is
// nothing to draw.
func (r Result) Timeline(reproduce string, lanes int) (v timeline.View, ok bool) {
	finding, f, ok := r.finding(reproduce)
	if !ok {
		return timeline.View{}, false
	}
	v, ok = r.History.Focus(finding, lanes)
	if !ok || f.Harm != "" {
		return v, ok
	}
	return v, v.Story()
}

// ContractExplain is what a timeline says in place of a harm when its
// check failed on the contract alone, every balance right.
const ContractExplain = "every balance is right: what failed is the contract (a status, a problem type, a header)"

// ServerErrors are the causes the server gave for the 5xx answers of the
// requests r's failure is about (timeline.History.ServerErrorsOf), one
// line each: those of the operations its timeline draws, and of the
// requests that name no operation, not those of another round's
// operations. None when r kept no history or did not fail.
func (r Result) ServerErrors() []string {
	finding, _, ok := r.finding("")
	if !ok {
		return nil
	}
	return r.History.ServerErrorsOf(finding)
}

// finding is the money finding r's failure draws (Timeline), and the
// failure; ok is false when r kept no history or did not fail.
func (r Result) finding(reproduce string) (finding timeline.Finding, f *judging.Failure, ok bool) {
	if r.History == nil || !errors.As(r.Err, &f) {
		return timeline.Finding{}, nil, false
	}
	finding = timeline.Finding{
		Check: r.Check.ID, Claim: r.Check.Claim, Harm: string(f.Harm), Explain: f.Harm.Explain(),
		Got: f.Got, Reproduce: reproduce, Excess: f.Excess, Missing: f.Missing,
	}
	if l := f.Lesser; l != nil {
		// The check's own finding, which a double the books showed leads,
		// is drawn too: the answers that promised an operation that never
		// ran, or another's executions.
		for _, op := range l.Excess {
			if !slices.Contains(finding.Excess, op) {
				finding.Excess = append(slices.Clone(finding.Excess), op)
			}
		}
		finding.Missing = append(slices.Clone(finding.Missing), l.Missing...)
		finding.Also = &timeline.Also{Harm: string(l.Harm), Explain: l.Harm.Explain(), Got: l.Got}
	}
	if f.Harm == "" {
		finding.Harm, finding.Explain = "contract", ContractExplain
	}
	if len(f.Excess)+len(f.Missing) == 0 {
		// A check that judged the money itself names its operations in
		// its evidence: what the harm says of them decides the highlight.
		named := namedOps(f)
		switch f.Harm {
		case judging.Double, judging.MovedThoughRefused:
			finding.Excess = named
		case judging.Lost:
			finding.Missing = named
		default:
			finding.Named, finding.Refs = named, f.Refs
			if len(f.Refs) > 0 {
				// A core ledger finding names the transfers it is about;
				// the requests its story shows (the first and the last of
				// a load) are there to tell what was sent, not what failed.
				finding.Named = opsIn(f.Got)
			}
		}
	}
	return finding, f, true
}

// opName is the form of the operations a check draws (T.Op).
var opName = regexp.MustCompile(`\bop-[0-9a-f]{8}\b`)

// namedOps are the operations a failure's evidence names.
func namedOps(f *judging.Failure) []string {
	texts := []string{f.Sent, f.Got}
	if f.Contract != nil {
		texts = append(texts, f.Contract.Sent, f.Contract.Got)
	}
	return opsIn(texts...)
}

// opsIn are the operations texts name, each once, in the order named.
func opsIn(texts ...string) []string {
	var out []string
	for _, op := range opName.FindAllString(strings.Join(texts, "\n"), -1) {
		if !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	return out
}

// WriteTimeline writes the HTML timeline of r's failure into dir, as
// <check ID>.html, and sets r.TimelinePath to its path (shown relative to
// the working directory when it lies below it). When r has no timeline
// (Timeline: it passed, could not run, or its failure has nothing to draw),
// it removes the page an earlier run of the check left there, so that a
// student who opens the folder never reads a failure that is gone. It
// returns an error if the file cannot be written or removed.
func WriteTimeline(r *Result, dir, reproduce string) error {
	v, ok := r.Timeline(reproduce, timeline.HTMLLanes)
	if !ok {
		if err := timeline.RemoveHTML(dir, r.Check.ID); err != nil {
			return fmt.Errorf("remove the old timeline of %s: %w", r.Check.ID, err)
		}
		return nil
	}
	path, err := timeline.WriteHTML(dir, r.Check.ID, v)
	if err != nil {
		return fmt.Errorf("write the timeline of %s: %w", r.Check.ID, err)
	}
	r.TimelinePath = path
	return nil
}

// TimelinesEnv names the folder where make stage-N and lab check put the
// HTML timelines of money failures (lab check sets it for its go test).
const TimelinesEnv = "IDEMLAB_TIMELINES"

// ColorEnv, set to 1, draws the terminal timelines of a stage's go test
// in colour: lab check and lab watch set it when they print to a terminal.
const ColorEnv = "IDEMLAB_COLOR"

// TimelineDir is where a run that writes no results.json puts its HTML
// timelines: the folder TimelinesEnv names, or else .idemlab/timelines
// below the project's root (below the working directory outside it).
func TimelineDir() string {
	if d := os.Getenv(TimelinesEnv); d != "" {
		return d
	}
	root, err := targets.Root()
	if err != nil {
		root = "."
	}
	return filepath.Join(root, ".idemlab", "timelines")
}
