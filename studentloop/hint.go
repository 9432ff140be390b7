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
// the code, then an outline in words.
const Tiers = 3

// TierNames name the tiers, in order.
var TierNames = [Tiers]string{"the idea", "where in the code", "an outline"}

// Hints are the hints of one stage, by topic: a check ID, or "stage" for
// the stage as a whole (when it does not build, or every check passes).
type Hints map[string][Tiers]string

// HintsPath is the hint file of stage n, relative to the root.
func HintsPath(n int) string { return filepath.Join("docs", "hints", fmt.Sprintf("%02d.md", n)) }

var tierItem = regexp.MustCompile(`^([1-9])\. (.*)$`)

// LoadHints reads stage n's hint file: a "## <topic>" heading per check
// (and one "## stage"), each with a numbered list of exactly three tiers.
// It returns an error for a topic without its three tiers.
func LoadHints(root string, n int) (Hints, error) {
	path := HintsPath(n)
	f, err := os.Open(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := Hints{}
	topic, tier := "", 0
	var tiers [Tiers]string
	flush := func() error {
		if topic == "" {
			return nil
		}
		if tier != Tiers {
			return fmt.Errorf("%s: %s has %d tiers, not %d", path, topic, tier, Tiers)
		}
		h[topic] = tiers
		return nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "## "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			topic, tier, tiers = strings.TrimSpace(rest), 0, [Tiers]string{}
			continue
		}
		if topic == "" {
			continue
		}
		if m := tierItem.FindStringSubmatch(line); m != nil {
			if tier == Tiers || int(m[1][0]-'0') != tier+1 {
				return nil, fmt.Errorf("%s: %s: tier %s out of order", path, topic, m[1])
			}
			tiers[tier] = m[2]
			tier++
			continue
		}
		if t := strings.TrimSpace(line); t != "" && tier > 0 {
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
// run: its first failing check, or the stage itself.
func HintTopic(sp StageProgress) string {
	if sp.State == Failing && sp.FirstFailing != "" {
		return sp.FirstFailing
	}
	return "stage"
}
