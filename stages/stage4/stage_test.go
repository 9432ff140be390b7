package stage4_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/stages/stage4"
)

var subject = grader.Subject{Stage: 4, Name: "stages/stage4", New: stage4.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
