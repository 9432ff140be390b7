package ladder

// mutantsStage2 are the mutants caught by stage 2's checks.
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
}
