package ladder

import "idemlab/kit/labdb"

// mutantsStage8 are the mutants caught by stage 8's checks: every way of
// keeping one transfer per reference that docs/lessons/08-zombie-resources.md
// names as wrong.
var mutantsStage8 = []Mutant{
	{
		Name: "reference-check-then-insert", Stage: 8, CaughtBy: "S8.two-clerks",
		Bug: "looks the reference up before the request is claimed, outside any transaction, and inserts it with the transfer, with no UNIQUE constraint",
		Edits: []Edit{
			dropReferenceUnique,
			{"server.go", "\ts.serve(w, r, \"/transfers\", raw,", "\tif req.Reference != \"\" {\n" +
				"\t\tvar paid int\n" +
				"\t\ts.env.DB.QueryRowContext(r.Context(), `SELECT count(*) FROM transfer_references WHERE customer = ? AND reference = ?`,\n" +
				"\t\t\tauth.Customer(r.Context()), req.Reference).Scan(&paid)\n" +
				"\t\tif paid > 0 {\n" +
				"\t\t\tproblem.Write(w, problem.New(problem.DuplicateReference, \"reference %q was already paid\", req.Reference))\n" +
				"\t\t\treturn\n\t\t}\n\t}\n" +
				"\ts.serve(w, r, \"/transfers\", raw,"},
		},
	},
	{
		Name: "reference-check-in-same-transaction", Stage: 8, CaughtBy: "S8.two-clerks", Engine: labdb.PostgreSQL,
		Bug: "looks the reference up inside the transaction that moves the money, before the transfer, then inserts it, with no UNIQUE constraint: safe only where one writer runs at a time",
		Edits: []Edit{
			dropReferenceUnique,
			{"server.go", "\t\tt, err := s.env.Bank.Transfer(ctx, tx, customer, req)\n\t\tif err != nil {\n\t\t\treturn nil, \"\", err\n\t\t}\n",
				"\t\t// Look first, in the same transaction as the money.\n" +
					"\t\tvar paid int\n" +
					"\t\tif err := tx.QueryRowContext(ctx, `SELECT count(*) FROM transfer_references WHERE customer = ? AND reference = ?`,\n" +
					"\t\t\tcustomer, req.Reference).Scan(&paid); err != nil {\n\t\t\treturn nil, \"\", err\n\t\t}\n" +
					"\t\tif paid > 0 {\n\t\t\treturn nil, \"\", duplicate(ctx, tx, customer, req.Reference)\n\t\t}\n" +
					"\t\tt, err := s.env.Bank.Transfer(ctx, tx, customer, req)\n\t\tif err != nil {\n\t\t\treturn nil, \"\", err\n\t\t}\n"},
		},
	},
	{
		Name: "reference-not-scoped", Stage: 8, CaughtBy: "S8.other-customer",
		Bug: "makes a reference unique across every customer: one customer's invoice number refuses another's payment, and shows it the first one's transfer",
		Edits: []Edit{
			{"references.go", "\tUNIQUE (customer, reference)\n", "\tUNIQUE (reference)\n"},
			{"references.go", "WHERE customer = ? AND reference = ?`,\n\t\tcustomer, reference)", "WHERE reference = ?`,\n\t\treference)"},
		},
	},
	{
		Name: "references-purged", Stage: 8, CaughtBy: "S8.after-expiry",
		Bug: "keeps references as long as keys: the purge deletes them with the expired keys, and the late retry of a purged key pays again",
		Edits: []Edit{{"keys.go", "\tres, err := db.ExecContext(ctx,\n\t\t`DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`",
			"\t// A reference is kept as long as its key.\n" +
				"\tif _, err := db.ExecContext(ctx, `DELETE FROM transfer_references WHERE created_at <= ?`, expiredAt(now, cfg)); err != nil {\n" +
				"\t\treturn 0, fmt.Errorf(\"purge transfer_references: %w\", err)\n\t}\n" +
				"\tres, err := db.ExecContext(ctx,\n\t\t`DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`"}},
	},
	{
		Name: "empty-reference-held", Stage: 8, CaughtBy: "S8.without-reference",
		Bug:   "holds every transfer's reference, the empty one of a transfer without a reference too: the second transfer without one is refused",
		Edits: []Edit{{"server.go", "\t\tif req.Reference != \"\" {\n\t\t\tif err := holdReference(", "\t\t{\n\t\t\tif err := holdReference("}},
	},
	{
		Name: "refusal-commits-the-money", Stage: 8, CaughtBy: "S8.two-keys",
		Bug:   "stores the duplicate-reference answer in the transaction that made the transfer: the client is told 409, and the transfer commits with the answer",
		Edits: []Edit{{"server.go", "\t\ttx.Rollback()\n\t\treturn s.refuse(ctx, held, refusal(err))\n", "\t\tres = refusal(err)\n"}},
	},
}

// dropReferenceUnique takes the UNIQUE constraint off transfer_references:
// nothing but the code's own look keeps two rows of one reference apart.
var dropReferenceUnique = Edit{"references.go", "\tcreated_at  TEXT NOT NULL,\n\tUNIQUE (customer, reference)\n", "\tcreated_at  TEXT NOT NULL\n"}
