package grader

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/judging"
	"idemlab/grader/replay"
	"idemlab/grader/timeline"
)

func TestCountFindings_SumsEachHarmUnderTheReplaysName(t *testing.T) {
	results := []Result{
		{Check: Check{ID: "S1.a"}, Err: &judging.Failure{Harm: judging.Double, Excess: []string{"op-0000000a", "op-0000000b", "op-0000000a"}}},
		// No operation named apart: the evidence names them.
		{Check: Check{ID: "S1.b"}, Err: &judging.Failure{Harm: judging.Double, Got: "op op-0000000c executed twice",
			Contract: &judging.Failure{Got: "201 without a key"}}},
		{Check: Check{ID: "S2.c"}, Err: &judging.Failure{Harm: judging.Lost, Missing: []string{"op-0000000d"}}},
		// A finding that names no operation counts one.
		{Check: Check{ID: "S2.d"}, Err: &judging.Failure{Harm: judging.ToldDuplicate}},
		{Check: Check{ID: "S3.e"}, Err: &judging.Failure{Got: "409 duplicate-request",
			Contract: &judging.Failure{Got: "no Retry-After", Contract: &judging.Failure{Got: "plain text"}}}},
		{Check: Check{ID: "S9.f"}, Err: &judging.Failure{Harm: judging.NotPosted, Got: "never posted: tr_aa1"}},
		// A core ledger finding counts every transfer it is about, not
		// the operations its story shows.
		{Check: Check{ID: "S9.g"}, Err: &judging.Failure{Harm: judging.PostedTwice, Sent: `{"metadata":{"op":"op-0000000e"}}`,
			Got: "posted more than once: tr_bb2 ×2, tr_cc3 ×2, tr_dd4 ×2 … and 1 more", Refs: []string{"tr_bb2", "tr_cc3", "tr_dd4", "tr_ee5"}}},
		// A double the books showed leads the wrong answer the check
		// found itself: both count.
		{Check: Check{ID: "S4.h"}, Err: &judging.Failure{Harm: judging.Double, Excess: []string{"op-0000000f"},
			Lesser: &judging.Failure{Harm: judging.WrongAnswer, Sent: `{"metadata":{"op":"op-0000000f"}}`}}},
		{Check: Check{ID: "S1.passed"}},
		{Check: Check{ID: "S6.not-run"}, Err: &judging.Unobserved{What: "the key table"}},
	}
	got, err := CountFindings(results)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{DoubleApplied: 4, LostTransfers: 1, ToldDuplicate: 1, WrongAnswers: 1, NotPosted: 1, PostedTwice: 4, ContractDifferences: 4}
	if got != want {
		t.Errorf("CountFindings = %+v, want %+v", got, want)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var replayed replay.DayCounts
	if err := json.Unmarshal(raw, &replayed); err != nil {
		t.Fatal(err)
	}
	if replayed.DoubleApplied != 4 || replayed.LostTransfers != 1 || replayed.ToldDuplicate != 1 || replayed.NotPosted != 1 || replayed.PostedTwice != 4 {
		t.Errorf("the replay's reader of the counts reads %+v from %s", replayed, raw)
	}
}

func TestCountFindings_HasACountForEveryHarm(t *testing.T) {
	harms := declaredHarms(t)
	if len(harms) < 13 {
		t.Fatalf("found %d harms in judging/verdict.go: %v", len(harms), harms)
	}
	for _, h := range harms {
		var c Counts
		if c.of(h) == nil {
			t.Errorf("the harm %q has no count in results.json", h)
		}
		if _, err := CountFindings([]Result{{Check: Check{ID: "S1.x"}, Err: &judging.Failure{Harm: h}}}); err != nil {
			t.Error(err)
		}
	}
	if _, err := CountFindings([]Result{{Check: Check{ID: "S1.x"}, Err: &judging.Failure{Harm: "new harm"}}}); err == nil {
		t.Error("a harm with no count was counted nowhere, and no error said so")
	}
}

// declaredHarms are the constants of type Harm that judging declares.
func declaredHarms(t *testing.T) []judging.Harm {
	f, err := parser.ParseFile(token.NewFileSet(), "judging/verdict.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var harms []judging.Harm
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if typ, ok := v.Type.(*ast.Ident); !ok || typ.Name != "Harm" {
				continue
			}
			for _, e := range v.Values {
				lit, ok := e.(*ast.BasicLit)
				if !ok {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				harms = append(harms, judging.Harm(s))
			}
		}
	}
	return harms
}

func TestWriteHistory_EveryLineNamesItsCheckInTheOrderItHappened(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	failed := Result{Check: Check{ID: "S1.concurrent-duplicates"}, Err: &judging.Failure{Harm: judging.Double},
		History: &timeline.History{
			Attempts: []timeline.Attempt{
				{ID: "a1", Client: "client 1", Method: "POST", Path: "/transfers", Key: "k-1", Op: "op-0000000a",
					Start: at(10), End: at(40), Status: 201, Got: "201 {}"},
				{ID: "a2", Client: "client 2", Method: "POST", Path: "/transfers", Key: "k-1", Op: "op-0000000a",
					Start: at(12), End: at(50), Err: "connection reset", Cut: true},
			},
			Events: []timeline.Event{
				{At: at(30), Kind: timeline.Execution, Attempt: "a2", Op: "op-0000000a", Count: 2, Ref: "tr_b"},
				{At: at(20), Kind: timeline.Execution, Attempt: "a1", Op: "op-0000000a", Count: 1, Ref: "tr_a"},
				{At: at(0), Kind: timeline.Armed, Detail: "after-commit"},
			},
		}}
	passed := Result{Check: Check{ID: "S0.happy-path"}, History: &timeline.History{
		Attempts: []timeline.Attempt{{ID: "a1", Client: "client 1", Method: "GET", Path: "/accounts/acc_1", Start: at(500), End: at(501), Status: 200}},
	}}
	notRun := Result{Check: Check{ID: "S6.crash"}, Err: errors.New("could not start the server")}
	var b bytes.Buffer
	if err := WriteHistory(&b, []Result{failed, notRun, passed}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []struct {
		check, event, at, attempt string
	}{
		{"S1.concurrent-duplicates", timeline.Armed, "0s", ""},
		{"S1.concurrent-duplicates", "", "10ms", "a1"},
		{"S1.concurrent-duplicates", "", "12ms", "a2"},
		{"S1.concurrent-duplicates", timeline.Execution, "20ms", "a1"},
		{"S1.concurrent-duplicates", timeline.Execution, "30ms", "a2"},
		// Each check's clock starts at its own first line.
		{"S0.happy-path", "", "0s", "a1"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		var l struct {
			Check     string `json:"check"`
			Event     string `json:"event"`
			At        string `json:"at"`
			AttemptID string `json:"attempt_id"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatal(err)
		}
		if l.Check != w.check || l.Event != w.event || l.At != w.at || l.AttemptID != w.attempt {
			t.Errorf("line %d = %s, want check %s, event %q, at %s, attempt %s", i+1, lines[i], w.check, w.event, w.at, w.attempt)
		}
	}
	// The day replay's reader reads the names the two files share.
	var a replay.Attempt
	if err := json.Unmarshal([]byte(lines[2]), &a); err != nil {
		t.Fatalf("the replay's reader: %v", err)
	}
	if a.Op != "op-0000000a" || a.Key != "k-1" || a.Method != "POST" || a.Endpoint != "/transfers" ||
		a.At != dayplan.Duration(12*time.Millisecond) || a.Error != "connection reset" {
		t.Errorf("the replay's reader reads %+v from %s", a, lines[2])
	}
}
