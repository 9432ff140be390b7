package stage0_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/solutions/stage0"
)

var subject = grader.Subject{Stage: 0, Name: "solutions/stage0", New: stage0.New, Tally: stage0.Tally}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
