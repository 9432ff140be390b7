package ladder

// mutantsStage5 are the mutants caught by stage 5's checks.
var mutantsStage5 = []Mutant{
	{
		Name: "scope-without-customer", Stage: 6, CaughtBy: "S5.customers-scoped",
		Bug:   "scopes keys without the customer, so two customers share a key",
		Edits: []Edit{{"server.go", "sc := scope{customer: auth.Customer(ctx),", "sc := scope{customer: \"\","}},
	},
	{
		Name: "scope-by-key-and-fingerprint", Stage: 5, CaughtBy: "S5.customers-scoped",
		Bug: "names a key by the key and the body's fingerprint, without the customer, and replays before checking whose account the body names: another customer who sends the same request gets the first one's answer",
		Edits: []Edit{
			{"server.go", "sc := scope{customer: auth.Customer(ctx), method: r.Method, route: route, key: key}", "sc := scope{method: r.Method, route: route, key: key}"},
			{"server.go", "\treq, raw, err := request.Transfer(r)\n\tif err == nil {\n\t\terr = s.env.Bank.CheckTransfer(r.Context(), auth.Customer(r.Context()), req)\n\t}\n", "\treq, raw, err := request.Transfer(r)\n"},
			{"keys.go", "UNIQUE (customer, method, route, key)", "UNIQUE (customer, method, route, key, fingerprint)"},
			{"keys.go", "WHERE customer = ? AND method = ? AND route = ? AND key = ?`,\n\t\tsc.customer, sc.method, sc.route, sc.key).", "WHERE customer = ? AND method = ? AND route = ? AND key = ? AND fingerprint = ?`,\n\t\tsc.customer, sc.method, sc.route, sc.key, fp)."},
		},
	},
	{
		Name: "scope-without-endpoint", Stage: 6, CaughtBy: "S5.endpoints-scoped",
		Bug:   "scopes keys without the route, so /transfers and /deposits share a key",
		Edits: []Edit{{"server.go", "route: route, key: key}", "route: \"\", key: key}"}},
	},
	{
		Name: "retention-on-wall-clock", Stage: 5, CaughtBy: "S5.retention-boundary",
		Bug: "forgets keys, at the claim and in the purge, by time.Now() instead of the lab clock",
		Edits: []Edit{
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"time\"\n"},
			{"server.go", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.env.Config())", "claim(ctx, s.env.DB, sc, fp, time.Now().UTC(), s.env.Config())"},
			{"server.go", "return purge(ctx, s.env.DB, s.env.Clock.Now(), s.env.Config())", "return purge(ctx, s.env.DB, time.Now().UTC(), s.env.Config())"},
		},
	},
	{
		Name: "retention-read-at-start", Stage: 5, CaughtBy: "S5.retention-boundary",
		Bug: "reads the config once, when the server starts, so a retention changed later is never used",
		Edits: []Edit{
			{"server.go", "type Server struct {\n\tenv stage.Env\n}", "type Server struct {\n\tenv stage.Env\n\tcfg stage.Config\n}"},
			{"server.go", "return &Server{env: env}, nil", "return &Server{env: env, cfg: env.Config()}, nil"},
			{"server.go", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.env.Config())", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.cfg)"},
			{"server.go", "return purge(ctx, s.env.DB, s.env.Clock.Now(), s.env.Config())", "return purge(ctx, s.env.DB, s.env.Clock.Now(), s.cfg)"},
		},
	},
	{
		Name: "retention-sign-flipped", Stage: 5, CaughtBy: "S5.retention-boundary",
		Bug:   "computes the expiry instant as now plus the retention, so every completed key counts as expired",
		Edits: []Edit{{"keys.go", "return clock.Format(now.Add(-cfg.Retention))", "return clock.Format(now.Add(cfg.Retention))"}},
	},
	{
		Name: "claim-forgets-by-created-at", Stage: 5, CaughtBy: "S5.purge-keeps-in-progress",
		Bug:   "the claim forgets a key whose claim (created_at) is older than the retention, however recently it completed",
		Edits: []Edit{{"keys.go", "AND state = 'completed' AND completed_at <= ?`,\n\t\tsc.customer", "AND state = 'completed' AND created_at <= ?`,\n\t\tsc.customer"}},
	},
	{
		Name: "purge-by-created-at", Stage: 5, CaughtBy: "S5.purge-keeps-in-progress",
		Bug:   "purges completed keys by created_at, so a key that completed a moment ago after a long claim is purged",
		Edits: []Edit{{"keys.go", "`DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`", "`DELETE FROM idempotency_keys WHERE state = 'completed' AND created_at <= ?`"}},
	},
	{
		Name: "purge-on-wall-clock", Stage: 5, CaughtBy: "S5.purge-bounded",
		Bug: "purges by time.Now() instead of the lab clock, so keys expired on the lab clock stay",
		Edits: []Edit{
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"time\"\n"},
			{"server.go", "return purge(ctx, s.env.DB, s.env.Clock.Now(), s.env.Config())", "return purge(ctx, s.env.DB, time.Now().UTC(), s.env.Config())"},
		},
	},
	{
		Name: "purge-in-progress", Stage: 6, CaughtBy: "S5.purge-keeps-in-progress",
		Bug:   "purges old keys whatever their state, in-progress ones included",
		Edits: []Edit{{"keys.go", "WHERE state = 'completed' AND completed_at <= ?", "WHERE coalesce(completed_at, created_at) <= ?"}},
	},
}
