package stage1_test

import (
	"testing"

	"idemlab/grader"
	"idemlab/solutions/stage1"
)

var subject = grader.Subject{Stage: 1, Name: "solutions/stage1", New: stage1.New}

func TestMain(m *testing.M) { grader.Main(m, subject) }

func TestStage(t *testing.T) { grader.TestStage(t, subject) }
