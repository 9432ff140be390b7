package judging

import (
	"fmt"
	"sort"
	"strings"

	"idemlab/kit/labctl"
)

// Books is what a check expects of the bank after a scenario: the balance
// of each account it touched and how many times each op ran.
type Books struct {
	Balances   map[string]int64
	Executions map[string]int64
}

// NewBooks returns books for accounts that all opened with opening won
// and ops that have not run yet.
func NewBooks(opening int64, accounts ...string) *Books {
	b := &Books{Balances: map[string]int64{}, Executions: map[string]int64{}}
	for _, a := range accounts {
		b.Balances[a] = opening
	}
	return b
}

// Transfer records one execution of a transfer of amount from one account
// to another under op.
func (b *Books) Transfer(op, from, to string, amount int64) {
	b.Balances[from] -= amount
	b.Balances[to] += amount
	b.Executions[op]++
}

// Deposit records one execution of a deposit of amount under op.
func (b *Books) Deposit(op, account string, amount int64) {
	b.Balances[account] += amount
	b.Executions[op]++
}

// Expect records that op must not have run (yet).
func (b *Books) Expect(op string) {
	if _, ok := b.Executions[op]; !ok {
		b.Executions[op] = 0
	}
}

// Snapshot is what a request must not change when it is refused: every
// balance, every execution count and the number of key rows.
type Snapshot struct {
	Balances   map[string]int64
	Executions map[string]int64
	Keys       int
}

// SnapshotOf takes the snapshot of the lab state st.
func SnapshotOf(st labctl.State) Snapshot {
	s := Snapshot{Balances: map[string]int64{}, Executions: st.Executions, Keys: len(st.Keys)}
	for _, a := range st.Accounts {
		s.Balances[a.ID] = a.Balance
	}
	return s
}

// Diff says how after differs from s, or "" if it does not.
func (s Snapshot) Diff(after Snapshot) string {
	var d []string
	for id, b := range s.Balances {
		if after.Balances[id] != b {
			d = append(d, fmt.Sprintf("balance of %s moved from %d to %d", id, b, after.Balances[id]))
		}
	}
	for op, n := range after.Executions {
		if s.Executions[op] != n {
			d = append(d, fmt.Sprintf("op %s executed (count %d → %d)", op, s.Executions[op], n))
		}
	}
	if after.Keys != s.Keys {
		d = append(d, fmt.Sprintf("key rows went from %d to %d", s.Keys, after.Keys))
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}
