package judging

import (
	"context"
	"errors"
	"strings"
	"testing"

	"idemlab/kit/bank"
	"idemlab/kit/labctl"
)

func TestBooks_FollowEveryExecution(t *testing.T) {
	b := NewBooks(1000, "a", "b")
	b.Transfer("op1", "a", "b", 300)
	b.Deposit("op2", "b", 50)
	b.Expect("op3")
	b.Expect("op1")
	if b.Balances["a"] != 700 || b.Balances["b"] != 1350 {
		t.Errorf("balances = %v, want a 700, b 1350", b.Balances)
	}
	want := map[string]int64{"op1": 1, "op2": 1, "op3": 0}
	for op, n := range want {
		if got, ok := b.Executions[op]; !ok || got != n {
			t.Errorf("executions of %s = %d (%v), want %d", op, got, ok, n)
		}
	}
}

func TestSnapshot_DiffNamesWhatMoved(t *testing.T) {
	st := labctl.State{
		Accounts:   []bank.Balance{{ID: "a", Balance: 100}, {ID: "b", Balance: 0}},
		Executions: map[string]int64{"op1": 1},
		Keys:       []map[string]any{{"key": "k1"}},
	}
	before := SnapshotOf(st)
	if d := before.Diff(SnapshotOf(st)); d != "" {
		t.Errorf("a snapshot differs from itself: %s", d)
	}
	st.Accounts = []bank.Balance{{ID: "a", Balance: 40}, {ID: "b", Balance: 60}}
	st.Executions = map[string]int64{"op1": 2}
	st.Keys = append(st.Keys, map[string]any{"key": "k2"})
	d := before.Diff(SnapshotOf(st))
	for _, want := range []string{"balance of a moved from 100 to 40", "balance of b moved from 0 to 60", "op op1 executed (count 1 → 2)", "key rows went from 1 to 2"} {
		if !strings.Contains(d, want) {
			t.Errorf("Diff = %q, want it to say %q", d, want)
		}
	}
}

func TestKeyRows_FindTheKeyInAnyColumn(t *testing.T) {
	st := labctl.State{Keys: []map[string]any{
		{"rowid": "k-1", "scope": "cus_1|k-1", "state": StateInProgress},
		{"key": "k-2", "state": StateCompleted},
		{"key": "k-3"},
	}}
	if rows := KeyRows(st, "k-1"); len(rows) != 1 || rows[0]["scope"] != "cus_1|k-1" {
		t.Errorf("KeyRows(k-1) = %v, want the row whose scope holds it (not its rowid)", rows)
	}
	if !KeyInProgress(st, "k-1") || KeyInProgress(st, "k-2") || KeyInProgress(st, "k-3") {
		t.Error("KeyInProgress: want k-1 only")
	}
	if _, ok := RowState(st.Keys[2]); ok {
		t.Error("RowState of a row without a state column reported one")
	}
	if got, want := DescribeRows(KeyRows(st, "k-2")), "{key: k-2, state: completed}"; got != want {
		t.Errorf("DescribeRows = %q, want %q", got, want)
	}
	if got, want := DescribeRows(nil), "no row of the key in idempotency_keys"; got != want {
		t.Errorf("DescribeRows(nil) = %q, want %q, as DescribeKeyRows says it", got, want)
	}
}

// What the key table holds of a key reads as English wherever a story puts
// it ("then /lab/state: …", "and …"), no row included: a failure once
// said "key row no row".
func TestDescribeKeyRows_ReadsAsASentence(t *testing.T) {
	st := labctl.State{Keys: []map[string]any{
		{"key": "k-1", "state": StateCompleted},
		{"key": "k-1x", "state": StateInProgress},
		{"key": "k-2", "state": StateCompleted},
	}}
	for _, tc := range []struct{ key, want string }{
		{"k-9", "no row of the key in idempotency_keys"},
		{"k-2", "key row {key: k-2, state: completed}"},
		{"k-1", "2 key rows: {key: k-1, state: completed}; {key: k-1x, state: in_progress}"},
	} {
		if got := DescribeKeyRows(KeyRows(st, tc.key)); got != tc.want {
			t.Errorf("DescribeKeyRows(%s) = %q, want %q", tc.key, got, tc.want)
		}
	}
	if harm, rows, seen := ToldToWait(st, "k-9"); harm != NoUsableAnswer || !seen || rows != "no row of the key in idempotency_keys" {
		t.Errorf("ToldToWait of a key the whole table lacks = %q, %q, %v; want no usable answer, seen, and no row said plainly", harm, rows, seen)
	}
}

// A key table the lab does not show cannot say whether a key told to wait
// for good is stuck, and ToldToWait says so, and that the client's harm
// is no usable answer all the same: the check and the day both name it.
func TestToldToWait_AnUnshownTableIsNoUsableAnswer(t *testing.T) {
	if harm, rows, seen := ToldToWait(labctl.State{}, "k-1"); harm != NoUsableAnswer || seen || !strings.Contains(rows, "no key table") {
		t.Errorf("ToldToWait without a key table = %q, %q, %v; want no usable answer, not seen, and why", harm, rows, seen)
	}
}

func TestDrained_ReadsUntilTheOutboxIsEmpty(t *testing.T) {
	counts := []int64{3, 1, 0}
	reads := 0
	state := func() (labctl.Outbox, error) {
		o := labctl.Outbox{Counts: bank.OutboxCounts{Pending: counts[min(reads, len(counts)-1)]}}
		reads++
		return o, nil
	}
	pending, err := Drained(context.Background(), 1<<62, 1, state)
	if err != nil || pending != 0 || reads != 3 {
		t.Errorf("Drained = %d, %v after %d reads; want 0, nil after 3", pending, err, reads)
	}
	// No time left: the one read's count is the answer.
	reads = 0
	if pending, err = Drained(context.Background(), -1, 1, state); err != nil || pending != 3 {
		t.Errorf("Drained with no time = %d, %v; want 3, nil", pending, err)
	}
	broken := errors.New("state unreadable")
	if _, err := Drained(context.Background(), 1<<62, 1, func() (labctl.Outbox, error) { return labctl.Outbox{}, broken }); !errors.Is(err, broken) {
		t.Errorf("Drained on an unreadable state = %v, want %v", err, broken)
	}
}
