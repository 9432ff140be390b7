package stage3_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/stages/stage3"
)

var subject = grader.Subject{Stage: 3, Name: "stages/stage3", New: stage3.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
