package grader

import "testing"

// AmountsAtTop makes every T.Amount of the checks t runs return the top
// of its range in place of its draw, until t ends. t must not run in
// parallel with the package's other tests: the setting is the package's.
func AmountsAtTop(t testing.TB) {
	amountsAtTop = true
	t.Cleanup(func() { amountsAtTop = false })
}

// RetryWithTheKeyUnread is S3.retry-during-original's round with a
// retry whose read of the key table fails, run on its own.
var RetryWithTheKeyUnread = retryWithTheKeyUnread
