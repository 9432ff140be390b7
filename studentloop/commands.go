package studentloop

import "fmt"

// Command returns the line a student types to run one of the loop's
// verbs (check, watch, hint, docs, diff, reset) on stage n, from the
// checkout's root: "make stage-1", "make hint N=1". On a fresh clone lab
// is no command of the shell; make builds and runs it, so every next
// step the loop prints is a make target (make alone lists them).
func Command(verb string, n int) string {
	if verb == "check" {
		return fmt.Sprintf("make stage-%d", n)
	}
	return fmt.Sprintf("make %s N=%d", verb, n)
}
