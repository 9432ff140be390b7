// Package scoreboard lays the same day, replayed against every stage,
// out as one row a stage and one column a finding of the day's
// reconciliation (grader/replay).
package scoreboard

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"idemlab/grader/replay"
)

// Row is one stage's line of the scoreboard: what the same day did
// against that stage, one column per finding.
type Row struct {
	Stage  int    `json:"stage"`
	Target string `json:"target"`
	Valid  bool   `json:"valid"`
	// Verdict is VALID, or INVALID and why.
	Verdict string           `json:"verdict"`
	Counts  replay.DayCounts `json:"counts"`
	// BooksBalance is true when every balance is the opening plus the
	// executions the server counted, none is negative and money is
	// conserved.
	BooksBalance bool   `json:"books_balance"`
	Elapsed      string `json:"elapsed"`
}

// NewRow makes stage's row of the scoreboard from its reconciliation.
func NewRow(stage int, target string, rc replay.DayReconciliation) Row {
	row := Row{
		Stage: stage, Target: target, Valid: rc.Valid, Counts: rc.Counts, Verdict: "VALID",
		BooksBalance: rc.Counts.BalanceMismatches == 0 && rc.Counts.NegativeBalances == 0 && rc.Money.Conserved,
	}
	if !rc.Valid {
		row.Verdict = "INVALID: " + rc.Verdict()
	}
	return row
}

// scoreColumns are the scoreboard's columns after the stage, each a
// finding of the day.
var scoreColumns = []struct {
	head string
	cell func(Row) string
}{
	{"doubles", func(r Row) string { return fmt.Sprint(r.Counts.DoubleApplied) }},
	{"lost", func(r Row) string { return fmt.Sprint(r.Counts.LostTransfers) }},
	{"wrong answers", func(r Row) string { return fmt.Sprint(r.Counts.WrongAnswers) }},
	{"no usable answer", func(r Row) string { return fmt.Sprint(r.Counts.NoUsableAnswer) }},
	{"stuck", func(r Row) string { return fmt.Sprint(r.Counts.StuckInProgress) }},
	{"key not observed", func(r Row) string { return fmt.Sprint(r.Counts.KeyUnobserved) }},
	{"told duplicate, never ran", func(r Row) string { return fmt.Sprint(r.Counts.ToldDuplicate) }},
	{"refused for another's key", func(r Row) string { return fmt.Sprint(r.Counts.RefusedForOthersKey) }},
	{"other unexpected answers", func(r Row) string {
		return fmt.Sprint(r.Counts.UnexpectedStatus - r.Counts.RefusedForOthersKey)
	}},
	{"mismatched replays", func(r Row) string { return fmt.Sprint(r.Counts.MismatchedReplays) }},
	{"late re-executed", func(r Row) string { return fmt.Sprint(r.Counts.LateReexecuted) }},
	{"invoices paid twice", func(r Row) string { return fmt.Sprint(r.Counts.InvoicesPaidTwice) }},
	{"lost updates", func(r Row) string { return fmt.Sprint(r.Counts.LostUpdates) }},
	{"edits not served", func(r Row) string { return fmt.Sprint(r.Counts.EditsNotServed) }},
	{"not posted", func(r Row) string { return fmt.Sprint(r.Counts.NotPosted) }},
	{"posted twice", func(r Row) string { return fmt.Sprint(r.Counts.PostedTwice) }},
	{"posted unexecuted", func(r Row) string { return fmt.Sprint(r.Counts.PostedUnexecuted) }},
	{"books", func(r Row) string { return map[bool]string{true: "balance", false: "DO NOT BALANCE"}[r.BooksBalance] }},
	{"verdict", func(r Row) string { return map[bool]string{true: "VALID", false: "INVALID"}[r.Valid] }},
}

// shape is which findings the row has, not how many: a stage's
// characteristic failure. Two stages of the same shape fail in the same
// ways on this day (their counts may differ by a race or two between a
// double click and its original).
func (r Row) shape() string {
	var cells []string
	for _, c := range scoreColumns {
		v := c.cell(r)
		if _, err := strconv.Atoi(v); err == nil && v != "0" {
			v = "some"
		}
		cells = append(cells, v)
	}
	return strings.Join(cells, "|")
}

// Write writes the rows as a Markdown table, then a line for
// each pair of neighbouring stages the day cannot tell apart.
func Write(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	heads := []string{"stage"}
	rules := []string{"---"}
	for _, c := range scoreColumns {
		heads = append(heads, c.head)
		rules = append(rules, "---")
	}
	fmt.Fprintf(tw, "| %s\t|\n", strings.Join(heads, "\t| "))
	fmt.Fprintf(tw, "| %s\t|\n", strings.Join(rules, "\t| "))
	for _, r := range rows {
		cells := []string{fmt.Sprint(r.Stage)}
		for _, c := range scoreColumns {
			cells = append(cells, c.cell(r))
		}
		fmt.Fprintf(tw, "| %s\t|\n", strings.Join(cells, "\t| "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pairs := Indistinct(rows)
	if len(pairs) > 0 {
		fmt.Fprintln(w)
	}
	for _, pair := range pairs {
		fmt.Fprintf(w, "stages %d and %d fail in the same ways on this day (docs/grader.md, \"The scoreboard\", says why)\n", pair[0], pair[1])
	}
	return nil
}

// Indistinct lists the neighbouring rows of the same shape: the pairs of
// stages the day cannot tell apart.
func Indistinct(rows []Row) [][2]int {
	var out [][2]int
	for i := 1; i < len(rows); i++ {
		if rows[i-1].shape() == rows[i].shape() {
			out = append(out, [2]int{rows[i-1].Stage, rows[i].Stage})
		}
	}
	return out
}
