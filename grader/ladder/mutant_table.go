package ladder

// Mutants is the mutant suite: one broken variant per bug class of the
// idempotency design, each made from the solution where the bug is
// smallest to show, and the check that must catch it.
var Mutants = []Mutant{
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
		Name: "no-fingerprint", Stage: 6, CaughtBy: "S2.edited-resubmission",
		Bug:   "stores no fingerprint, so an edited request with a used key gets the old answer",
		Edits: []Edit{{"fingerprint.go", "return hex.EncodeToString(sum[:]), nil", "return hex.EncodeToString(sum[:0]), nil"}},
	},
	{
		Name: "raw-fingerprint", Stage: 6, CaughtBy: "S2.equivalent-bodies",
		Bug:   "fingerprints the raw bytes, so a retry with its members in another order is refused",
		Edits: []Edit{{"fingerprint.go", "canon, err := canonical.Transform(raw)", "canon, err := raw, error(nil)\n\t_ = canonical.Transform"}},
	},
	{
		Name: "completed-before-money", Stage: 3, CaughtBy: "S3.never-completed-without-money",
		Bug:   "marks the key completed when it is claimed, before the money moves",
		Edits: []Edit{{"keys.go", "VALUES (?, ?, 'in_progress', ?)`", "VALUES (?, ?, 'completed', ?)`"}},
	},
	{
		Name: "recomputed-replay", Stage: 6, CaughtBy: "S4.replay-byte-identical",
		Bug: "re-renders the stored answer on a replay instead of sending the stored bytes",
		Edits: []Edit{
			{"response.go", `import "net/http"`, "import (\n\t\"encoding/json\"\n\t\"net/http\"\n)"},
			{"response.go", "\tw.Write(res.body)", "\tif replayed {\n\t\tvar v map[string]any\n\t\tjson.Unmarshal(res.body, &v)\n" +
				"\t\tres.body, _ = json.MarshalIndent(v, \"\", \" \")\n\t}\n\tw.Write(res.body)"},
		},
	},
	{
		Name: "marker-on-first", Stage: 6, CaughtBy: "S4.replay-marker-only-on-replays",
		Bug:   "sends Idempotent-Replayed: true on first responses too",
		Edits: []Edit{{"server.go", "res.write(w, false)", "res.write(w, true)"}},
	},
	{
		Name: "replayed-cookie", Stage: 6, CaughtBy: "S4.no-cookie-replayed",
		Bug: "keeps the first answer's headers, Set-Cookie included, and sends them with every replay",
		Edits: []Edit{
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"sync\"\n"},
			{"server.go", "\tres.write(w, false)", "\tfirstHeaders.Store(sc, w.Header().Values(\"Set-Cookie\"))\n\tres.write(w, false)"},
			{"server.go", "\t\tstored.write(w, true)", "\t\tif h, ok := firstHeaders.Load(sc); ok {\n\t\t\tw.Header()[\"Set-Cookie\"] = h.([]string)\n\t\t}\n\t\tstored.write(w, true)"},
			{"server.go", "// Server holds", "var firstHeaders sync.Map\n\n// Server holds"},
		},
	},
	{
		Name: "scope-without-customer", Stage: 6, CaughtBy: "S5.customers-scoped",
		Bug:   "scopes keys without the customer, so two customers share a key",
		Edits: []Edit{{"server.go", "sc := scope{customer: auth.Customer(ctx),", "sc := scope{customer: \"\","}},
	},
	{
		Name: "scope-without-endpoint", Stage: 6, CaughtBy: "S5.endpoints-scoped",
		Bug:   "scopes keys without the route, so /transfers and /deposits share a key",
		Edits: []Edit{{"server.go", "route: route, key: key}", "route: \"\", key: key}"}},
	},
	{
		Name: "purge-in-progress", Stage: 6, CaughtBy: "S5.purge-keeps-in-progress",
		Bug:   "purges old keys whatever their state, in-progress ones included",
		Edits: []Edit{{"keys.go", "WHERE state = 'completed' AND completed_at <= ?", "WHERE coalesce(completed_at, created_at) <= ?"}},
	},
	{
		Name: "fail-open", Stage: 1, CaughtBy: "S1.fail-closed",
		Bug: "treats a key-store error as a successful claim and executes anyway",
		Edits: []Edit{{"keys.go", "\tdefault:\n\t\treturn problem.Wrap(problem.Unavailable, err,",
			"\tdefault:\n\t\treturn nil\n\t\treturn problem.Wrap(problem.Unavailable, err,"}},
	},
	{
		Name: "stuck-in-progress", Stage: 6, CaughtBy: "S6.crash-recovery",
		Bug:   "never takes over an expired lease, so a key whose request crashed stays in progress for good",
		Edits: []Edit{{"keys.go", "AND state = 'in_progress' AND lease_expires_at <= ?`", "AND state = 'in_progress' AND lease_expires_at <= ? AND 0`"}},
	},
}
