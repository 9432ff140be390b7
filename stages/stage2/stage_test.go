package stage2_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/stages/stage2"
)

var subject = grader.Subject{Stage: 2, Name: "stages/stage2", New: stage2.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
