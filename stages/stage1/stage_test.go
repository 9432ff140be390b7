package stage1_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/grader/gradertest"
	"idemlab/stages/stage1"
)

var subject = grader.Subject{Stage: 1, Name: "stages/stage1", New: stage1.New}

func TestMain(m *testing.M) { gradertest.Main(m, subject) }

func TestStage(t *testing.T) { gradertest.TestStage(t, subject) }
