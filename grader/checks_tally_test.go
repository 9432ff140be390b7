package grader_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/targets"
	"idemlab/kit/accesslog"
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
		t.Run(tc.name, func(t *testing.T) {
			subject := grader.Subject{Stage: 0, Name: "solutions/stage0", New: sol0.New, Tally: tc.tally}
			res := grader.RunCheck(context.Background(), subject, check, 42, targets.InProcess)
			if res.Passed() != tc.wantPass {
				t.Errorf("passed = %v, want %v; %v", res.Passed(), tc.wantPass, res.Err)
			}
		})
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
