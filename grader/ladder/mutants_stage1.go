package ladder

// mutantsStage1 are the mutants caught by stage 1's checks.
var mutantsStage1 = []Mutant{
	{
		Name: "check-then-insert", Stage: 1, CaughtBy: "S1.concurrent-duplicates",
		Bug: "looks the key up first and inserts it later, with no UNIQUE constraint",
		Edits: []Edit{
			{"keys.go", "key        TEXT NOT NULL UNIQUE,", "key        TEXT NOT NULL,"},
			{"server.go", "\tif err := s.env.Bank.CallCore(ctx); err != nil {", "\tvar seen int\n" +
				"\ts.env.DB.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = ?`, key).Scan(&seen)\n" +
				"\tif seen > 0 {\n\t\tproblem.Write(w, problem.New(problem.DuplicateRequest, \"key already used\"))\n\t\treturn\n\t}\n" +
				"\tif err := s.env.Bank.CallCore(ctx); err != nil {"},
		},
	},
	{
		Name: "insert-or-ignore", Stage: 1, CaughtBy: "S1.sequential-retry",
		Bug:   "claims with INSERT OR IGNORE, so a duplicate is silently accepted",
		Edits: []Edit{{"keys.go", "`INSERT INTO idempotency_keys", "`INSERT OR IGNORE INTO idempotency_keys"}},
	},
	{
		Name: "upsert", Stage: 1, CaughtBy: "S1.sequential-retry",
		Bug: "claims with an upsert, so a duplicate overwrites the claim and executes",
		Edits: []Edit{{"keys.go", "VALUES (?, ?)`, key,",
			"VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET created_at = excluded.created_at`, key,"}},
	},
	{
		Name: "lost-race-5xx", Stage: 1, CaughtBy: "S1.concurrent-duplicates",
		Bug:   "answers the loser of a claim race with 500 instead of a 4xx",
		Edits: []Edit{{"keys.go", "problem.New(problem.DuplicateRequest,", "problem.New(problem.Internal,"}},
	},
	{
		Name: "same-body-one-key", Stage: 6, CaughtBy: "S1.distinct-keys-same-body",
		Bug: "keys requests by their body's fingerprint, so two operations with the same body are one",
		Edits: []Edit{{"server.go", "\tfp, err := fingerprint(raw)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
			"\tfp, err := fingerprint(raw)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n\tsc.key = fp\n"}},
	},
	{
		Name: "fail-open", Stage: 1, CaughtBy: "S1.fail-closed",
		Bug: "treats a key-store error as a successful claim and executes anyway",
		Edits: []Edit{{"keys.go", "\tdefault:\n\t\treturn problem.Wrap(problem.Unavailable, err,",
			"\tdefault:\n\t\treturn nil\n\t\treturn problem.Wrap(problem.Unavailable, err,"}},
	},
}
