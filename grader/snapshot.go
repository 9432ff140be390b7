package grader

import (
	"fmt"
	"sort"
	"strings"
)

// Snapshot is what a request must not change when it is refused: every
// balance, every execution count and the number of key rows.
type Snapshot struct {
	Balances   map[string]int64
	Executions map[string]int64
	Keys       int
}

// Snapshot reads the target's snapshot.
func (t *T) Snapshot() (Snapshot, error) {
	st, err := t.State()
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Balances: map[string]int64{}, Executions: st.Executions, Keys: len(st.Keys)}
	for _, a := range st.Accounts {
		s.Balances[a.ID] = a.Balance
	}
	return s, nil
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
