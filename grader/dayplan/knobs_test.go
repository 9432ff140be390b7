package dayplan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"idemlab/kit/bank"
)

// A shared key is an earlier operation's key of another customer, never
// the same customer's (that would be a retry or an edit), and the plan's
// command line asks for it again.
func TestGenerate_SharedKeys(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.SharedKeyRate = 0.1 })
	owner := map[string]string{}
	shared := 0
	for _, op := range plan.Ops {
		first, seen := owner[op.Key]
		switch {
		case !seen:
			owner[op.Key] = op.Customer
		case first == op.Customer:
			t.Errorf("%s reuses a key of its own customer %s", op.Op, op.Customer)
		default:
			shared++
		}
	}
	if shared < 20 || shared > 60 {
		t.Errorf("%d operations with another customer's key of 400 at a rate of 0.1", shared)
	}
	if got := plan.Header.Command; got != "lab gen --seed 7 --ops 400 --shared-key-rate 0.1" {
		t.Errorf("Command() = %q: it must reproduce the shared-key rate", got)
	}
}

// A day with crashes names one of the server's crash points before some
// operations, and the plan's command line asks for them again.
func TestGenerate_Crashes(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.CrashRate = 0.05 })
	points := map[string]int{}
	for _, op := range plan.Ops {
		if op.Fate.Crash != "" {
			points[op.Fate.Crash]++
		}
	}
	if n := plan.Crashes(); n < 8 || n > 35 || len(points) != len(crashPoints) {
		t.Errorf("%d crashes of 400 at a rate of 0.05, at %v; want every crash point", n, points)
	}
	for p := range points {
		if !slices.Contains(crashPoints, p) {
			t.Errorf("crash point %q is not one of %v", p, crashPoints)
		}
	}
	if got := plan.Header.Command; got != "lab gen --seed 7 --ops 400 --crash-rate 0.05" {
		t.Errorf("Command() = %q: it must reproduce the crash rate", got)
	}
}

// An invoice payment carries its reference in the body and on the
// operation; a payment again is the same invoice (accounts, amount,
// reference) of the same customer under a key of its own, once per
// invoice. A plan that has them is version 2, reads back byte for byte,
// and its command line asks for them again.
func TestGenerate_InvoicesPaidAgain(t *testing.T) {
	plan := mustGenerate(t, 7, 600, func(p *Params) { p.InvoiceRate, p.RepayRate = 0.2, 0.05 })
	byOp := map[string]Op{}
	invoices, again := 0, map[string]bool{}
	for _, op := range plan.Ops {
		byOp[op.Op] = op
		var b bank.TransferRequest
		if op.Reference == "" {
			continue
		}
		if err := json.Unmarshal(op.Body, &b); err != nil || b.Reference != op.Reference {
			t.Fatalf("%s: reference %q, body %s", op.Op, op.Reference, op.Body)
		}
		if op.Repays == "" {
			invoices++
			continue
		}
		first, ok := byOp[op.Repays]
		var f bank.TransferRequest
		json.Unmarshal(first.Body, &f)
		if !ok || first.Customer != op.Customer || first.Key == op.Key || f.From != b.From || f.To != b.To || f.Amount != b.Amount || f.Reference != b.Reference {
			t.Errorf("%s pays %s again: %s, then %s", op.Op, op.Repays, first.Body, op.Body)
		}
		if again[op.Repays] {
			t.Errorf("%s is paid again twice", op.Repays)
		}
		again[op.Repays] = true
	}
	if invoices < 70 || len(again) < 10 {
		t.Errorf("%d invoices, %d paid again, of 600 at rates 0.2 and 0.05", invoices, len(again))
	}
	roundTrips(t, plan, "lab gen --seed 7 --ops 600 --invoice-rate 0.2 --repay-rate 0.05")
}

// A settings edit names an account of its customer and both clerks'
// changes, and carries no key, body or fate.
func TestGenerate_SettingsEdits(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.SettingsEditRate = 0.05 })
	edits := 0
	for _, op := range plan.Ops {
		if op.Endpoint != Settings {
			continue
		}
		edits++
		e := op.SettingsEdit
		owner := ""
		for _, c := range plan.Customers() {
			if slices.Contains(c.Accounts, e.Account) {
				owner = c.ID
			}
		}
		if owner != op.Customer || e.Nickname == "" || e.DailyLimit <= 0 || e.DailyLimit > bank.MaxDailyLimit ||
			op.Key != "" || op.Body != nil || !reflect.DeepEqual(op.Fate, Fate{}) {
			t.Errorf("%s: %+v, %+v", op.Op, op, *e)
		}
	}
	if edits < 8 || edits > 35 {
		t.Errorf("%d settings edits of 400 at a rate of 0.05", edits)
	}
	roundTrips(t, plan, "lab gen --seed 7 --ops 400 --settings-edit-rate 0.05")
}

// Without the new knobs a plan is still version 1, byte for byte what it
// was; a version 1 plan cannot hold a settings edit.
func TestGenerate_Version1UnlessAsked(t *testing.T) {
	if v := mustGenerate(t, 7, 50).Header.Version; v != 1 {
		t.Errorf("a plan without invoices or settings edits is version %d, want 1", v)
	}
	raw := `{"format":"idemlab-day-plan","version":1}` + "\n" +
		`{"n":1,"at":"1s","op":"o","endpoint":"/accounts/{id}/settings","settings_edit":{"account":"a","daily_limit":1,"nickname":"n"},"fate":{}}` + "\n"
	if _, err := Read(strings.NewReader(raw)); err == nil {
		t.Error("a version 1 plan with a settings edit was read")
	}
}

func roundTrips(t *testing.T, plan *Plan, command string) {
	t.Helper()
	if plan.Header.Version != Version || plan.Header.Command != command {
		t.Errorf("version %d, command %q; want %d, %q", plan.Header.Version, plan.Header.Command, Version, command)
	}
	raw := plan.Bytes()
	back, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), raw) {
		t.Errorf("read and written again, the plan changed: %s", firstDiff(raw, back.Bytes()))
	}
}
