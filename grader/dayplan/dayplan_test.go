package dayplan

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"idemlab/kit/bank"
	"idemlab/kit/canonical"
)

// mustGenerate generates the day of seed with ops operations, the default
// parameters changed by tweaks.
func mustGenerate(t *testing.T, seed uint64, ops int, tweaks ...func(p *Params)) *Plan {
	t.Helper()
	params := DefaultParams(seed, ops)
	for _, tweak := range tweaks {
		tweak(&params)
	}
	p, err := Generate(seed, params)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGenerate_SameSeedSameBytes(t *testing.T) {
	a := mustGenerate(t, 7, 500).Bytes()
	b := mustGenerate(t, 7, 500).Bytes()
	if !bytes.Equal(a, b) {
		t.Fatal("two plans from seed 7 differ")
	}
	if c := mustGenerate(t, 8, 500).Bytes(); bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 gave the same plan")
	}
}

func TestRead_RoundTripsByteForByte(t *testing.T) {
	plan := mustGenerate(t, 3, 300)
	raw := plan.Bytes()
	back, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Bytes(); !bytes.Equal(got, raw) {
		t.Fatalf("read and written again, the plan changed:\n%s\n---\n%s", firstDiff(raw, got), "")
	}
	if back.Header.Command != "lab gen --seed 3 --ops 300" {
		t.Errorf("command %q", back.Header.Command)
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return la[i] + "\n" + lb[i]
		}
	}
	return "lengths differ"
}

func TestRead_RefusesOtherFiles(t *testing.T) {
	for name, text := range map[string]string{
		"empty":          "",
		"access log":     `{"time":"2026-01-01T00:00:00Z","method":"POST","path":"/transfers","status":201}` + "\n",
		"newer version":  `{"format":"idemlab-day-plan","version":3}` + "\n",
		"unknown point":  `{"format":"idemlab-day-plan","version":1}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/transfers","body":{},"fate":{"faults":["gremlins"]}}` + "\n",
		"other endpoint": `{"format":"idemlab-day-plan","version":1}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/refunds","body":{},"fate":{}}` + "\n",
		// The reconciliation knows a transfer by its op and amount: an edit
		// to the same amount would count the original as the edit.
		"edit to the same amount": `{"format":"idemlab-day-plan","version":1}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/transfers","body":{"amount":500},"fate":{"edited_amount":500}}` + "\n",
		"edit to the op's amount": `{"format":"idemlab-day-plan","version":1}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/deposits","amount":700,"body":{"amount":700},"fate":{"edited_amount":700}}` + "\n",
		"edited settings":         `{"format":"idemlab-day-plan","version":2}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/accounts/{id}/settings","settings_edit":{"daily_limit":1,"nickname":"x"},"body":{},"fate":{"edited_amount":700}}` + "\n",
	} {
		if _, err := Read(strings.NewReader(text)); err == nil {
			t.Errorf("%s: read without error", name)
		} else if text != "" && !strings.HasPrefix(err.Error(), "plan line ") && !strings.HasPrefix(err.Error(), "read plan") {
			t.Errorf("%s: %v, want the line named", name, err)
		}
	}
	// An edit to another amount reads.
	ok := `{"format":"idemlab-day-plan","version":1}` + "\n" + `{"n":1,"at":"1s","op":"o","endpoint":"/transfers","amount":500,"body":{"amount":500},"fate":{"edited_amount":5000}}` + "\n"
	if _, err := Read(strings.NewReader(ok)); err != nil {
		t.Errorf("an edit to another amount: %v", err)
	}
}

// TestGenerate_NamesRealAccounts: every body names accounts of the
// population a lab reset with the plan's parameters creates, and the
// customer owns the account money leaves from.
func TestGenerate_NamesRealAccounts(t *testing.T) {
	plan := mustGenerate(t, 11, 400)
	owner := map[string]string{}
	for _, c := range bank.Population(plan.Header.Params.Reset) {
		for _, a := range c.Accounts {
			owner[a] = c.ID
		}
	}
	for _, op := range plan.Ops {
		var b struct{ From, To, Account string }
		if err := json.Unmarshal(op.Body, &b); err != nil {
			t.Fatal(err)
		}
		switch op.Endpoint {
		case Transfers:
			if owner[b.From] != op.Customer || owner[b.To] == "" || b.From == b.To {
				t.Fatalf("%s: transfer %s → %s by %s", op.Op, b.From, b.To, op.Customer)
			}
		case Deposits:
			if owner[b.Account] != op.Customer {
				t.Fatalf("%s: deposit into %s by %s", op.Op, b.Account, op.Customer)
			}
		}
	}
}

// TestGenerate_DrawsEveryFate: a day of 1,000 operations has every failure
// point, double clicks, edits, late retries and respelled retries.
func TestGenerate_DrawsEveryFate(t *testing.T) {
	plan := mustGenerate(t, 1, 1000)
	seen := map[string]int{}
	keys := map[string]bool{}
	for _, op := range plan.Ops {
		for _, p := range op.Fate.Faults {
			seen[string(p)]++
		}
		if op.Fate.DoubleClick {
			seen["double-click"]++
		}
		if op.Fate.EditedAmount != 0 {
			seen["edit"]++
			if op.Fate.EditedAmount == op.Amount {
				t.Errorf("%s: the edit keeps the amount %d", op.Op, op.Amount)
			}
		}
		if op.Fate.LateRetry {
			seen["late"]++
		}
		if op.Fate.RetryBody != "" {
			seen["respelled"]++
		}
		if keys[op.Key] {
			t.Errorf("%s: key %s used twice", op.Op, op.Key)
		}
		keys[op.Key] = true
	}
	for _, want := range []string{"double-click", "edit", "late", "respelled"} {
		if seen[want] == 0 {
			t.Errorf("no %s in a day of 1,000", want)
		}
	}
	for _, p := range Points {
		if seen[string(p)] == 0 {
			t.Errorf("no %s in a day of 1,000", p)
		}
	}
}

// TestRespell_SameCanonicalFormOtherBytes: a respelled body is the same
// request under RFC 8785 and different bytes on the wire.
func TestRespell_SameCanonicalFormOtherBytes(t *testing.T) {
	plan := mustGenerate(t, 5, 300)
	r := rand.New(rand.NewPCG(1, 2))
	for _, op := range plan.Ops {
		spelled := respell(r, op.Body)
		if spelled == string(op.Body) {
			t.Fatalf("%s: respelling kept the bytes %s", op.Op, spelled)
		}
		a, err := canonical.Transform(op.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonical.Transform([]byte(spelled))
		if err != nil {
			t.Fatalf("%s: respelled body is not JSON: %v\n%s", op.Op, err, spelled)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: canonical forms differ:\n%s\n%s", op.Op, a, b)
		}
	}
}

func TestSpellNumber_SameValue(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int64{1, 7, 1000, 300000, 1_000_000_000, 12_340_000} {
		for range 20 {
			s := spellNumber(r, n)
			c, err := canonical.Transform([]byte(s))
			if err != nil || string(c) != strings.TrimSpace(string(encode(n))) {
				t.Errorf("%d spelled %s canonicalises to %s (%v)", n, s, c, err)
			}
		}
	}
}

func TestEditedBody_ChangesOnlyTheAmount(t *testing.T) {
	plan := mustGenerate(t, 1, 1000)
	for _, op := range plan.Ops {
		if op.Fate.EditedAmount == 0 {
			continue
		}
		edited, err := op.EditedBody()
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		json.Unmarshal(op.Body, &a)
		json.Unmarshal(edited, &b)
		if b["amount"] != float64(op.Fate.EditedAmount) {
			t.Errorf("%s: edited amount %v, want %d", op.Op, b["amount"], op.Fate.EditedAmount)
		}
		delete(a, "amount")
		delete(b, "amount")
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: the edit changed more than the amount:\n%s\n%s", op.Op, op.Body, edited)
		}
	}
}

func TestParams_CommandListsOnlyChangedFlags(t *testing.T) {
	p := DefaultParams(9, 50)
	p.FaultRate = 0.5
	p.Reset.Customers = 3
	if got, want := p.Command(), "lab gen --seed 9 --ops 50 --customers 3 --fault-rate 0.5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := p.CommandFor("go run ./cmd/lab"), "go run ./cmd/lab gen --seed 9 --ops 50 --customers 3 --fault-rate 0.5"; got != want {
		t.Errorf("CommandFor: got %q, want %q", got, want)
	}
}

func TestParams_Validate(t *testing.T) {
	for name, change := range map[string]func(*Params){
		"no ops":        func(p *Params) { p.Ops = 0 },
		"one customer":  func(p *Params) { p.Reset.Customers = 1 },
		"rate above 1":  func(p *Params) { p.FaultRate = 1.5 },
		"negative rate": func(p *Params) { p.EditRate = -0.1 },
	} {
		p := DefaultParams(1, 10)
		change(&p)
		if _, err := Generate(1, p); err == nil {
			t.Errorf("%s: generated without error", name)
		}
	}
}
