package soak

import (
	"strings"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/core"
)

// TestJudgeDelivery: the delivery check's verdict counts each executed
// transfer as posted once, posted twice, a dead letter or unposted, and
// finds a problem in each way the books can go wrong: a double, a
// transfer neither posted nor set aside, a dead letter of a posting the
// core never rejected, a lag p99 over the limit. A clean run has none.
func TestJudgeDelivery(t *testing.T) {
	exec := map[string]int64{"op1": 1, "op2": 1, "op3": 1}
	answered := map[string]string{"tr_1": "op1", "tr_2": "op2", "tr_3": "op3"}
	posted := []core.Receipt{{TransferID: "tr_1"}, {TransferID: "tr_2"}}
	dead := []bank.DeadLetter{{TransferID: "tr_3", Status: 422}}
	fast := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}

	clean := judgeDelivery(exec, answered, posted, dead, []string{"tr_3"}, fast)
	if len(clean.problems) != 0 || clean.line() != "delivery: 3 executed, 2 posted once, 0 twice, 0 unposted, 1 dead letters, lag p99 10 ms, outbox peak 0" {
		t.Errorf("a clean run: %q, problems %v", clean.line(), clean.problems)
	}
	for _, tc := range []struct {
		name string
		v    deliveryVerdict
		want string
	}{
		{"posted twice", judgeDelivery(exec, answered, append(posted, core.Receipt{TransferID: "tr_1"}), dead, []string{"tr_3"}, fast), "posted 2 times"},
		{"executed twice", judgeDelivery(map[string]int64{"op1": 2, "op2": 1, "op3": 1}, answered, posted, dead, []string{"tr_3"}, fast), "executed 2 times"},
		{"dropped", judgeDelivery(exec, answered, posted, nil, []string{"tr_3"}, fast), "never posted"},
		{"dead though taken", judgeDelivery(exec, answered, posted, dead, nil, fast), "never rejected it"},
		{"slow", judgeDelivery(exec, answered, posted, dead, []string{"tr_3"}, []time.Duration{2 * time.Second}), "lag p99"},
	} {
		if !strings.Contains(strings.Join(tc.v.problems, "\n"), tc.want) {
			t.Errorf("%s: problems %v, want one saying %q", tc.name, tc.v.problems, tc.want)
		}
	}
}
