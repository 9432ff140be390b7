package ladder

import "idemlab/kit/labdb"

// mutantsStage1 are the mutants caught by stage 1's checks: every wrong
// claim that docs/lessons/01-claim.md names.
var mutantsStage1 = []Mutant{
	{
		Name: "check-then-insert", Stage: 1, CaughtBy: "S1.concurrent-duplicates",
		Bug: "looks the key up first, outside the transaction, and inserts it later, with no UNIQUE constraint",
		Edits: []Edit{
			dropUnique,
			{"server.go", "\tif err := s.env.Bank.CallCore(ctx); err != nil {", "\tvar seen int\n" +
				"\ts.env.DB.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = ?`, key).Scan(&seen)\n" +
				"\tif seen > 0 {\n\t\tproblem.Write(w, problem.New(problem.DuplicateRequest, \"key already used\"))\n\t\treturn\n\t}\n" +
				"\tif err := s.env.Bank.CallCore(ctx); err != nil {"},
		},
	},
	{
		Name: "check-in-own-transaction", Stage: 1, CaughtBy: "S1.staggered-duplicates",
		Bug: "looks the key up in a read-only transaction of its own, then inserts it with the money, with no UNIQUE constraint",
		Edits: []Edit{
			dropUnique,
			{"keys.go", "// claim inserts key inside tx.", `// used reports whether key was already claimed. It reads in a
// transaction of its own, a read-only one: looking takes no write lock.
func used(ctx context.Context, db *sql.DB, key string) (bool, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, ` + "`SELECT count(*) FROM idempotency_keys WHERE key = ?`" + `, key).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, tx.Commit()
}

// claim inserts key inside tx.`},
			{"server.go", "\tif err := s.env.Bank.CallCore(ctx); err != nil {", `	// A used key ends the request here, before it bothers the core.
	switch seen, err := used(ctx, s.env.DB, key); {
	case err != nil:
		problem.Write(w, problem.Wrap(problem.Unavailable, err, "the key store failed"))
		return
	case seen:
		problem.Write(w, problem.New(problem.DuplicateRequest, "Idempotency-Key %q was already used", key))
		return
	}
	if err := s.env.Bank.CallCore(ctx); err != nil {`},
		},
	},
	{
		Name: "check-in-same-transaction", Stage: 1, CaughtBy: "S1.concurrent-duplicates", Engine: labdb.PostgreSQL,
		Bug: "looks the key up inside the transaction that moves the money, then inserts it, with no UNIQUE constraint: safe only where one writer runs at a time",
		Edits: []Edit{
			dropUnique,
			{"keys.go", "func claim(ctx context.Context, tx *sql.Tx, key string, now time.Time) error {\n", "func claim(ctx context.Context, tx *sql.Tx, key string, now time.Time) error {\n" +
				"\t// Look first, in the same transaction as the money.\n" +
				"\tvar seen int\n" +
				"\tif err := tx.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE key = ?`, key).Scan(&seen); err != nil {\n" +
				"\t\treturn problem.Wrap(problem.Unavailable, err, \"the key store failed\")\n\t}\n" +
				"\tif seen > 0 {\n\t\treturn problem.New(problem.DuplicateRequest, \"Idempotency-Key %q was already used\", key)\n\t}\n"},
		},
	},
	{
		Name: "claims-in-memory", Stage: 1, CaughtBy: "S1.replicas",
		Bug: "keeps its claims in a map in the process's memory, with the key row written without a UNIQUE constraint: one process at a time is safe, two are not",
		Edits: []Edit{
			dropUnique,
			{"keys.go", "\t\"fmt\"\n", "\t\"fmt\"\n\t\"sync\"\n"},
			{"keys.go", "// claim inserts key inside tx.", "// claimed holds the keys this process has claimed: a map is faster than an index.\nvar claimed sync.Map\n\n// claim inserts key inside tx."},
			{"keys.go", "\tcase err == nil:\n\t\treturn nil\n", "\tcase err == nil:\n" +
				"\t\tif _, dup := claimed.LoadOrStore(key, true); dup {\n" +
				"\t\t\treturn problem.New(problem.DuplicateRequest, \"Idempotency-Key %q was already used\", key)\n\t\t}\n" +
				"\t\treturn nil\n"},
		},
	},
	{
		Name: "claim-after-commit", Stage: 1, CaughtBy: "S1.sequential-retry",
		Bug: "moves the money in one transaction and records the key in another once it has committed",
		Edits: []Edit{
			{"server.go", "\tif err := claim(ctx, tx, key, s.env.Clock.Now()); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n", ""},
			{"server.go", "\tif err := tx.Commit(); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
				"\tif err := tx.Commit(); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
					"\t// Only a transfer that went through spends its key, so that a\n" +
					"\t// failed one can be retried.\n" +
					"\tkeys, err := s.env.DB.BeginTx(ctx, nil)\n" +
					"\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
					"\tdefer keys.Rollback()\n" +
					"\tif err := claim(ctx, keys, key, s.env.Clock.Now()); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
					"\tif err := keys.Commit(); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n"},
		},
	},
	{
		Name: "insert-or-ignore", Stage: 1, CaughtBy: "S1.sequential-retry",
		Bug:   "claims with INSERT OR IGNORE and never reads the rows affected, so a duplicate is silently accepted",
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
		Bug: "answers a busy database with 503 and every other claim error, a lost race included, with 500",
		Edits: []Edit{{"keys.go", `	case labdb.IsUniqueViolation(err):
		return problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	default:
		return problem.Wrap(problem.Unavailable, err,
			"the idempotency key store failed, so nothing was executed; retry with the same key")
	}`, `	case labdb.IsBusy(err):
		return problem.Wrap(problem.Unavailable, err,
			"the idempotency key store is busy, so nothing was executed; retry with the same key")
	default:
		return problem.Wrap(problem.Internal, err, "could not claim the Idempotency-Key")
	}`}},
	},
	{
		Name: "message-match", Stage: 1, CaughtBy: "S1.sequential-retry", Engine: labdb.SQLite,
		Bug: "tells a unique violation by the message text PostgreSQL writes, so on SQLite every duplicate is a 503",
		Edits: []Edit{
			{"keys.go", "case labdb.IsUniqueViolation(err):", "case strings.Contains(err.Error(), \"duplicate key value violates unique constraint\"):"},
			{"keys.go", "\t\"fmt\"\n", "\t\"fmt\"\n\t\"strings\"\n"},
		},
	},
	{
		Name: "every-error-a-duplicate", Stage: 1, CaughtBy: "S1.fail-closed",
		Bug: "takes every claim error but a busy database for a used key, so a key-store outage answers 409 and the client stops",
		Edits: []Edit{{"keys.go", `	case labdb.IsUniqueViolation(err):
		return problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	default:
		return problem.Wrap(problem.Unavailable, err,
			"the idempotency key store failed, so nothing was executed; retry with the same key")
	}`, `	case labdb.IsBusy(err):
		return problem.Wrap(problem.Unavailable, err,
			"the idempotency key store is busy, so nothing was executed; retry with the same key")
	default:
		// The INSERT failed, so the key is there already.
		return problem.New(problem.DuplicateRequest,
			"Idempotency-Key %q was already used: the first request was executed, this one was not", key)
	}`}},
	},
	{
		Name: "fail-open", Stage: 1, CaughtBy: "S1.fail-closed",
		Bug: "treats a key-store error as a successful claim and executes anyway",
		Edits: []Edit{{"keys.go", "\tdefault:\n\t\treturn problem.Wrap(problem.Unavailable, err,",
			"\tdefault:\n\t\treturn nil\n\t\treturn problem.Wrap(problem.Unavailable, err,"}},
	},
	{
		Name: "lowercase-key", Stage: 1, CaughtBy: "S1.key-forms",
		Bug: "folds every key to lower case, so two clients' keys that differ in case are one key",
		Edits: []Edit{
			{"server.go", "\tkey, err := idemkey.FromRequest(r)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
				"\tkey, err := idemkey.FromRequest(r)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
					"\t// Keys are UUIDs, and a UUID's hex digits may come in either case.\n" +
					"\tkey = strings.ToLower(key)\n"},
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"strings\"\n"},
		},
	},
	{
		Name: "truncated-key", Stage: 1, CaughtBy: "S1.key-forms",
		Bug: "keeps the first 64 characters of a key, so long keys that differ at the end are one key",
		Edits: []Edit{{"server.go", "\tkey, err := idemkey.FromRequest(r)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
			"\tkey, err := idemkey.FromRequest(r)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
				"\t// A UUID with a prefix fits in 64 characters; keep the column small.\n" +
				"\tif len(key) > 64 {\n\t\tkey = key[:64]\n\t}\n"}},
	},
	{
		Name: "hand-unquoted-key", Stage: 1, CaughtBy: "S1.key-forms",
		Bug: "unquotes the key by cutting off the quotes, so an escaped \\\" or \\\\ in the quoted form is another key than the bare one",
		Edits: []Edit{
			{"server.go", "\tkey, err := idemkey.FromRequest(r)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
				"\tif _, err := idemkey.FromRequest(r); err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
					"\t// The draft's form is the bare key in quotes.\n" +
					"\tkey := strings.TrimSpace(r.Header.Get(idemkey.Header))\n" +
					"\tif len(key) >= 2 && key[0] == '\"' && key[len(key)-1] == '\"' {\n\t\tkey = key[1 : len(key)-1]\n\t}\n"},
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"strings\"\n"},
		},
	},
	{
		Name: "same-body-one-key", Stage: 6, CaughtBy: "S1.distinct-keys-same-body",
		Bug: "keys requests by their body's fingerprint, so two operations with the same body are one",
		Edits: []Edit{{"server.go", "\tfp, err := fingerprint(raw)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n",
			"\tfp, err := fingerprint(raw)\n\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n\tsc.key = fp\n"}},
	},
}

// dropUnique takes the UNIQUE constraint off stage 1's key column: the
// wrong claims that look the key up (or keep it elsewhere) do without it.
var dropUnique = Edit{"keys.go", "key        TEXT NOT NULL UNIQUE,", "key        TEXT NOT NULL,"}
