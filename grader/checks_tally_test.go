package grader_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/accesslog"
	"idemlab/kit/canonical"
	"idemlab/kit/request"
	sol0 "idemlab/solutions/stage0"
)

// S0.tally-generated's day holds transfers sent without an
// Idempotency-Key. A 201 without a key is executed and in no group: the
// check passes the reference, and fails a tally that leaves keyless
// transfers out of Executed or groups them under the key "".
func TestTallyGenerated_KeylessTransfers(t *testing.T) {
	var check grader.Check
	for _, c := range grader.Catalogue() {
		if c.ID == "S0.tally-generated" {
			check = c
		}
	}
	if check.Run == nil {
		t.Fatal("no S0.tally-generated in the catalogue")
	}
	tests := []struct {
		name     string
		tally    func(io.Reader) (accesslog.Report, error)
		wantPass bool
	}{
		{"the reference", sol0.Tally, true},
		{"keyless transfers left out of executed", rewriteKeyless(t, func(accesslog.Record) (accesslog.Record, bool) {
			return accesslog.Record{}, false
		}), false},
		{"keyless transfers grouped under the key \"\"", rewriteKeyless(t, func(rec accesslog.Record) (accesslog.Record, bool) {
			rec.Key = "(none)" // what grouping by the empty key does: one group per customer
			return rec, true
		}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runTally(t, check, tc.tally, tc.wantPass) })
	}
}

// rewriteKeyless is the reference Tally run on a log whose keyless 201s
// on POST /transfers went through edit first (dropped when it says so).
func rewriteKeyless(t *testing.T, edit func(accesslog.Record) (accesslog.Record, bool)) func(io.Reader) (accesslog.Report, error) {
	return func(log io.Reader) (accesslog.Report, error) {
		var out bytes.Buffer
		keyless := 0
		sc := bufio.NewScanner(log)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec accesslog.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				return accesslog.Report{}, err
			}
			if rec.Path == "/transfers" && rec.Status == 201 && rec.Key == "" {
				keyless++
				var keep bool
				if rec, keep = edit(rec); !keep {
					continue
				}
			}
			b, _ := json.Marshal(rec)
			out.Write(append(b, '\n'))
		}
		if keyless < 2 {
			t.Errorf("the generated day has %d keyless transfers; want at least 2, or no tally can get them wrong", keyless)
		}
		return sol0.Tally(strings.NewReader(out.String()))
	}
}

// runTally runs check with tally as the student's Tally and fails the
// test unless it passes exactly when wantPass.
func runTally(t *testing.T, check grader.Check, tally func(io.Reader) (accesslog.Report, error), wantPass bool) {
	t.Helper()
	subject := grader.Subject{Stage: 0, Name: "solutions/stage0", New: sol0.New, Tally: tally}
	res := grader.RunCheck(context.Background(), subject, check, 42, targets.InProcess)
	if res.Passed() != wantPass {
		t.Errorf("passed = %v, want %v; %v", res.Passed(), wantPass, res.Err)
	}
}

// S0.tally-traps catches the wrong tallies that a generated day lets pass
// (each of them passed S0.tally-shipped and S0.tally-generated when the
// check was written): S0.tally-traps fails every one. The reference, and
// a right tally written like the wrong ones, pass.
func TestTallyTraps_WrongTallies(t *testing.T) {
	check, ok := grader.Lookup("S0.tally-traps")
	if !ok {
		t.Fatal("no S0.tally-traps in the catalogue")
	}
	byCustomerKey := func(rec accesslog.Record, _ string) string { return rec.Customer + "\x00" + rec.Key }
	canon := func(body string) string {
		c, err := canonical.Transform([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return string(c)
	}
	tests := []struct {
		name     string
		tally    func(io.Reader) (accesslog.Report, error)
		wantPass bool
	}{
		{"the reference", sol0.Tally, true},
		{"grouped by the key alone", wrongTally(t, wrong{group: func(rec accesslog.Record, _ string) string { return rec.Key }}), false},
		{"grouped by the key in lower case", wrongTally(t, wrong{group: func(rec accesslog.Record, _ string) string { return rec.Customer + "\x00" + strings.ToLower(rec.Key) }}), false},
		{"grouped by the log's op", wrongTally(t, wrong{group: func(rec accesslog.Record, _ string) string { return rec.Op }}), false},
		{"grouped by (from account, key)", wrongTally(t, wrong{group: func(rec accesslog.Record, from string) string { return from + "\x00" + rec.Key }}), false},
		{"each double compared with the one before it", wrongTally(t, wrong{group: byCustomerKey, withPrevious: true}), false},
		{"each double compared with every earlier one", wrongTally(t, wrong{group: byCustomerKey, withAnyEarlier: true}), false},
		{"only from, to and amount compared", wrongTally(t, wrong{group: byCustomerKey, same: func(body string) string {
			var b struct {
				From, To string
				Amount   json.Number
			}
			json.Unmarshal([]byte(body), &b)
			n, _ := request.Integer(b.Amount.String())
			return fmt.Sprintf("%s %s %d", b.From, b.To, n)
		}}), false},
		{"a line that is not a record skipped", wrongTally(t, wrong{group: byCustomerKey, skipBroken: true}), false},
		{"lines of at most 64 KiB read (bufio.Scanner's default)", wrongTally(t, wrong{group: byCustomerKey, shortLines: true}), false},
		{"the reference written again (the test's own tally is right)", wrongTally(t, wrong{group: byCustomerKey, same: canon}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runTally(t, check, tc.tally, tc.wantPass) })
	}
}

// wrong is how a wrong tally groups and compares: group names a
// transfer's group from its record and its from account; same reduces a
// body to what is compared (the canonical form if nil); a double is
// compared with the one before it, or with any earlier one, instead of
// its group's first; a line that is not a record is skipped; lines are
// read with bufio.Scanner's default limit of 64 KiB.
type wrong struct {
	group                        func(rec accesslog.Record, from string) string
	same                         func(body string) string
	withPrevious, withAnyEarlier bool
	skipBroken, shortLines       bool
}

// wrongTally is a tally written as w says, otherwise as the lesson says.
func wrongTally(t *testing.T, w wrong) func(io.Reader) (accesslog.Report, error) {
	same := w.same
	if same == nil {
		same = func(body string) string {
			c, err := canonical.Transform([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return string(c)
		}
	}
	return func(log io.Reader) (accesslog.Report, error) {
		var rep accesslog.Report
		seen := map[string][]string{}
		sc := bufio.NewScanner(log)
		if !w.shortLines {
			sc.Buffer(nil, 1<<20)
		}
		for sc.Scan() {
			var rec accesslog.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				if w.skipBroken {
					continue
				}
				return accesslog.Report{}, err
			}
			if rec.Method != "POST" || rec.Path != "/transfers" || rec.Status != 201 {
				continue
			}
			rep.Executed++
			if rec.Key == "" {
				continue
			}
			var body struct {
				From   string      `json:"from"`
				Amount json.Number `json:"amount"`
			}
			if err := json.Unmarshal([]byte(rec.Body), &body); err != nil {
				return accesslog.Report{}, err
			}
			g, s := w.group(rec, body.From), same(rec.Body)
			earlier := seen[g]
			seen[g] = append(earlier, s)
			if len(earlier) == 0 {
				continue
			}
			if len(earlier) == 1 {
				rep.Groups++
			}
			rep.DoubleTransfers++
			exact := s == earlier[0]
			switch {
			case w.withPrevious:
				exact = s == earlier[len(earlier)-1]
			case w.withAnyEarlier:
				exact = slices.Contains(earlier, s)
			}
			if exact {
				rep.ExactDuplicates++
			} else {
				rep.EditedResubmissions++
			}
			amount, err := request.Integer(body.Amount.String())
			if err != nil {
				return accesslog.Report{}, err
			}
			rep.MoneySentTwice += amount
		}
		return rep, sc.Err()
	}
}

// A failed check of Tally says its money line is not judged: it counts a
// log, so "✓ no operation ran more often than asked", true of the books
// the check did not touch, would claim what it never looked at.
func TestFormat_TallyClaimsNothingOfMoney(t *testing.T) {
	check, ok := grader.Lookup("S0.tally-traps")
	if !ok {
		t.Fatal("no S0.tally-traps in the catalogue")
	}
	nothing := func(io.Reader) (accesslog.Report, error) { return accesslog.Report{}, nil }
	subject := grader.Subject{Stage: 0, Name: "stages/stage0", New: sol0.New, Tally: nothing}
	res := grader.RunCheck(context.Background(), subject, check, 42, targets.InProcess)
	if res.Passed() {
		t.Fatal("a Tally that counts nothing passes S0.tally-traps")
	}
	out := grader.Format(res, "make stage-0")
	if !strings.Contains(out, "\n  money     none: this check counts a log, it moves no money\n") || strings.Contains(out, "✓") {
		t.Errorf("the report of a Tally check:\n%s\nwants its money line to say it is not judged, and no ✓", out)
	}
}
