package replay

import (
	"strings"
)

// DayReport renders a day's reconciliation for a failure, with a few
// examples of each finding, each cut to a readable length; all says where
// the rest are (see WriteReport).
func DayReport(rc DayReconciliation, all string) string {
	var b strings.Builder
	rc.WriteReport(&b, 3, all)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if r := []rune(l); len(r) > 400 {
			lines[i] = string(r[:300]) + " … " + string(r[len(r)-80:])
		}
	}
	return strings.Join(lines, "\n")
}
