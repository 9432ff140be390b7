// Package solutions lists the reference solutions, stage by stage: what
// lab serves, grades and replays with --solution, and what the ladder
// test proves the checks with. Each solutions/stageN is the code stage
// N's scaffold asks a student to write.
package solutions

import (
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage1"
	"idemlab/solutions/stage2"
	"idemlab/solutions/stage3"
	"idemlab/solutions/stage4"
	"idemlab/solutions/stage5"
	"idemlab/solutions/stage6"
	"idemlab/solutions/stage7"
	"idemlab/solutions/stage8"
	"idemlab/solutions/stage9"
)

// ByStage are the reference solutions' handlers: ByStage[n] is
// solutions/stageN's New.
var ByStage = []stage.Factory{stage0.New, stage1.New, stage2.New, stage3.New, stage4.New, stage5.New, stage6.New, stage7.New, stage8.New, stage9.New}
