package ladder

// mutantsStage4 are the mutants caught by stage 4's checks.
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
		Name: "marker-on-first", Stage: 6, CaughtBy: "S4.replay-marker-only-on-replays",
		Bug:   "sends Idempotent-Replayed: true on first responses too",
		Edits: []Edit{{"server.go", "res.write(w, false)", "res.write(w, true)"}},
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
}
