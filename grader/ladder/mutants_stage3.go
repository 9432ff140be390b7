package ladder

// mutantsStage3 are the mutants caught by stage 3's checks: every wrong
// turn docs/lessons/03-in-progress.md names.
var mutantsStage3 = []Mutant{
	{
		Name: "completed-before-money", Stage: 3, CaughtBy: "S3.never-completed-without-money",
		Bug:   "marks the key completed when it is claimed, before the money moves",
		Edits: []Edit{{"keys.go", "VALUES (?, ?, 'in_progress', ?) RETURNING id`", "VALUES (?, ?, 'completed', ?) RETURNING id`"}},
	},
	{
		Name: "release-with-request-context", Stage: 3, CaughtBy: "S3.client-gives-up",
		Bug: "releases a failed claim with the request's own context, which is cancelled once the client has hung up",
		Edits: []Edit{{"server.go", `		// The transaction rolled back, so no money moved. The release must
		// happen even if the client has gone away, hence WithoutCancel.
		release(context.WithoutCancel(ctx), s.env.DB, id)`, `		// The transaction rolled back, so no money moved: give the key
		// back, so that the retry executes.
		release(ctx, s.env.DB, id)`}},
	},
	{
		Name: "no-release-when-client-gone", Stage: 3, CaughtBy: "S3.client-gives-up",
		Bug: "does nothing once the client has hung up (nobody to answer), so the claim of its failed request is never released",
		Edits: []Edit{
			{"server.go", `	body, location, err := s.execute(ctx, id, op)
	if err != nil {
`, `	body, location, err := s.execute(ctx, id, op)
	if ctx.Err() != nil {
		// The client has hung up: there is nobody to answer.
		return
	}
	if err != nil {
`},
		},
	},
	{
		Name: "no-release", Stage: 3, CaughtBy: "S3.release-after-failure",
		Bug: "never gives a failed request's claim back, so its retries are told it is still in progress",
		Edits: []Edit{{"server.go", `		// The transaction rolled back, so no money moved. The release must
		// happen even if the client has gone away, hence WithoutCancel.
		release(context.WithoutCancel(ctx), s.env.DB, id)
`, ""}},
	},
	{
		Name: "completed-after-commit", Stage: 3, CaughtBy: "S3.completed-with-the-money",
		Bug: "moves the money in one transaction and marks the key completed in another once it has committed",
		Edits: []Edit{{"server.go", `	if err := complete(ctx, tx, id, s.env.Clock.Now()); err != nil {
		return nil, "", err
	}
	if err := tx.Commit(); err != nil {
		return nil, "", err
	}
`, `	if err := tx.Commit(); err != nil {
		return nil, "", err
	}
	// The money has moved: now mark the key done, in a transaction of
	// its own, so that the business write holds no key-table lock.
	keys, err := s.env.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", err
	}
	defer keys.Rollback()
	if err := complete(ctx, keys, id, s.env.Clock.Now()); err != nil {
		return nil, "", err
	}
	if err := keys.Commit(); err != nil {
		return nil, "", err
	}
`}},
	},
	{
		Name: "in-progress-as-duplicate", Stage: 3, CaughtBy: "S3.retry-during-original",
		Bug: "reads the fingerprint of a key already there but not its state, so a retry of a request still running is told it was executed",
		Edits: []Edit{
			{"keys.go", "\tvar stored, state string\n\terr = tx.QueryRowContext(ctx, `SELECT fingerprint, state FROM idempotency_keys WHERE key = ?`, key).\n\t\tScan(&stored, &state)",
				"\tvar stored string\n\terr = tx.QueryRowContext(ctx, `SELECT fingerprint FROM idempotency_keys WHERE key = ?`, key).\n\t\tScan(&stored)"},
			{"keys.go", `	case state == "in_progress":
		return 0, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}
`, ""},
		},
	},
	{
		Name: "in-progress-without-retry-after", Stage: 3, CaughtBy: "S3.retry-during-original",
		Bug: "answers a retry of a running request 409 request-in-progress without Retry-After, so the client does not know when to come back",
		Edits: []Edit{{"keys.go", `		return 0, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: fmt.Sprintf("the request with Idempotency-Key %q is still being processed; retry with the same key", key)}`,
			`		return 0, problem.New(problem.RequestInProgress,
			"the request with Idempotency-Key %q is still being processed; retry with the same key", key)`}},
	},
}
