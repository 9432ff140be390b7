package studentloop

import (
	"fmt"

	"idemlab/kit/labdb"
)

// Command returns the line a student types to run one of the loop's
// verbs (check, watch, hint, docs, diff, reset) on stage n: "make
// stage-1", "make hint N=1" at the checkout's root, and "cd ../.. && make
// hint N=1" where lab was started in stages/stage1 (labdb.FromRoot). On a
// fresh clone lab is no command of the shell; make builds and runs it, so
// every next step the loop prints is a make target (make alone lists
// them).
func Command(verb string, n int) string {
	if verb == "check" {
		return fmt.Sprintf("%smake stage-%d", labdb.FromRoot(), n)
	}
	return fmt.Sprintf("%smake %s N=%d", labdb.FromRoot(), verb, n)
}

// CheckCommand returns the line that runs again the checks o ran: the
// student's stage (Command("check", n)), or the reference solution's
// ("make solution-1").
func CheckCommand(o Outcome) string {
	if o.Solution {
		return fmt.Sprintf("%smake solution-%d", labdb.FromRoot(), o.Stage)
	}
	return Command("check", o.Stage)
}
