package ladder

// mutantsStage5 are the mutants caught by stage 5's checks.
var mutantsStage5 = []Mutant{
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
}
