package stage6_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/stages/stage6"
)

var subject = grader.Subject{Stage: 6, Name: "stages/stage6", New: stage6.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
