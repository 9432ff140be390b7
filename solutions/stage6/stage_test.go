package stage6_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/solutions/stage6"
)

var subject = grader.Subject{Stage: 6, Name: "solutions/stage6", New: stage6.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
