package soak

import (
	"slices"
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
// core never rejected, one without the core's answer, a lag p99 over the
// limit. A clean run has none.
func TestJudgeDelivery(t *testing.T) {
	exec := map[string]int64{"op1": 1, "op2": 1, "op3": 1}
	answered := map[string]string{"tr_1": "op1", "tr_2": "op2", "tr_3": "op3"}
	posted := []core.Receipt{{TransferID: "tr_1"}, {TransferID: "tr_2"}}
	dead := []bank.DeadLetter{{TransferID: "tr_3", Status: 422, Answer: `{"type":"` + core.Rejected.URI() + `","status":422}`}}
	fast := deliveryLags{recorded: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, relayed: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}
	// Slow only through an outage: not the relay's lag.
	outage := deliveryLags{recorded: []time.Duration{3 * time.Second}, relayed: []time.Duration{20 * time.Millisecond}}

	clean := judgeDelivery(exec, answered, posted, dead, []string{"tr_3"}, fast)
	if through := judgeDelivery(exec, answered, posted, dead, []string{"tr_3"}, outage); len(through.problems) != 0 {
		t.Errorf("a run slow only through an outage: problems %v", through.problems)
	}
	if len(clean.problems) != 0 || clean.line() != "delivery: 3 executed, 2 posted once, 0 twice, 0 unposted, 1 dead letters, lag p99 10 ms (10 ms with no outage), outbox peak 0" {
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
		{"dead without the answer", judgeDelivery(exec, answered, posted, []bank.DeadLetter{{TransferID: "tr_3"}}, []string{"tr_3"}, fast), "without the core's answer"},
		{"dead with its status and no body", judgeDelivery(exec, answered, posted, []bank.DeadLetter{{TransferID: "tr_3", Status: 422}}, []string{"tr_3"}, fast), "without the core's answer"},
		{"dead with another answer", judgeDelivery(exec, answered, posted, []bank.DeadLetter{{TransferID: "tr_3", Status: 503, Answer: `{"status":503}`}}, []string{"tr_3"}, fast), "without the core's answer"},
		{"slow", judgeDelivery(exec, answered, posted, dead, []string{"tr_3"}, deliveryLags{recorded: []time.Duration{2 * time.Second}, relayed: []time.Duration{2 * time.Second}}), "lag p99"},
	} {
		if !strings.Contains(strings.Join(tc.v.problems, "\n"), tc.want) {
			t.Errorf("%s: problems %v, want one saying %q", tc.name, tc.v.problems, tc.want)
		}
	}
}

// TestLagsBeside: a row's lag leaves out the part of each outage it
// waited through, on the lab clock (ahead of the nemesis's), and keeps
// the rest; a row that met no outage keeps its whole lag.
func TestLagsBeside(t *testing.T) {
	here := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	ahead := time.Hour
	lab := func(ms int) time.Time { return here.Add(ahead).Add(time.Duration(ms) * time.Millisecond) }
	outages := []outage{
		{what: "core down", from: here.Add(1000 * time.Millisecond), to: here.Add(1400 * time.Millisecond)},
		{what: "server dead", from: here.Add(5000 * time.Millisecond), to: here.Add(5900 * time.Millisecond)},
		{what: "core down", from: here.Add(8000 * time.Millisecond), to: here.Add(8400 * time.Millisecond)},
	}
	ds := []bank.Delivery{
		{Created: lab(0), Sent: lab(300)},     // before any outage
		{Created: lab(900), Sent: lab(1600)},  // through the first
		{Created: lab(1200), Sent: lab(1500)}, // committed during it
		{Created: lab(4800), Sent: lab(8600)}, // through the kill and the second core down
		{Created: lab(6000), Sent: lab(6100)}, // after the restart
	}
	got := lagsBeside(ds, outages, ahead)
	ms := func(ds []time.Duration) []int64 {
		var out []int64
		for _, d := range ds {
			out = append(out, d.Milliseconds())
		}
		return out
	}
	if want := []int64{300, 300, 100, 2500, 100}; !slices.Equal(ms(got.relayed), want) {
		t.Errorf("relayed lags %v, want %v", ms(got.relayed), want)
	}
	if want := []int64{300, 700, 300, 3800, 100}; !slices.Equal(ms(got.recorded), want) {
		t.Errorf("recorded lags %v, want %v", ms(got.recorded), want)
	}
	if s, want := got.summary(), "core down 2× 800 ms, server dead 1× 900 ms"; s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
	// The slowest hundredth of five rows is one: the one committed 4.8 s
	// into the run, whose 2,500 ms are the most.
	if s, want := got.slowest(), "1 in second 4"; s != want {
		t.Errorf("slowest %q, want %q", s, want)
	}
}
