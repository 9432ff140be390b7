package stage4_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/solutions/stage4"
)

var subject = grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
