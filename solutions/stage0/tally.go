package stage0

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"idemlab/kit/accesslog"
	"idemlab/kit/canonical"
	"idemlab/kit/request"
)

// Tally reads a day's access log (one accesslog.Record per line) and
// counts the double transfers the naive server executed. It returns an
// error for a line that is not a record.
func Tally(log io.Reader) (accesslog.Report, error) {
	var rep accesslog.Report
	// firsts holds the canonical body of each group's first execution.
	firsts := map[[2]string]string{}
	counted := map[[2]string]bool{}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var rec accesslog.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return accesslog.Report{}, fmt.Errorf("line %d: %w", line, err)
		}
		// Only transfers the server executed moved money.
		if rec.Method != "POST" || rec.Path != "/transfers" || rec.Status != 201 {
			continue
		}
		rep.Executed++
		// A transfer sent without a key was executed, but no retry can be
		// matched to it: it is in no group.
		if rec.Key == "" {
			continue
		}
		canon, err := canonical.Transform([]byte(rec.Body))
		if err != nil {
			return accesslog.Report{}, fmt.Errorf("line %d: %w", line, err)
		}
		group := [2]string{rec.Customer, rec.Key}
		first, seen := firsts[group]
		if !seen {
			firsts[group] = string(canon)
			continue
		}
		if !counted[group] {
			counted[group] = true
			rep.Groups++
		}
		rep.DoubleTransfers++
		if string(canon) == first {
			rep.ExactDuplicates++
		} else {
			rep.EditedResubmissions++
		}
		var body struct {
			Amount json.Number `json:"amount"`
		}
		if err := json.Unmarshal([]byte(rec.Body), &body); err != nil {
			return accesslog.Report{}, fmt.Errorf("line %d: %w", line, err)
		}
		amount, err := request.Integer(body.Amount.String())
		if err != nil {
			return accesslog.Report{}, fmt.Errorf("line %d: amount %w", line, err)
		}
		rep.MoneySentTwice += amount
	}
	if err := sc.Err(); err != nil {
		return accesslog.Report{}, fmt.Errorf("read log: %w", err)
	}
	return rep, nil
}
