package ladder

// Mutants is the mutant suite: one per bug class of the idempotency design.
var Mutants = []Mutant{}
