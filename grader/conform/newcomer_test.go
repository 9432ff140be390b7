package conform

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"idemlab/grader/conform/testdata/walletd"
)

// TestDocs_ProfileExampleIsTheTestdataFile: the profile docs/conform.md
// walks through is, byte for byte, the payserver's profile the tests
// run, and it loads: the page cannot drift from what works.
func TestDocs_ProfileExampleIsTheTestdataFile(t *testing.T) {
	doc, err := os.ReadFile("../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Writing a profile\n.*?```json\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/conform.md has no ```json block under \"## Writing a profile\"")
	}
	file, err := os.ReadFile("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m[1], file) {
		t.Errorf("the profile in docs/conform.md differs from testdata/profiles/payserver.json:\n%s\n---\n%s", m[1], file)
	}
	if _, err := Load("testdata/profiles/payserver.json"); err != nil {
		t.Error(err)
	}
}

// TestDocs_MaxOperationsOfAWholeRun: the number of sends docs/conform.md
// says a run of every scenario needs is what the scenarios send.
func TestDocs_MaxOperationsOfAWholeRun(t *testing.T) {
	doc, err := os.ReadFile("../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`a run of every scenario needs (\d+)`).FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/conform.md does not say "a run of every scenario needs N"`)
	}
	total := 0
	for _, s := range scenarios {
		total += s.Sends
	}
	if n, _ := strconv.Atoi(string(m[1])); n != total {
		t.Errorf("docs/conform.md says %d sends; the scenarios send %d", n, total)
	}
}

// TestNewcomer_WalletdProfile: the profile written for walletd from
// docs/conform.md alone (a PUT, a path per principal, the amount three
// levels deep, edited by a JSON pointer, a balance as the witness)
// finds the server valid with every scenario tried but the restart, and finds the money
// harmed when the server ignores its keys: the profile's witness really
// sees the money.
func TestNewcomer_WalletdProfile(t *testing.T) {
	p, err := Load("testdata/profiles/walletd.json")
	if err != nil {
		t.Fatal(err)
	}
	results := runAgainst(t, walletd.New(), p)
	for _, r := range results {
		if r.ID == "retry-after-restart" {
			continue // walletd has no restart: it keeps everything in memory
		}
		if r.NotTried != "" || r.Money != MoneyClean || r.Contract == ContractUnmet {
			t.Errorf("%s: money %s, contract %s, not tried %q\n  got %s\n  saw %s", r.ID, r.Money, r.Contract, r.NotTried, r.Got, r.Saw)
		}
	}
	careless := walletd.New()
	careless.IgnoreKeys = true
	if s := Summarize(runAgainst(t, careless, p)); s.Money != MoneyHarmed {
		t.Errorf("walletd ignoring its keys: money %s, want %s", s.Money, MoneyHarmed)
	}
}

// TestDocs_EveryScenarioHasARow: docs/conform.md's table of what
// conform tries has a row for each scenario, and none for a scenario
// that is not.
func TestDocs_EveryScenarioHasARow(t *testing.T) {
	doc, err := os.ReadFile("../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| .* \\| .* \\| .* \\|$").FindAllSubmatch(doc, -1) {
		rows[string(m[1])] = true
	}
	for _, s := range scenarios {
		if !rows[s.ID] {
			t.Errorf("docs/conform.md has no row for %s", s.ID)
		}
		delete(rows, s.ID)
	}
	for id := range rows {
		t.Errorf("docs/conform.md has a row for %s, which is no scenario", id)
	}
}

// TestDocs_LabProfileVariablesAreListed: every environment variable the
// lab's profile reads is named in docs/conform.md, with where it comes
// from; "(LAB_TOKEN_A, LAB_FROM_A, …)" left a newcomer to guess the rest.
func TestDocs_LabProfileVariablesAreListed(t *testing.T) {
	doc, errDoc := os.ReadFile("../../docs/conform.md")
	profile, err := os.ReadFile("testdata/profiles/lab.json")
	if err := errors.Join(errDoc, err); err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\{\{env\.([A-Z_]+)\}\}`).FindAllSubmatch(profile, -1)
	if len(names) == 0 {
		t.Fatal("lab.json reads no environment variable")
	}
	for _, m := range names {
		row := regexp.MustCompile("(?m)^\\| `" + string(m[1]) + "` \\| `customers\\[[0-9]\\]\\..*\\|$")
		if !row.Match(doc) {
			t.Errorf("docs/conform.md has no table row for `%s` that says where in the reset's answer it comes from", m[1])
		}
	}
}

// TestNewcomer_PerOperationTheWrongWay: a profile whose per_operation
// has the wrong sign sees every operation move the witness by what was
// due, the other way; the report says to check the sign, not that
// something else moves the witness.
func TestNewcomer_PerOperationTheWrongWay(t *testing.T) {
	p, err := Load("testdata/profiles/walletd.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Witness.PerOperation = "amount"
	r := byID(runAgainst(t, walletd.New(), p))["key-sf-string"]
	if want := `is per_operation's sign right`; !strings.Contains(r.Saw, want) || strings.Contains(r.Saw, "something else") {
		t.Errorf("saw %s\n  want it to say %q, and not blame something else", r.Saw, want)
	}
}

// TestBooks_SawNamesTheOperationADifferenceIs: a balance moved by
// operations of different amounts cannot be counted in executions of one
// amount; the difference from what was due is, when it is a whole number
// of one operation's moves, and the saw line says which one ran how often.
// It once said only "moved by -8058" beside "a move of -6256".
func TestBooks_SawNamesTheOperationADifferenceIs(t *testing.T) {
	p, err := Load("testdata/profiles/walletd.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := walletd.New()
	srv.IgnoreKeys = true
	r := byID(runAgainst(t, srv, p))["retry-replayed"]
	if want := "is 2 moves of one operation: one operation executed 3 times where 1 was due"; r.Money != MoneyHarmed || !strings.Contains(r.Saw, want) {
		t.Errorf("money %s, saw %s\n  want harmed, saying %q", r.Money, r.Saw, want)
	}
}

// TestDocs_TheFirstCommandsWorkOnAFreshClone: the commands at the top of
// docs/conform.md name what a fresh clone has: each make target is in
// the Makefile, each package go builds and each --profile is a file, and
// bin/payserver, which the block builds, is what it serves. The block
// once ended with --profile my-api.json, which no clone has, against
// --url http://127.0.0.1:9000, where nothing it starts listens. It stops
// what it served with kill $!, which any shell has: kill %1 needs job
// control, and in sh -c (dash) it stopped nothing, bin/payserver left
// running on its port.
func TestDocs_TheFirstCommandsWorkOnAFreshClone(t *testing.T) {
	doc, err := os.ReadFile("../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```\n(make lab.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/conform.md has no command block starting with make lab")
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	served, stopped := "", false
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		cmd := strings.Fields(strings.SplitN(line, "#", 2)[0])
		switch {
		case cmd[0] == "make":
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmd[1]) + `:`).Match(makefile) {
				t.Errorf("%q: the Makefile has no target %s", line, cmd[1])
			}
		case cmd[0] == "go" && cmd[1] == "build":
			if _, err := os.Stat(filepath.Join("../..", cmd[len(cmd)-1], "main.go")); err != nil {
				t.Errorf("%q: no command at %s: %v", line, cmd[len(cmd)-1], err)
			}
			if cmd[2] != "-o" || cmd[3] != "bin/payserver" {
				t.Errorf("%q: want it to build bin/payserver", line)
			}
		case cmd[0] == "bin/payserver":
			if cmd[len(cmd)-1] != "&" {
				t.Errorf("%q: want it served in the background, with &", line)
			}
			served = cmd[len(cmd)-2]
		case cmd[0] == "kill":
			if len(cmd) != 2 || cmd[1] != "$!" || served == "" {
				t.Errorf("%q: want kill $!, after bin/payserver … &: the last command started with & in any shell, pasted or in sh -c", line)
			}
			stopped = true
		case cmd[0] == "bin/lab":
			for i, f := range cmd {
				if f == "--profile" {
					if _, err := os.Stat(filepath.Join("../..", cmd[i+1])); err != nil {
						t.Errorf("%q: %v", line, err)
					}
				}
				if f == "--url" && cmd[i+1] != "http://"+served {
					t.Errorf("%q: --url %s, but bin/payserver listens on %s", line, cmd[i+1], served)
				}
			}
		}
	}
	if served == "" {
		t.Error("the block serves no API to attack")
	}
	if !stopped {
		t.Error("the block leaves bin/payserver running: no kill stops it")
	}
}
