package dayplan

import (
	"reflect"
	"testing"
)

// A keyless operation is sent once, without a header: no key, no retry,
// no double click, no edit. (That asking for none changes no day is
// TestGen_ShippedDayIsSeedOne, in cmd/lab.)
func TestGenerate_KeylessOperations(t *testing.T) {
	plan := mustGenerate(t, 7, 400, func(p *Params) { p.KeylessRate = 0.1 })
	keyless := 0
	for _, op := range plan.Ops {
		if op.Key != "" {
			continue
		}
		keyless++
		if !reflect.DeepEqual(op.Fate, Fate{}) {
			t.Errorf("%s is keyless and has a fate %+v; want none: a client without a key does not retry", op.Op, op.Fate)
		}
	}
	if keyless < 20 || keyless > 60 {
		t.Errorf("%d keyless operations of 400 at a rate of 0.1", keyless)
	}
	if got := plan.Header.Command; got != "lab gen --seed 7 --ops 400 --keyless-rate 0.1" {
		t.Errorf("Command() = %q: it must reproduce the keyless rate", got)
	}
}
