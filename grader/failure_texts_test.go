package grader_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/solutions"
)

// What a student reads when a stage's untouched scaffold fails its
// checks (the reference solution of the stage before stands in for it):
// each text says what was sent and what was due in words, not in a Go
// value's printing nor a count that reads wrong.

func solution(n int) grader.Subject {
	return grader.Subject{Stage: n + 1, Name: "solutions/stage" + string(rune('0'+n)), New: solutions.ByStage[n]}
}

// The gaps between staggered duplicates read as milliseconds, and the
// core's latency as what the core did: the story once said "leaving [0s 0s
// 1.8ms] apart (core latency 0s; …)".
func TestFailureText_StaggeredGapsInMilliseconds(t *testing.T) {
	f := failureOf(t, "S1.staggered-duplicates", solution(0))
	want := regexp.MustCompile(`^\d+× the same request, one after another, [0-9.]+(, [0-9.]+)* and [0-9.]+ ms apart \(the core answering (at once|after 40ms); round 1 of 8\): POST /transfers`)
	if !want.MatchString(f.Sent) {
		t.Errorf("sent:\n%s\nwant it to match %s", f.Sent, want)
	}
}

// A request sent while the key store fails is due a 503: the expected
// line says so before what must not change, as S1.missing-key's says its
// 400. It said only "the refusal changes nothing".
func TestFailureText_FailClosedExpectsThe503(t *testing.T) {
	f := failureOf(t, "S1.fail-closed", solution(0))
	if want := "503 /problems/unavailable; the refusal changes nothing: no money moves and no key row is stored"; f.Expected != want {
		t.Errorf("expected %q, want %q", f.Expected, want)
	}
}

// A key that starts with a quote has only the quoted form: its retry is
// sent as it was, and the story says so, not "the key in the other form"
// over the same header twice.
func TestFailureText_AQuotedOnlyKeyIsRetriedAsItWas(t *testing.T) {
	c, _ := grader.Lookup("S1.key-forms")
	for seed := uint64(1); seed <= 40; seed++ {
		var f *judging.Failure
		err := grader.RunCheck(context.Background(), solution(0), c, seed, targets.InProcess).Err
		if !errors.As(err, &f) {
			t.Fatalf("seed %d: %v, want a failure", seed, err)
		}
		if !strings.HasPrefix(f.Sent, "a key that starts and ends with \"") {
			continue
		}
		if strings.Contains(f.Sent, "the key in the other form") || !strings.Contains(f.Sent, "the same request again, quoted as before (a key that starts with \" has no bare form): ") {
			t.Errorf("sent:\n%s\nwant its retry said to be quoted as before", f.Sent)
		}
		return
	}
	t.Fatal("no seed of 40 failed on the quoted key first")
}

// One retry is "1 retry".
func TestFailureText_OneRetryIsSingular(t *testing.T) {
	f := failureOf(t, "S4.answer-stored-with-the-money", solution(3))
	if !strings.HasSuffix(f.Sent, "while it is told to wait or gets no answer: 1 retry") {
		t.Errorf("sent:\n%s\nwant it to end \"…: 1 retry\"", f.Sent)
	}
}

// A replay that is not the stored 201 is told which 201 was due: its
// balance_after and created_at, as first answered.
func TestFailureText_BalanceAfterUnchangedSaysTheStoredAnswer(t *testing.T) {
	f := failureOf(t, "S4.balance-after-unchanged", solution(3))
	want := regexp.MustCompile(`^the stored 201 of the first (transfer|deposit), balance_after \d+ and created_at \S+ as first answered$`)
	if !want.MatchString(f.Expected) {
		t.Errorf("expected %q, want it to match %s", f.Expected, want)
	}
}

// A retry told done while the original runs: the expected line says the
// answer due, and leaves what came back to the got line. It ended ": got
// 409 /problems/duplicate-request", the got line again.
func TestFailureText_RetryDuringOriginalExpectsWithoutGot(t *testing.T) {
	f := failureOf(t, "S3.retry-during-original", solution(2))
	if want := "409 /problems/request-in-progress, with Retry-After, to every retry while the original runs"; f.Expected != want {
		t.Errorf("expected %q, want %q\ngot %s", f.Expected, want, f.Got)
	}
}
