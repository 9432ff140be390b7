package ladder

// mutantsStage2 are the mutants caught by stage 2's checks: every wrong
// fingerprint that docs/lessons/02-fingerprint.md names.
var mutantsStage2 = []Mutant{
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
		Name: "compact-fingerprint", Stage: 2, CaughtBy: "S2.equivalent-bodies",
		Bug: "fingerprints json.Compact of the body, which drops the whitespace and keeps the member order, the escapes and the number spellings",
		Edits: []Edit{
			{"fingerprint.go", "\tcanon, err := canonical.Transform(raw)\n",
				"\t// Whitespace is the only difference between two spellings of one body.\n" +
					"\tvar compact bytes.Buffer\n\terr := json.Compact(&compact, raw)\n\tcanon := compact.Bytes()\n"},
			{"fingerprint.go", "\t\"idemlab/kit/canonical\"\n", "\t\"bytes\"\n\t\"encoding/json\"\n"},
		},
	},
	{
		Name: "marshal-decoded-map", Stage: 2, CaughtBy: "S2.fingerprint-is-rfc8785",
		Bug: "fingerprints json.Marshal of the body decoded into a map: a function of the value, but not RFC 8785 (HTML escapes, UTF-8 member order)",
		Edits: []Edit{
			{"fingerprint.go", "\tcanon, err := canonical.Transform(raw)\n",
				"\t// encoding/json writes a map's members sorted: one spelling per value.\n" +
					"\tvar v any\n\terr := json.Unmarshal(raw, &v)\n\tvar canon []byte\n" +
					"\tif err == nil {\n\t\tcanon, err = json.Marshal(v)\n\t}\n"},
			{"fingerprint.go", "\t\"idemlab/kit/canonical\"\n", "\t\"encoding/json\"\n"},
		},
	},
	{
		Name: "marshal-request-struct", Stage: 2, CaughtBy: "S2.fingerprint-is-rfc8785",
		Bug: "fingerprints json.Marshal of the validated request struct: fields in declaration order, HTML escapes",
		Edits: []Edit{
			{"server.go", "\treq, raw, err := request.Transfer(r)\n",
				"\treq, _, err := request.Transfer(r)\n\t// Fingerprint what was asked for, not how it was spelled.\n\traw, _ := json.Marshal(req)\n"},
			{"server.go", "\treq, raw, err := request.Deposit(r)\n",
				"\treq, _, err := request.Deposit(r)\n\traw, _ := json.Marshal(req)\n"},
			{"server.go", "import (\n\t\"context\"\n", "import (\n\t\"context\"\n\t\"encoding/json\"\n"},
			{"fingerprint.go", "canon, err := canonical.Transform(raw)", "canon, err := raw, error(nil)\n\t_ = canonical.Transform"},
		},
	},
	{
		Name: "money-only-fingerprint", Stage: 2, CaughtBy: "S2.edited-resubmission",
		Bug: "fingerprints only who pays whom how much, so an edited memo or metadata is taken for a retry",
		Edits: []Edit{
			{"fingerprint.go", "\tcanon, err := canonical.Transform(raw)\n",
				"\t// Only the money matters: who pays whom, and how much.\n" +
					"\tvar money struct {\n\t\tFrom, To, Account string\n\t\tAmount            float64\n\t}\n" +
					"\terr := json.Unmarshal(raw, &money)\n\tvar canon []byte\n" +
					"\tif err == nil {\n\t\tcanon, err = json.Marshal(money)\n\t}\n"},
			{"fingerprint.go", "\t\"idemlab/kit/canonical\"\n", "\t\"encoding/json\"\n"},
		},
	},
	{
		Name: "fingerprint-without-metadata", Stage: 2, CaughtBy: "S2.edited-resubmission",
		Bug: "leaves metadata out of the fingerprint, so a request with other metadata is taken for a retry",
		Edits: []Edit{
			{"fingerprint.go", "\tcanon, err := canonical.Transform(raw)\n",
				"\t// metadata is the client's own bookkeeping, not part of what it asks.\n" +
					"\tvar members map[string]json.RawMessage\n\tif err := json.Unmarshal(raw, &members); err == nil {\n" +
					"\t\tdelete(members, \"metadata\")\n\t\traw, _ = json.Marshal(members)\n\t}\n" +
					"\tcanon, err := canonical.Transform(raw)\n"},
			{"fingerprint.go", "\t\"idemlab/kit/canonical\"\n", "\t\"encoding/json\"\n\n\t\"idemlab/kit/canonical\"\n"},
		},
	},
	{
		Name: "edit-replaces-claim", Stage: 2, CaughtBy: "S2.edited-resubmission",
		Bug: "takes a changed fingerprint for the client's corrected request: it overwrites the claim and executes",
		Edits: []Edit{{"keys.go", "\tcase stored != fp:\n\t\treturn problem.New(problem.IdempotencyKeyReused,\n" +
			"\t\t\t\"Idempotency-Key %q was first used with a different request; an edited request needs a new key\", key)\n",
			"\tcase stored != fp:\n\t\t// The client corrected its request: the new one replaces the first.\n" +
				"\t\tif _, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET fingerprint = ? WHERE key = ?`, fp, key); err != nil {\n" +
				"\t\t\treturn unavailable(err)\n\t\t}\n\t\treturn nil\n"}},
	},
	{
		Name: "unique-key-and-fingerprint", Stage: 2, CaughtBy: "S2.edited-resubmission",
		Bug: "puts the UNIQUE constraint on (key, fingerprint), so an edited body under a used key is a new claim and executes",
		Edits: []Edit{
			{"keys.go", "\tkey         TEXT NOT NULL UNIQUE,\n", "\tkey         TEXT NOT NULL,\n"},
			{"keys.go", "\tcreated_at  TEXT NOT NULL\n)`", "\tcreated_at  TEXT NOT NULL,\n\tUNIQUE (key, fingerprint)\n)`"},
		},
	},
}
