package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"idemlab/kit/labdb"
	"idemlab/studentloop"
)

func runHint(ctx context.Context, in *invocation) error {
	check := in.String("check", "", "a hint for this check ID instead of the first failing one")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, p, n := st.root, st.progress, st.n
	sp := p.Stage(n)
	topic := *check
	if topic == "" && sp.Focus == "" && sp.OnlyCouldNotRun() {
		couldNotRun(in.stdout, n, sp.CouldNotRun)
		return nil
	}
	if topic == "" && sp.Focus == "" && sp.State == studentloop.Passing {
		// Nothing fails (a check that failed when run alone since is the
		// focus): a hint step shown now would be spent on nothing.
		fmt.Fprintf(in.stdout, "stage %d passed every check at its last run: there is nothing to hint at. %s says what is next.\n",
			n, labdb.FromRoot()+"make status")
		return nil
	}
	lesson := ""
	if topic == "" {
		topic, lesson = studentloop.HintTopic(sp), studentloop.HintLesson(sp)
	}
	hinted, pointed := followLesson(topic, lesson, n)
	tiers, key, err := hintFor(root, n, hinted)
	if err != nil {
		return err
	}
	switch {
	case sp.State == studentloop.NotStarted && topic == "stage":
		fmt.Fprintf(in.stdout, "stage %d has no run on record (go test keeps none): %s (or %s) first, so that the hint is about the check that fails.\n\n",
			n, studentloop.Command("check", n), studentloop.Command("watch", n))
	case topic == "stage":
		fmt.Fprintf(in.stdout, "stage %d at its last run: %s.\n\n", n, sp.State)
	default:
		// The header names the check whose steps follow first, and then,
		// when they are another's, why: the failing check's failure points
		// to that check's lesson section.
		which := fmt.Sprintf("the first failing check of stage %d at its last run", n)
		switch {
		case *check != "":
			which = "the check you named with --check"
		case topic == sp.Focus && sp.FocusRun != "":
			which = fmt.Sprintf("the check that failed when you last ran it with RUN=%s", sp.FocusRun)
		case topic == sp.Focus:
			which = fmt.Sprintf("the check that failed when you last ran some of stage %d's checks alone", n)
		}
		if hinted == topic {
			fmt.Fprintf(in.stdout, "hint for %s, %s:\n\n", topic, which)
		} else {
			fmt.Fprintf(in.stdout, "hint for %s (%s's failure points to its lesson section; %s is %s):\n\n", hinted, topic, topic, which)
		}
	}
	switch {
	case hinted != topic:
		fmt.Fprintf(in.stdout, "%s's failure points to %s, not to its own section: the steps below are %s's, the check that teaches that section (%s gives %s's own).\n\n",
			topic, pointed, hinted, fmt.Sprintf("%sbin/lab hint --check %s %d", labdb.FromRoot(), topic, n), topic)
	case pointed != "":
		fmt.Fprintf(in.stdout, "its failure points to %s, not to the check's own section: read that first; the hint below is the check's.\n\n", pointed)
	}
	tier := p.NextTier(key, studentloop.Tiers)
	for i := 0; i < tier; i++ {
		fmt.Fprintf(in.stdout, "%d. %s: %s\n\n", i+1, strings.ToUpper(studentloop.TierNames[i][:1])+studentloop.TierNames[i][1:], tiers[i])
	}
	fmt.Fprintln(in.stdout, stepsLeft(tier, n))
	return p.Save(root)
}

// followLesson is the check whose hint a student gets for a failure of
// topic that pointed to lesson (its report's lesson line), at stage n:
// topic itself when lesson is its own section or unknown, else the check
// that teaches lesson (a stage 5 server that forgot a key inside a stage
// 1 check is sent to lesson 5's retention, and gets the hint of the check
// of retention, not of the claim it has right). pointed is lesson when it
// is not topic's own; then, if no check teaches that section (lesson 1's
// PostgreSQL section), hinted stays topic and the hint says to read the
// section first.
func followLesson(topic, lesson string, n int) (hinted, pointed string) {
	if topic == "stage" || lesson == "" || lesson == studentloop.CatalogueLesson(topic) {
		return topic, ""
	}
	if id, ok := studentloop.LessonCheck(lesson, n); ok {
		return id, lesson
	}
	return topic, lesson
}

// hintFor returns the tiers of topic's hint for a student at stage n, and
// the name its steps are counted under. A check of an earlier stage keeps
// running at later ones, where the design it was written for may have
// changed (stage 3 moves the claim out of the money's transaction): the
// hint file of the latest stage from n down to the check's own that has a
// section for it gives the hint, so that the hint fits the code the
// student has now, and a hint from another stage's file than the check's
// counts its steps apart, from the first. It returns an error if no file
// has one.
func hintFor(root string, n int, topic string) (tiers [studentloop.Tiers]string, key string, err error) {
	if topic == "stage" {
		hints, err := studentloop.LoadHints(root, n)
		if err != nil {
			return tiers, "", err
		}
		tiers, ok := hints[topic]
		if !ok {
			return tiers, "", fmt.Errorf("no hint for %s in %s", topic, studentloop.HintsPath(n))
		}
		return tiers, fmt.Sprintf("stage%d", n), nil
	}
	own, err := studentloop.CheckStage(topic)
	if err != nil {
		return tiers, "", err
	}
	for s := max(n, own); s >= own; s-- {
		hints, err := studentloop.LoadHints(root, s)
		if err != nil {
			return tiers, "", err
		}
		tiers, ok := hints[topic]
		switch {
		case !ok:
			continue
		case s == own:
			return tiers, topic, nil
		default:
			return tiers, fmt.Sprintf("%s at stage %d", topic, s), nil
		}
	}
	return tiers, "", fmt.Errorf("no hint for %s in %s", topic, studentloop.HintsPath(own))
}

// couldNotRun is the answer to a hint for a stage whose last run failed
// with nothing but checks that could not run: no hint, since nothing
// found against the server needs a fix, but what each could not observe,
// which is what to set right before the checks can say anything.
func couldNotRun(w io.Writer, n int, checks []studentloop.NotRun) {
	fmt.Fprintf(w, "stage %d at its last run: no check failed against your server, but %d could not run.\n", n, len(checks))
	fmt.Fprintf(w, "A check that could not run says nothing of your server, for or against: there is no fix to hint at yet.\n")
	fmt.Fprintf(w, "What each could not observe:\n\n")
	// Checks that could not run for one reason (no database, say) are
	// listed under it once.
	var whys []string
	ids := map[string][]string{}
	for _, c := range checks {
		why := cmp.Or(c.WhyNot, "(see its COULD NOT RUN block)")
		if ids[why] == nil {
			whys = append(whys, why)
		}
		ids[why] = append(ids[why], c.ID)
	}
	for _, why := range whys {
		fmt.Fprintf(w, "  %s\n    %s\n", strings.Join(ids[why], ", "), why)
	}
	fmt.Fprintf(w, "\nset that right, then run %s again; a hint is about the first check that fails.\n", studentloop.Command("check", n))
}

// stepsLeft is the line under a hint: which step it was, how many remain,
// and what the next one gives, so that a student knows the code comes
// only at the last.
func stepsLeft(tier, stage int) string {
	left := studentloop.Tiers - tier
	switch {
	case left == 0:
		return fmt.Sprintf("(hint %d of %d: that was the last step, the code; %s compares your stage with the solution)", tier, studentloop.Tiers, studentloop.Command("diff", stage))
	case tier+1 == studentloop.CodeTier:
		return fmt.Sprintf("(hint %d of %d: 1 step remains, and it gives the code: make the decisions first, then ask again)", tier, studentloop.Tiers)
	}
	return fmt.Sprintf("(hint %d of %d: %d steps remain; ask again for %s)", tier, studentloop.Tiers, left, studentloop.TierNames[tier])
}
