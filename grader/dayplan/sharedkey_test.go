package dayplan

import "testing"

// A shared key is an earlier operation's key of another customer, never
// the same customer's (that would be a retry or an edit), and the plan's
// command line asks for it again.
func TestGenerate_SharedKeys(t *testing.T) {
	p := DefaultParams(7, 400)
	p.SharedKeyRate = 0.1
	plan, err := Generate(7, p)
	if err != nil {
		t.Fatal(err)
	}
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
	if got := p.Command(); got != "lab gen --seed 7 --ops 400 --shared-key-rate 0.1" {
		t.Errorf("Command() = %q: it must reproduce the shared-key rate", got)
	}
}
