package studentloop

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Tiers is how many hints there are for each check: the idea, where in
// the code, the decisions the code must make (asked in words, with how
// each fails when made wrong, never answered), and last the code itself
// (or its shape), for a student who is stuck for good.
const Tiers = 4

// CodeTier is the tier that may hold code: the last one. The tiers before
// it are words.
const CodeTier = Tiers

// TierNames name the tiers, in order.
var TierNames = [Tiers]string{"the idea", "where in the code", "the decisions", "the code"}

// Hints are the hints of one stage, by topic: a check ID, or "stage" for
// the stage as a whole (when it does not build, or every check passes).
// A tier's text is one paragraph, but for a fenced code block in it,
// which keeps its lines.
type Hints map[string][Tiers]string

// HintsPath is the file of stage n's hints in words, the tiers before the
// code, relative to the root.
func HintsPath(n int) string { return filepath.Join("docs", "hints", fmt.Sprintf("%02d.md", n)) }

// HintCodePath is the file of the last tier of stage n's hints, the code,
// relative to the root. It lies beside the reference solution, where a
// reader knows they are looking at the answer: a student who opens a
// hint file in docs/hints to read the words sees no code at a glance.
func HintCodePath(n int) string { return filepath.Join(SolutionDir(n), "hints.md") }

var tierItem = regexp.MustCompile(`^([1-9])\. (.*)$`)

// tierIndent is how far a tier's continuation lines are indented under
// its number ("1. "), code blocks included.
const tierIndent = "   "

// LoadHints reads stage n's hints from its two files: in HintsPath, a
// "## <topic>" heading per check (and one "## stage"), each with a
// numbered list of the tiers before the code; in HintCodePath, the same
// headings, each with the last tier alone (numbered 4). A tier's lines are
// joined into one paragraph, except a fenced code block (indented under
// its tier), whose lines are kept as they are. It returns an error for a
// topic without its tiers in either file, a topic of the code's file the
// words' file does not have, a tier in the wrong file, or a code block
// left open.
func LoadHints(root string, n int) (Hints, error) {
	words, err := loadTiers(root, HintsPath(n), 1, CodeTier-1, HintCodePath(n))
	if err != nil {
		return nil, err
	}
	code, err := loadTiers(root, HintCodePath(n), CodeTier, Tiers, HintsPath(n))
	if err != nil {
		return nil, err
	}
	h := Hints{}
	for topic, tiers := range words {
		last, ok := code[topic]
		if !ok {
			return nil, fmt.Errorf("%s: %s has no tier %d (the code)", HintCodePath(n), topic, CodeTier)
		}
		tiers[CodeTier-1] = last[CodeTier-1]
		h[topic] = tiers
	}
	for topic := range code {
		if _, ok := words[topic]; !ok {
			return nil, fmt.Errorf("%s: %s is no topic of %s", HintCodePath(n), topic, HintsPath(n))
		}
	}
	return h, nil
}

// loadTiers reads the file at path (relative to root): a "## <topic>"
// heading per topic, each with a numbered list of the tiers first to last
// (numbered from 1), in order. A tier numbered outside them is an error
// that names other, the file it belongs in.
func loadTiers(root, path string, first, last int, other string) (Hints, error) {
	f, err := os.Open(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := Hints{}
	topic, tier, code := "", 0, false
	var tiers [Tiers]string
	flush := func() error {
		switch {
		case topic == "":
			return nil
		case code:
			return fmt.Errorf("%s: %s: a code block is left open", path, topic)
		case tier != last:
			return fmt.Errorf("%s: %s has %d tiers, not %d", path, topic, max(tier-first+1, 0), last-first+1)
		}
		h[topic] = tiers
		return nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if code {
			tiers[tier-1] += "\n" + strings.TrimPrefix(line, tierIndent)
			code = !strings.HasPrefix(strings.TrimSpace(line), "```")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "## "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			topic, tier, tiers = strings.TrimSpace(rest), first-1, [Tiers]string{}
			continue
		}
		if topic == "" {
			continue
		}
		if m := tierItem.FindStringSubmatch(line); m != nil {
			num := int(m[1][0] - '0')
			switch {
			case num < first || num > last:
				return nil, fmt.Errorf("%s: %s: tier %d belongs in %s", path, topic, num, other)
			case num != tier+1:
				return nil, fmt.Errorf("%s: %s: tier %d out of order", path, topic, num)
			}
			tiers[tier] = m[2]
			tier++
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || tier < first:
		case strings.HasPrefix(t, "```"):
			tiers[tier-1] += "\n\n" + t
			code = true
		case strings.HasSuffix(tiers[tier-1], "```"):
			tiers[tier-1] += "\n\n" + t
		default:
			tiers[tier-1] += " " + t
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return h, nil
}

// HintTopic is what a hint is about for stage n at its last recorded
// run: the check a run of it alone last failed, else the stage's first
// failing check, or the stage itself. A stage whose last run found
// nothing but checks that could not run (OnlyCouldNotRun) has no hint
// to give: there is nothing to fix in the server yet.
func HintTopic(sp StageProgress) string {
	topic, _ := hintTopicLesson(sp)
	return topic
}

// HintLesson is the lesson section the failure of HintTopic's check
// pointed to, "" if it is no check's failure or none was recorded.
func HintLesson(sp StageProgress) string {
	_, lesson := hintTopicLesson(sp)
	return lesson
}

// hintTopicLesson is HintTopic and HintLesson.
func hintTopicLesson(sp StageProgress) (topic, lesson string) {
	if sp.Focus != "" {
		return sp.Focus, sp.FocusLesson
	}
	if sp.State == Failing && sp.FirstFailing != "" {
		return sp.FirstFailing, sp.FirstLesson
	}
	return "stage", ""
}
