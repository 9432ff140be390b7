package ladder

import "slices"

// Mutants is the mutant suite: broken variants of the solutions, each
// written the way a student could plausibly get a stage wrong, and the
// check that must catch it. A mutant is a text file, read by
// mutant_files.go from mutants/stageN/, or a Go value; Go-written ones are
// kept in tables per stage of the check that
// catches each mutant (mutants_stageN.go).
var Mutants = slices.Concat(mutantsStage1, mutantsStage2, mutantsStage3, mutantsStage4, mutantsStage5, mutantsStage6, mutantsStage7, mutantsStage8)
