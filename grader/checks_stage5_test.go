package grader_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/labctl"
	"idemlab/kit/stage"
	"idemlab/solutions/stage4"
	"idemlab/solutions/stage5"
)

// noPurger is stage 5's solution with its Purge out of sight, as a
// Purge with another signature leaves it: the lab never calls one.
type noPurger struct{ stage.Handlers }

// TestPurgeBounded_SaysWhenTheLabNeverCalledAPurge: a server whose Purge
// is not the lab's (its signature differs) keeps every key; the failure
// says the lab never called it, so that the student looks at the method's
// signature, not at the DELETE.
func TestPurgeBounded_SaysWhenTheLabNeverCalledAPurge(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage5.New(ctx, env)
		return noPurger{h}, err
	}
	f := failureOf(t, "S5.purge-bounded", grader.Subject{Stage: 5, Name: "no purger", New: factory})
	if !strings.Contains(f.Got, labctl.NoPurge) {
		t.Errorf("got %q, want it to carry the lab's answer %q", f.Got, labctl.NoPurge)
	}
}

// TestRetentionBoundary_ASlowFirstAnswerIsNoDouble: the lab clock runs on
// with real time, so the seconds the original's answer took (a loaded
// machine, eight checks at once) are lab time too. The retry just inside
// the retention period is counted from when the original was sent: a
// first answer that comes back 3 s late, more than the check's 2 s
// margin, still gets its replay, not a second execution judged a double.
func TestRetentionBoundary_ASlowFirstAnswerIsNoDouble(t *testing.T) {
	var first sync.Once
	slowFirst := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if r.Header.Get("Idempotency-Key") != "" {
				first.Do(func() { time.Sleep(3 * time.Second) })
			}
		})
	}
	retentionBoundaryPasses(t, slowFirst, "whose first answer took 3 s")
}

// TestRetentionBoundary_ASlowRefusalLeavesTheLateRetries: the refusal
// S5.retention-boundary sends before its late retries comes back 11 s
// late, more than the 10 s the check leaves its key of the retention when
// it moves the lab clock (a loaded machine). The move is counted from the
// key's answer, so the key is not purged by it, and the retries still
// meet it expired and in the table; before, the check could not observe.
func TestRetentionBoundary_ASlowRefusalLeavesTheLateRetries(t *testing.T) {
	var first sync.Once
	slowRefusal := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.status == http.StatusUnprocessableEntity {
				first.Do(func() { time.Sleep(11 * time.Second) })
			}
		})
	}
	retentionBoundaryPasses(t, slowRefusal, "whose first refusal took 11 s")
}

// TestRetentionBoundary_SaysHowLongPastTheRetention: the retry after
// expiry is sent 2 s past the retention, and the time the check took since
// it last moved the lab clock, which runs on with real time (the retry
// inside, the books read back). Stage 4's solution, which never forgets a
// key, replays it, and the failure's story says how far past the
// retention it was: here at least the 1 s the retry inside took to answer.
func TestRetentionBoundary_SaysHowLongPastTheRetention(t *testing.T) {
	var first sync.Once
	slowReplay := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if w.Header().Get("Idempotent-Replayed") == "true" {
				first.Do(func() { time.Sleep(time.Second) })
			}
		})
	}
	subject := grader.Subject{Stage: 4, Name: "solutions/stage4", New: stage4.New}
	c, ok := grader.Lookup("S5.retention-boundary")
	if !ok {
		t.Fatal("no check S5.retention-boundary")
	}
	r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, subject.New, slowReplay))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("S5.retention-boundary against solution 4: %v, want a failure", r.Err)
	}
	m := regexp.MustCompile(`then 4s more: (\S+) past the retention, counted from when the original was sent \(2s, and the (\S+) the check took since the last move\)`).FindStringSubmatch(f.Sent)
	if m == nil {
		t.Fatalf("the story does not say how far past the retention the retry was:\n%s", f.Sent)
	}
	past, err1 := time.ParseDuration(m[1])
	took, err2 := time.ParseDuration(m[2])
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if took < time.Second || past != 2*time.Second+took {
		t.Errorf("the story says %v past the retention, 2s and %v: want the 1s the retry inside took at least, and their sum", past, took)
	}
}

// retentionBoundaryPasses runs S5.retention-boundary, seed 1, against
// solution 5 wrapped in wrap, and fails t, saying what the wrapper does,
// unless the check passes.
func retentionBoundaryPasses(t *testing.T, wrap func(http.Handler) http.Handler, what string) {
	t.Helper()
	subject := grader.Subject{Stage: 5, Name: "solutions/stage5", New: stage5.New}
	c, ok := grader.Lookup("S5.retention-boundary")
	if !ok {
		t.Fatal("no check S5.retention-boundary")
	}
	if r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, subject.New, wrap)); !r.Passed() {
		t.Fatalf("S5.retention-boundary did not pass solution 5 %s:\n%s", what, grader.Format(r, ""))
	}
}

// statusWriter records the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}
