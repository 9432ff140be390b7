package grader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
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
