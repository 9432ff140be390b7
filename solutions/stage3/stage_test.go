package stage3_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/solutions/stage3"
)

var subject = grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
