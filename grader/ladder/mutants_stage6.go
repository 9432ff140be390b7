package ladder

// mutantsStage6 are the mutants caught by stage 6's checks.
var mutantsStage6 = []Mutant{
	{
		Name: "stuck-in-progress", Stage: 6, CaughtBy: "S6.crash-recovery",
		Bug:   "never takes over an expired lease, so a key whose request crashed stays in progress for good",
		Edits: []Edit{{"keys.go", "AND state = 'in_progress' AND lease_expires_at <= ?`", "AND state = 'in_progress' AND lease_expires_at <= ? AND 0`"}},
	},
}
