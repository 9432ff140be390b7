package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/kit/accesslog"
)

// generatedDayOps is the size of the day S0.tally-generated draws: large
// enough to meet every failure point, small enough to replay in well
// under a second.
const generatedDayOps = 300

// generatedKeylessRate is the share of that day's operations sent once
// without an Idempotency-Key: with 4 customers, enough that some customer
// sends two or more, which a tally that groups them under the key "" would
// call doubles.
const generatedKeylessRate = 0.08

func checkTallyGenerated(t *T) error {
	tally := t.Subject().Tally
	if tally == nil {
		return fmt.Errorf("the subject has no Tally")
	}
	seed := t.Seed() % 1_000_000
	params := dayplan.DefaultParams(seed, generatedDayOps)
	params.Reset.Customers = 4
	// Some requests come without a key: the naive server executes them,
	// and they count as executed, never as doubles.
	params.KeylessRate = generatedKeylessRate
	plan, err := dayplan.Generate(seed, params)
	if err != nil {
		return err
	}
	var log bytes.Buffer
	run, err := replay.InProcess(t.Context(), t.Subject().New, plan, &log, replay.Options{})
	if err != nil {
		return fmt.Errorf("replay the generated day: %w", err)
	}
	got, err := tally(bytes.NewReader(log.Bytes()))
	sent := fmt.Sprintf("Tally(the access log of %s, replayed against %s)", plan.Header.Command, t.Subject().Name)
	if err != nil {
		return t.Fail(sent, "error: %v", describeReport(run.Truth), err)
	}
	if got != run.Truth {
		want := describeReport(run.Truth) + " (from the transfers table)"
		if n := keylessTransfers(log.Bytes()); n > 0 {
			want += fmt.Sprintf("; the log holds %d transfers answered 201 without an Idempotency-Key: each was executed, and none is in a group", n)
		}
		return t.Fail(sent, "%s", want, reportDiff(got, run.Truth))
	}
	return nil
}

// keylessTransfers counts the lines of an access log that are a POST
// /transfers answered 201 without an Idempotency-Key.
func keylessTransfers(log []byte) int {
	n := 0
	for line := range bytes.Lines(log) {
		var rec accesslog.Record
		if json.Unmarshal(line, &rec) == nil && rec.Method == http.MethodPost && rec.Path == "/transfers" &&
			rec.Status == http.StatusCreated && rec.Key == "" {
			n++
		}
	}
	return n
}

// describeReport writes a report in the words of accesslog.Report's fields.
func describeReport(r accesslog.Report) string {
	return fmt.Sprintf("executed %d, groups %d, double_transfers %d (exact %d, edited %d), money_sent_twice %d",
		r.Executed, r.Groups, r.DoubleTransfers, r.ExactDuplicates, r.EditedResubmissions, r.MoneySentTwice)
}

// reportDiff names the fields where got differs from want.
func reportDiff(got, want accesslog.Report) string {
	var d []string
	field := func(name string, g, w int64) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %d (want %d)", name, g, w))
		}
	}
	field("executed", int64(got.Executed), int64(want.Executed))
	field("groups", int64(got.Groups), int64(want.Groups))
	field("double_transfers", int64(got.DoubleTransfers), int64(want.DoubleTransfers))
	field("exact_duplicates", int64(got.ExactDuplicates), int64(want.ExactDuplicates))
	field("edited_resubmissions", int64(got.EditedResubmissions), int64(want.EditedResubmissions))
	field("money_sent_twice", got.MoneySentTwice, want.MoneySentTwice)
	return strings.Join(d, ", ")
}

// trap is one line of S0.tally-traps' log: who sent what, and how the
// server answered.
type trap struct {
	customer, method, path, key string
	status                      int
	body                        string
}

// trapsLog is a small day written by hand, each group a way to count it
// wrong: one key sent by two customers (two operations, no double), one
// key a customer reused for two operations from two of its accounts (one
// edited resubmission), an edited resubmission followed by its retry
// (both differ from the group's first: two edited), a resubmission whose
// memo alone changed (edited), and a retry with its members in another
// order (exact). Around them: keyless transfers, two keys that differ
// only in case (two keys: a key is the client's string, compared as sent),
// a deposit, refusals and a read, none of which is a double. One refusal,
// early in the day so that a tally that stops there quietly counts little,
// has a body just under 16 KiB that the log writes as a line of some
// 96 KiB (each < escaped as \u003c), longer than bufio.Scanner reads by
// default. A record's body is cut at 16 KiB (accesslog.MaxBody), so no
// line of a real log is much longer. trapsTruth is its report.
var trapsLog = []trap{
	{"cus_a", "POST", "/transfers", "k-shared", 201, `{"from":"acc_a1","to":"acc_b1","amount":1000,"memo":"rent","metadata":{"op":"op-1"}}`},
	{"cus_b", "POST", "/transfers", "k-shared", 201, `{"from":"acc_b1","to":"acc_a1","amount":2000,"memo":"rent","metadata":{"op":"op-2"}}`},
	{"cus_a", "POST", "/transfers", "k-reused", 201, `{"from":"acc_a1","to":"acc_b1","amount":3000,"memo":"lunch","metadata":{"op":"op-3"}}`},
	{"cus_a", "POST", "/transfers", "k-reused", 201, `{"from":"acc_a2","to":"acc_b1","amount":4000,"memo":"taxi","metadata":{"op":"op-4"}}`},
	{"cus_a", "POST", "/transfers", "k-long", 400, `{"from":"acc_a1","to":"acc_b1","amount":100,"memo":"` + strings.Repeat("<", 16_300) + `"}`},
	{"cus_a", "POST", "/transfers", "k-edit", 201, `{"from":"acc_a1","to":"acc_b1","amount":5000,"memo":"invoice 9","metadata":{"op":"op-5"}}`},
	{"cus_a", "POST", "/transfers", "k-edit", 201, `{"from":"acc_a1","to":"acc_b1","amount":5500,"memo":"invoice 9","metadata":{"op":"op-5"}}`},
	{"cus_a", "POST", "/transfers", "k-edit", 201, `{"from":"acc_a1","to":"acc_b1","amount":5500,"memo":"invoice 9","metadata":{"op":"op-5"}}`},
	{"cus_b", "POST", "/transfers", "k-memo", 201, `{"from":"acc_b1","to":"acc_a1","amount":6000,"memo":"books","metadata":{"op":"op-6"}}`},
	{"cus_b", "POST", "/transfers", "k-memo", 201, `{"from":"acc_b1","to":"acc_a1","amount":6000,"memo":"books for May","metadata":{"op":"op-6"}}`},
	{"cus_b", "POST", "/transfers", "k-order", 201, `{"from":"acc_b1","to":"acc_a1","amount":7000,"memo":"gift","metadata":{"op":"op-7"}}`},
	{"cus_b", "POST", "/transfers", "k-order", 201, `{ "metadata": {"op": "op-7"}, "memo": "gift", "amount": 7e3, "to": "acc_a1", "from": "acc_b1" }`},
	{"cus_a", "POST", "/transfers", "", 201, `{"from":"acc_a1","to":"acc_b1","amount":800,"memo":"coffee","metadata":{"op":"op-8"}}`},
	{"cus_a", "POST", "/transfers", "", 201, `{"from":"acc_a1","to":"acc_b1","amount":800,"memo":"coffee","metadata":{"op":"op-9"}}`},
	{"cus_a", "POST", "/transfers", "K-case", 201, `{"from":"acc_a1","to":"acc_b1","amount":1100,"memo":"water","metadata":{"op":"op-12"}}`},
	{"cus_a", "POST", "/transfers", "k-case", 201, `{"from":"acc_a1","to":"acc_b1","amount":1200,"memo":"power","metadata":{"op":"op-13"}}`},
	{"cus_a", "POST", "/deposits", "k-dep", 201, `{"to":"acc_a1","amount":900,"metadata":{"op":"op-10"}}`},
	{"cus_a", "POST", "/deposits", "k-dep", 201, `{"to":"acc_a1","amount":900,"metadata":{"op":"op-10"}}`},
	{"cus_b", "POST", "/transfers", "k-order", 422, `{"from":"acc_b1","to":"acc_nowhere","amount":7000,"memo":"gift","metadata":{"op":"op-11"}}`},
	{"cus_b", "GET", "/accounts/acc_b1", "", 200, ""},
}

// trapsTruth is what Tally must find in trapsLog: 15 transfers executed;
// doubles in k-reused (1 edited), k-edit (2 edited), k-memo (1 edited)
// and k-order (1 exact).
var trapsTruth = accesslog.Report{Executed: 15, Groups: 4, DoubleTransfers: 5, ExactDuplicates: 1, EditedResubmissions: 4,
	MoneySentTwice: 4000 + 5500 + 5500 + 6000 + 7000}

// writeTraps writes trapsLog as an access log, each line a record.
func writeTraps() ([]byte, error) {
	var b bytes.Buffer
	w := accesslog.NewWriter(&b)
	for i, tr := range trapsLog {
		rec := accesslog.Record{Time: fmt.Sprintf("2026-12-01T09:00:%02d.000Z", i), Customer: tr.customer,
			Method: tr.method, Path: tr.path, Key: tr.key, Status: tr.status, Body: tr.body, DurationMS: 1}
		var m struct {
			Metadata struct {
				Op string `json:"op"`
			} `json:"metadata"`
		}
		if tr.body != "" {
			if err := json.Unmarshal([]byte(tr.body), &m); err != nil {
				return nil, fmt.Errorf("the traps' line %d: %w", i+1, err)
			}
		}
		rec.Op = m.Metadata.Op
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// checkTallyTraps runs Tally on trapsLog, whose every group is a way to
// count wrong (see trapsLog), and then on the same log with a line that is
// not a record: Tally's doc promises an error for it, and a tally that
// skips it undercounts a real log without a word. That second probe is a
// contract difference, reported beside the count.
func checkTallyTraps(t *T) error {
	tally := t.Subject().Tally
	if tally == nil {
		return fmt.Errorf("the subject has no Tally")
	}
	log, err := writeTraps()
	if err != nil {
		return err
	}
	sent := "Tally(a log of " + strconv.Itoa(len(trapsLog)) + " lines written by the check: one key sent by two customers; one key a customer reused for two operations; a refused transfer whose record is a line of some 96 KiB; an edited resubmission and then its retry; a resubmission whose memo alone changed; a retry with its members in another order; two keyless transfers; two keys that differ only in case; a deposit sent twice; a refusal; a read)"
	// The line that is not a record goes in the middle, after a double,
	// so a tally that stops there with no error reports too little.
	cut := bytes.Index(log, []byte(`"k-memo"`))
	cut = bytes.LastIndexByte(log[:cut], '\n') + 1
	broken := slices.Concat(log[:cut], []byte("{\"time\":\"2026-12-01T09:00:07.5\n"), log[cut:])
	if got, err := tally(bytes.NewReader(broken)); err == nil {
		t.Differ("Tally(the same log, a line cut short before the memo edit: {\"time\":\"2026-12-01T09:00:07.5)",
			"no error; "+describeReport(got),
			"an error: Tally's doc says it returns one for a line that is not a record; a count that skips it reports less than the log holds, and no one knows")
	}
	got, err := tally(bytes.NewReader(log))
	if err != nil {
		return t.Fail(sent, "error: %v", describeReport(trapsTruth), err)
	}
	if got != trapsTruth {
		return t.Fail(sent, "%s", describeReport(trapsTruth)+"; a group is one customer's one key, compared as sent (K-7 is not k-7), whatever op or account it names, each double is compared with its group's first, every member of the body counted, and a transfer answered 201 without a key is executed and in no group", reportDiff(got, trapsTruth))
	}
	return nil
}
