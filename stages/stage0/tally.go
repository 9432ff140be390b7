package stage0

import (
	"io"

	"idemlab/kit/accesslog"
)

// Tally reads a day's access log (one accesslog.Record per line) and
// counts the double transfers the naive server executed. It returns an
// error for a line that is not a record.
//
// TODO(stage 0): when you are done, Tally's report holds, for the day in
// log, the numbers that the fields of accesslog.Report describe: what
// moved money, what ran more than once, and how much was sent twice. Each
// count is the lesson's answer to one of its "What you decide" questions
// (docs/lessons/00-naive.md): the log cannot say what a retry is, so the
// report is only as right as those answers. Two requests can be the same
// while their bytes differ, and a body can hold an amount in more than one
// spelling: the kit has a package for each. A line that is not a record is
// an error, not a line to skip: a count that skips what it cannot read
// reports less than the day cost, and no one knows.
func Tally(log io.Reader) (accesslog.Report, error) {
	return accesslog.Report{}, nil
}
