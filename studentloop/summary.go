package studentloop

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"idemlab/kit/labdb"
)

// LessonPath returns the lesson of stage n (docs/lessons/NN-*.md, or the
// same under docs/lessons/<lang>/ for another language than English),
// relative to root.
func LessonPath(root string, n int, lang string) (string, error) {
	dir := filepath.Join("docs", "lessons")
	if lang != "" && lang != "en" {
		dir = filepath.Join(dir, lang)
	}
	matches, err := filepath.Glob(filepath.Join(root, dir, fmt.Sprintf("%02d-*.md", n)))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("no lesson for stage %d in %s", n, dir)
	}
	return filepath.Rel(root, matches[0])
}

// Summarize writes what a run of stage's checks means for the student:
// on a pass, the checks that passed and the next step; when the stage
// does not build, the compiler's message and nothing else; on failures,
// each FAIL block as the grader printed it and the first one to work on.
func Summarize(w io.Writer, root string, o Outcome) {
	n := o.Stage
	switch o.State() {
	case DoesNotBuild:
		fmt.Fprintf(w, "stage %d does not build, so no check ran. The compiler says:\n\n", n)
		fmt.Fprintln(w, indentBlock(o.Build, "  "))
		fmt.Fprintf(w, "\nfix the line it names in %s and save (%s reruns by itself).\n", StageDir(n), Command("watch", n))
	case CouldNotCheck:
		fmt.Fprintf(w, "stage %d: the checks did not finish:\n\n%s\n", n, indentBlock(o.Other, "  "))
	case Failing:
		// The failures first, then the checks that could not run: the
		// first block is the check to start with.
		for _, unknown := range []bool{false, true} {
			for _, c := range o.Failed() {
				if c.CouldNotRun() == unknown {
					fmt.Fprintln(w, c.Report)
					fmt.Fprintln(w)
				}
			}
		}
		unknown := len(o.CouldNotRun())
		failing := fmt.Sprintf("%d fail", len(o.Failed())-unknown)
		if unknown > 0 {
			failing += fmt.Sprintf(", %d could not run", unknown)
		}
		fmt.Fprintf(w, "stage %d: %d of %d checks pass; %s (seed %s).\n", n, len(o.Passed()), len(o.Checks), failing, o.Seed)
		if unknown == len(o.Failed()) {
			// Nothing against the server: nothing to fix in it yet.
			fmt.Fprintf(w, "a check that could not run says nothing of your server, for or against: its block above says\n")
			fmt.Fprintf(w, "what it could not observe; run %s again once that is fixed.\n", CheckCommand(o))
			return
		}
		if o.Solution {
			// A hint is about the student's code; the reference is meant
			// to pass.
			fmt.Fprintf(w, "the reference solution passes every check on an unloaded machine: run the reproduce line above\n")
			fmt.Fprintf(w, "once more; a failure that repeats is a fault in the course, not in your code.\n")
			return
		}
		fmt.Fprintf(w, "start with %s, the first in the list: its lesson line above names the section to read;\n", o.FirstFailing())
		fmt.Fprintf(w, "  %s   a hint for it, one step more each time you ask\n", Command("hint", n))
	case Passing:
		all := fmt.Sprintf("all %d checks", len(o.Checks))
		if len(o.Checks) == 1 {
			all = "its one check"
		}
		fmt.Fprintf(w, "stage %d passes %s (seed %s):\n", n, all, o.Seed)
		for _, c := range o.Checks {
			fmt.Fprintf(w, "  ✓ %s\n", c.ID)
		}
		if o.Only != "" {
			fmt.Fprintf(w, "only the checks matching RUN=%s ran: run %s to count the stage.\n", o.Only, CheckCommand(o))
			return
		}
		if o.Solution {
			return
		}
		next := n + 1
		for next < Stages && o.Ahead[next] {
			next++
		}
		switch {
		case next == n+2:
			fmt.Fprintf(w, "stage %d passes already (%smake status).\n", n+1, labdb.FromRoot())
		case next > n+2:
			fmt.Fprintf(w, "stages %d to %d pass already (%smake status).\n", n+1, next-1, labdb.FromRoot())
		}
		switch {
		case next < Stages:
			what := fmt.Sprintf("stage %d", next)
			if lesson, err := LessonPath(root, next, ""); err == nil {
				what += ": read " + lesson + " (" + Command("docs", next) + ")"
			}
			fmt.Fprintf(w, "next: %s, then %s.\n", what, Command("watch", next))
		case n+1 == Stages:
			fmt.Fprintln(w, "that was the last stage: your server survives every failure the grader knows.")
		}
	}
}

// FirstLine is one line on a run, for the watch and the status: the state
// and the first failing check.
func FirstLine(o Outcome) string {
	switch o.State() {
	case Passing:
		return fmt.Sprintf("✓ stage %d passes (%d checks)", o.Stage, len(o.Checks))
	case Failing:
		if unknown := o.CouldNotRun(); len(unknown) == len(o.Failed()) {
			if n := len(unknown); n > 1 {
				return fmt.Sprintf("? stage %d: %d of %d pass; %d could not run, first %s", o.Stage, len(o.Passed()), len(o.Checks), n, unknown[0].ID)
			}
			return fmt.Sprintf("? stage %d: %d of %d pass; %s could not run", o.Stage, len(o.Passed()), len(o.Checks), unknown[0].ID)
		}
		return fmt.Sprintf("✗ stage %d: %d of %d pass; first failing: %s", o.Stage, len(o.Passed()), len(o.Checks), o.FirstFailing())
	case DoesNotBuild:
		first, _, _ := strings.Cut(o.Build, "\n")
		return fmt.Sprintf("✗ stage %d does not build: %s", o.Stage, first)
	}
	return fmt.Sprintf("? stage %d: the checks did not finish", o.Stage)
}

func indentBlock(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
