package ladder

// mutantsStage6 are the mutants caught by stage 6's checks.
var mutantsStage6 = []Mutant{
	{
		Name: "stuck-in-progress", Stage: 6, CaughtBy: "S6.crash-recovery",
		Bug:   "never takes over an expired lease, so a key whose request crashed stays in progress for good",
		Edits: []Edit{{"keys.go", "AND state = 'in_progress' AND lease_expires_at <= ?`", "AND state = 'in_progress' AND lease_expires_at <= ? AND false`"}},
	},
	{
		Name: "complete-unfenced", Stage: 6, CaughtBy: "S6.late-original-fenced",
		Bug:   "keeps stage 5's completion (WHERE id = ?, rows affected unread): an original that outlived its lease completes beside the retry that took it over",
		Edits: []Edit{completeAsStage5},
	},
	{
		Name: "complete-without-owner", Stage: 6, CaughtBy: "S6.late-original-fenced",
		Bug:   "completes any in-progress key without checking the lease owner: the first of the late original and the retry to finish wins",
		Edits: []Edit{{"keys.go", "WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,\n\t\tclock.Format(now), res.status, res.contentType, res.location, res.body, held.id, held.owner)", "WHERE id = ? AND state = 'in_progress'`,\n\t\tclock.Format(now), res.status, res.contentType, res.location, res.body, held.id)"}},
	},
	{
		Name: "release-without-owner", Stage: 6, CaughtBy: "S6.late-original-fenced",
		Bug:   "releases the key without checking the lease owner: a late original refused at its completion deletes the key the retry holds",
		Edits: []Edit{{"keys.go", "`DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress' AND lease_owner = ?`,\n\t\theld.id, held.owner)", "`DELETE FROM idempotency_keys WHERE id = ? AND state = 'in_progress'`,\n\t\theld.id)"}},
	},
	{
		Name: "takeover-ignores-lease", Stage: 6, CaughtBy: "S6.live-lease-409",
		Bug:   "takes over any in-progress key, its lease live or not",
		Edits: []Edit{{"keys.go", "WHERE id = ? AND state = 'in_progress' AND lease_expires_at <= ?`,\n\t\towner, clock.Format(now.Add(cfg.Lease)), id, clock.Format(now))", "WHERE id = ? AND state = 'in_progress'`,\n\t\towner, clock.Format(now.Add(cfg.Lease)), id)"}},
	},
	{
		Name: "lease-read-at-start", Stage: 6, CaughtBy: "S6.lease-takeover-once",
		Bug: "reads the config once, when the server starts, so a lease changed later is never used",
		Edits: []Edit{
			{"server.go", "type Server struct {\n\tenv stage.Env\n}", "type Server struct {\n\tenv stage.Env\n\tcfg stage.Config\n}"},
			{"server.go", "return &Server{env: env}, nil", "return &Server{env: env, cfg: env.Config()}, nil"},
			{"server.go", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.env.Config())", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.cfg)"},
		},
	},
	{
		Name: "lease-on-wall-clock", Stage: 6, CaughtBy: "S6.lease-takeover-once",
		Bug: "times leases with time.Now() instead of the lab clock",
		Edits: []Edit{
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"time\"\n"},
			{"server.go", "claim(ctx, s.env.DB, sc, fp, s.env.Clock.Now(), s.env.Config())", "claim(ctx, s.env.DB, sc, fp, time.Now().UTC(), s.env.Config())"},
		},
	},
}

// completeAsStage5 turns the completion back into stage 5's: WHERE id = ?,
// and the rows affected unread.
var completeAsStage5 = Edit{"keys.go", `	r, err := tx.ExecContext(ctx,
		` + "`" + `UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		     status = ?, content_type = ?, location = ?, body = ?
		 WHERE id = ? AND state = 'in_progress' AND lease_owner = ?` + "`" + `,
		clock.Format(now), res.status, res.contentType, res.location, res.body, held.id, held.owner)
	if err != nil {
		return unavailable(err)
	}
	n, err := r.RowsAffected()
	switch {
	case err != nil:
		return unavailable(err)
	case n == 0:
		return &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter,
			Detail: "this request waited past its lease and a retry took it over; nothing was executed here, retry with the same key for the result"}
	}
	return nil`, `	_, err := tx.ExecContext(ctx,
		` + "`" + `UPDATE idempotency_keys
		 SET state = 'completed', completed_at = ?, lease_owner = NULL, lease_expires_at = NULL,
		     status = ?, content_type = ?, location = ?, body = ?
		 WHERE id = ?` + "`" + `,
		clock.Format(now), res.status, res.contentType, res.location, res.body, held.id)
	if err != nil {
		return unavailable(err)
	}
	return nil`}
