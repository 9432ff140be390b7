package ladder

// mutantsStage4 are the mutants caught by stage 4's checks: every wrong
// turn docs/lessons/04-replay.md names.
var mutantsStage4 = []Mutant{
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
		Name: "re-marshalled-replay", Stage: 4, CaughtBy: "S4.replay-byte-identical",
		Bug: "stores the answer as a decoded JSON value and marshals it again for a replay, so its members come back in another order",
		Edits: []Edit{
			{"response.go", `import "net/http"`, "import (\n\t\"encoding/json\"\n\t\"net/http\"\n\n\t\"idemlab/kit/respond\"\n)"},
			{"response.go", "\tw.Write(res.body)", "\tif replayed {\n" +
				"\t\t// The stored answer is JSON: send it as JSON again.\n" +
				"\t\tvar v any\n\t\tif json.Unmarshal(res.body, &v) == nil {\n\t\t\tres.body, _ = respond.Marshal(v)\n\t\t}\n\t}\n\tw.Write(res.body)"},
		},
	},
	{
		Name: "balance-from-ledger", Stage: 4, CaughtBy: "S4.balance-after-unchanged",
		Bug: "answers a replayed transfer from the ledger, with balance_after read from the account as it stands now",
		Edits: []Edit{
			{"server.go", "\tif stored != nil {\n\t\tstored.write(w, true)", "\tif stored != nil {\n" +
				"\t\t// The transfer is in the ledger: answer with it as it stands.\n" +
				"\t\tif tid, ok := strings.CutPrefix(stored.location, \"/transfers/\"); ok {\n" +
				"\t\t\tcustomer := auth.Customer(ctx)\n" +
				"\t\t\tif t, err := s.env.Bank.GetTransfer(ctx, customer, tid); err == nil {\n" +
				"\t\t\t\tif acc, err := s.env.Bank.Account(ctx, customer, t.From); err == nil {\n" +
				"\t\t\t\t\tt.BalanceAfter = acc.Balance\n\t\t\t\t}\n" +
				"\t\t\t\tstored.body, _ = respond.Marshal(t)\n\t\t\t}\n\t\t}\n" +
				"\t\tstored.write(w, true)"},
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"strings\"\n"},
		},
	},
	{
		Name: "location-not-stored", Stage: 4, CaughtBy: "S4.replay-byte-identical",
		Bug: "stores the status, Content-Type and body of an answer but not its Location, so a replay has none",
		Edits: []Edit{{"keys.go", "`SELECT status, content_type, location, body FROM idempotency_keys WHERE id = ?`, id).\n" +
			"\t\tScan(&stored.status, &stored.contentType, &stored.location, &stored.body)",
			"`SELECT status, content_type, body FROM idempotency_keys WHERE id = ?`, id).\n" +
				"\t\tScan(&stored.status, &stored.contentType, &stored.body)"}},
	},
	{
		Name: "content-type-not-stored", Stage: 4, CaughtBy: "S4.insufficient-funds-replayed",
		Bug: "stores the status, Location and body of an answer and replays every one as application/json, a stored problem included",
		Edits: []Edit{{"keys.go", "`SELECT status, content_type, location, body FROM idempotency_keys WHERE id = ?`, id).\n" +
			"\t\tScan(&stored.status, &stored.contentType, &stored.location, &stored.body)",
			"`SELECT status, location, body FROM idempotency_keys WHERE id = ?`, id).\n" +
				"\t\tScan(&stored.status, &stored.location, &stored.body)\n" +
				"\t// Every answer the API sends is JSON.\n\tstored.contentType = \"application/json\""}},
	},
	{
		Name: "refusal-not-stored", Stage: 4, CaughtBy: "S4.insufficient-funds-replayed",
		Bug: "stores only successes: a refusal for insufficient funds releases the claim, and the retry after a deposit executes",
		Edits: []Edit{{"server.go", `	case errors.Is(err, problem.InsufficientFunds):
		// A business outcome, not a failure: no money moved, and that is
		// the answer to this request for good, even if money arrives later.
		status, b := problem.Marshal(err)
		res = response{status: status, contentType: problem.ContentType, body: b}
`, ""}, {"server.go", "\t\"errors\"\n", ""}},
	},
	{
		Name: "marker-on-first", Stage: 6, CaughtBy: "S4.replay-marker-only-on-replays",
		Bug:   "sends Idempotent-Replayed: true on first responses too",
		Edits: []Edit{{"server.go", "res.write(w, false)", "res.write(w, true)"}},
	},
	{
		Name: "marker-on-refusal", Stage: 4, CaughtBy: "S4.replay-marker-only-on-replays",
		Bug: "marks every stored refusal as a replay, its first answer included, because it comes out of the key table",
		Edits: []Edit{{"response.go", "\tif replayed {\n\t\th.Set(\"Idempotent-Replayed\", \"true\")",
			"\tif replayed || res.status >= 400 {\n\t\th.Set(\"Idempotent-Replayed\", \"true\")"}},
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
		Name: "replayed-headers-unmarked", Stage: 4, CaughtBy: "S4.no-cookie-replayed",
		Bug: "keeps every header of the first answer, Set-Cookie included, and replays them as they were, with no marker",
		Edits: []Edit{
			{"server.go", "\t\"net/http\"\n", "\t\"net/http\"\n\t\"sync\"\n"},
			{"server.go", "\tres.write(w, false)\n}", "\tres.write(w, false)\n\tsent.Store(id, w.Header().Clone())\n}"},
			{"server.go", "\t\tstored.write(w, true)", "\t\t// Send the answer again exactly as it went out the first time.\n" +
				"\t\tif h, ok := sent.Load(id); ok {\n\t\t\tfor k, v := range h.(http.Header) {\n\t\t\t\tw.Header()[k] = v\n\t\t\t}\n\t\t}\n" +
				"\t\tstored.write(w, false)"},
			{"server.go", "// Server holds", "// sent keeps the headers of every first answer, by key row.\nvar sent sync.Map\n\n// Server holds"},
		},
	},
	{
		Name: "answer-stored-after-commit", Stage: 4, CaughtBy: "S4.answer-stored-with-the-money",
		Bug: "completes the key with the money but stores its answer in a statement of its own once the money has committed",
		Edits: []Edit{
			{"server.go", "\tif err := complete(ctx, tx, id, res, s.env.Clock.Now()); err != nil {\n\t\treturn response{}, err\n\t}\n" +
				"\tif err := tx.Commit(); err != nil {\n\t\treturn response{}, err\n\t}\n",
				"\tif _, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET state = 'completed', completed_at = ? WHERE id = ?`,\n" +
					"\t\tclock.Format(s.env.Clock.Now()), id); err != nil {\n\t\treturn response{}, err\n\t}\n" +
					"\tif err := tx.Commit(); err != nil {\n\t\treturn response{}, err\n\t}\n" +
					"\t// The money has moved; keep the transaction short and store the\n\t// answer after it.\n" +
					"\tif err := complete(ctx, s.env.DB, id, res, s.env.Clock.Now()); err != nil {\n\t\treturn response{}, err\n\t}\n"},
			{"keys.go", "func complete(ctx context.Context, tx *sql.Tx, id int64, res response, now time.Time) error {",
				"func complete(ctx context.Context, tx interface {\n\tExecContext(context.Context, string, ...any) (sql.Result, error)\n}, id int64, res response, now time.Time) error {"},
			{"server.go", "\t\"idemlab/kit/auth\"\n", "\t\"idemlab/kit/auth\"\n\t\"idemlab/kit/clock\"\n"},
		},
	},
}
