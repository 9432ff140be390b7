package ladder

// mutantsStage3 are the mutants caught by stage 3's checks.
var mutantsStage3 = []Mutant{
	{
		Name: "completed-before-money", Stage: 3, CaughtBy: "S3.never-completed-without-money",
		Bug:   "marks the key completed when it is claimed, before the money moves",
		Edits: []Edit{{"keys.go", "VALUES (?, ?, 'in_progress', ?)`", "VALUES (?, ?, 'completed', ?)`"}},
	},
}
