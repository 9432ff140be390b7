package ladder

import "slices"

// Mutants is the mutant suite: broken variants of the solutions, each
// written the way a student could plausibly get a stage wrong, and the
// check that must catch it: one text file per mutant, read by
// mutant_files.go from mutants/stageN/ (see mutants/README.md).
var Mutants = slices.Concat(mutantsStage0, mutantsStage1, mutantsStage2, mutantsStage3, mutantsStage4, mutantsStage5, mutantsStage6, mutantsStage7, mutantsStage8, mutantsStage9)
