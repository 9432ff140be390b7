package stage0_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/solutions/stage0"
)

func TestStage(t *testing.T) {
	grader.TestStage(t, grader.Subject{Stage: 0, Name: "solutions/stage0", New: stage0.New, Tally: stage0.Tally})
}
