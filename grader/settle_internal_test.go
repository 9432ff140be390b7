package grader

import (
	"strconv"
	"strings"
	"testing"

	"idemlab/kit/pgdb"
)

// TestSettleRefusals_OutnumberTheConnections: S9.settle-fails refuses
// more of the relay's writes than a server opens connections to
// PostgreSQL, or a relay that leaves a transaction open at each refusal
// keeps some of them free and passes there; and its claim says how many
// it refuses.
func TestSettleRefusals_OutnumberTheConnections(t *testing.T) {
	if settleRefusals <= pgdb.MaxOpenConns {
		t.Errorf("S9.settle-fails refuses %d writes; a server opens %d connections to PostgreSQL: want more refusals", settleRefusals, pgdb.MaxOpenConns)
	}
	c, ok := Lookup("S9.settle-fails")
	if !ok {
		t.Fatal("no check S9.settle-fails")
	}
	if n := strconv.Itoa(settleRefusals); !strings.Contains(c.Claim, " "+n+" ") {
		t.Errorf("S9.settle-fails' claim does not say it refuses %s writes: %s", n, c.Claim)
	}
}
