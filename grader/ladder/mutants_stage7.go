package ladder

// mutantsStage7 are the mutants caught by stage 7's checks: every lost
// update that docs/lessons/07-lost-updates.md names.
var mutantsStage7 = []Mutant{
	{
		Name: "read-then-write", Stage: 7, CaughtBy: "S7.many-clerks",
		Bug: "reads the version and compares it in Go, waits on the core, then writes WHERE account_id = ? alone: clerks that read together all save",
		Edits: []Edit{
			{"settings.go", "\t// The core confirms every change of a limit, outside any transaction.\n", "\t// A stale copy is refused before the core is bothered.\n" +
				"\tvar current int64\n" +
				"\tif err := s.env.DB.QueryRowContext(ctx, `SELECT version FROM account_settings WHERE account_id = ?`, account).Scan(&current); err != nil {\n" +
				"\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n" +
				"\tif current != based {\n\t\tproblem.Write(w, stale(account, ifMatch))\n\t\treturn\n\t}\n" +
				"\t// The core confirms every change of a limit, outside any transaction.\n"},
			writeWithoutVersion,
		},
	},
	{
		Name: "if-match-ignored", Stage: 7, CaughtBy: "S7.two-clerks",
		Bug:   "requires If-Match but writes WHERE account_id = ? alone: the last clerk to save wins, whatever version it read",
		Edits: []Edit{writeWithoutVersion},
	},
	{
		Name: "version-not-moved-on", Stage: 7, CaughtBy: "S7.two-clerks",
		Bug:   "writes over the version If-Match names without moving it on: the ETag every clerk holds stays current after a PUT",
		Edits: []Edit{{"settings.go", "SET nickname = ?, daily_limit = ?, version = version + 1", "SET nickname = ?, daily_limit = ?"}},
	},
	{
		Name: "version-only-on-rename", Stage: 7, CaughtBy: "S7.daily-limit",
		Bug: "moves the version on only when the nickname changes: the ETag does not change with the daily limit, so a stale rename puts an old limit back",
		Edits: []Edit{
			{"settings.go", "SET nickname = ?, daily_limit = ?, version = version + 1",
				"SET version = CASE WHEN nickname = ? THEN version ELSE version + 1 END, nickname = ?, daily_limit = ?"},
			{"settings.go", "want.Nickname, want.DailyLimit, account, based)", "want.Nickname, want.Nickname, want.DailyLimit, account, based)"},
			{"settings.go", "\twriteSettings(w, want, based+1)\n", "\t_, now, err := s.env.Bank.AccountSettings(ctx, auth.Customer(ctx), account)\n" +
				"\tif err != nil {\n\t\tproblem.Write(w, err)\n\t\treturn\n\t}\n\twriteSettings(w, want, now)\n"},
		},
	},
	{
		Name: "answer-old-etag", Stage: 7, CaughtBy: "S7.etag-names-the-version",
		Bug:   "answers a PUT with the ETag it was sent, not the one its write made: the clerk's next save is refused",
		Edits: []Edit{{"settings.go", "\twriteSettings(w, want, based+1)\n", "\twriteSettings(w, want, based)\n"}},
	},
	{
		Name: "weak-etag", Stage: 7, CaughtBy: "S7.etag-names-the-version",
		Bug:   "sends a weak ETag (W/ before the quotes), which If-Match, comparing strongly, never matches: no save ever succeeds",
		Edits: []Edit{{"settings.go", "return `\"v` + strconv.FormatInt(version, 10) + `\"`", "return `W/\"v` + strconv.FormatInt(version, 10) + `\"`"}},
	},
	{
		Name: "if-match-optional", Stage: 7, CaughtBy: "S7.precondition-required",
		Bug: "takes a PUT without If-Match as one based on whatever is there now, instead of answering 428",
		Edits: []Edit{{"settings.go", "\t\tproblem.Write(w, problem.New(problem.PreconditionRequired,\n" +
			"\t\t\t\"send If-Match with the ETag of the settings this change was based on (GET /accounts/%s/settings)\", account))\n\t\treturn\n",
			"\t\t// No If-Match: the client means whatever is there now.\n" +
				"\t\t_, current, err := s.env.Bank.AccountSettings(ctx, auth.Customer(ctx), account)\n" +
				"\t\tif err != nil {\n\t\t\tproblem.Write(w, err)\n\t\t\treturn\n\t\t}\n" +
				"\t\tifMatch = etag(current)\n"}},
	},
	{
		Name: "stale-answered-ok", Stage: 7, CaughtBy: "S7.retried-put",
		Bug: "answers a PUT whose version has moved on 200 with what it sent, taking it for the retry of a save that went through",
		Edits: []Edit{{"settings.go", "\tcase n == 0:\n\t\tproblem.Write(w, stale(account, ifMatch))\n",
			"\tcase n == 0:\n\t\t// The version moved on: this is the retry of a save that went through.\n\t\twriteSettings(w, want, based+1)\n"}},
	},
}

// writeWithoutVersion drops the version from the settings' UPDATE: it
// writes whatever version the row is at.
var writeWithoutVersion = Edit{"settings.go", "WHERE account_id = ? AND version = ?`,\n\t\twant.Nickname, want.DailyLimit, account, based)",
	"WHERE account_id = ?`,\n\t\twant.Nickname, want.DailyLimit, account)"}
