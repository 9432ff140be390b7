package replay

import (
	"strings"
)

// DayReport renders a day's reconciliation for a failure, with a few
// examples of each finding, each cut to a readable length.
func DayReport(rc DayReconciliation) string {
	var b strings.Builder
	rc.WriteReport(&b, 3, "lab replay of this day with --results DIR writes all of them to DIR/results.json")
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if r := []rune(l); len(r) > 400 {
			lines[i] = string(r[:300]) + " … " + string(r[len(r)-80:])
		}
	}
	return strings.Join(lines, "\n")
}
