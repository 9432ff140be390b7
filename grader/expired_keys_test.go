package grader_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/audit"
	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
)

// expiringKeys is a middleware whose keys expire a second after their
// answer, on the lab clock: a retry that comes within the second is
// answered with the stored answer, and one that comes later executes
// again and is answered with its new result, as if it were new.
func expiringKeys(env audit.Env) (audit.Middleware, error) {
	type answer struct {
		status int
		header http.Header
		body   []byte
		at     time.Time
	}
	var mu sync.Mutex
	answers := map[string]answer{}
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := env.Customer(r) + " " + r.Header.Get("Idempotency-Key")
			// One request at a time: this middleware's fault is its
			// keys' life, not a race.
			mu.Lock()
			defer mu.Unlock()
			if a, ok := answers[key]; ok && env.Clock.Now().Sub(a.at) < time.Second {
				for name, values := range a.header {
					w.Header()[name] = values
				}
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(a.status)
				w.Write(a.body)
				return
			}
			rec := &recording{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			answers[key] = answer{status: rec.status, header: w.Header().Clone(), body: rec.body.Bytes(), at: env.Clock.Now()}
		})
	}
	return audit.Middleware{Wrap: wrap}, nil
}

// recording passes a response through and keeps its status and body.
type recording struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recording) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recording) Write(p []byte) (int, error) {
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// A server whose keys expire before the retry executes the retry again
// and answers it with the new result: the client is given another
// answer than its own, and the books show its operation ran twice. The
// double leads, read from the books, and the wrong answer the check saw
// is still shown beside it.
func TestMoneyFirst_ADoubleLeadsTheWrongAnswerItCame(t *testing.T) {
	for _, id := range []string{"S4.replay-byte-identical", "S4.balance-after-unchanged"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			c, ok := grader.Lookup(id)
			if !ok {
				t.Fatalf("no check %s", id)
			}
			r := grader.RunCheck(context.Background(), audit.Subject("expiring", expiringKeys), c, 1, targets.InProcess)
			report := grader.Format(r, "")
			if r.Harm() != judging.Double {
				t.Fatalf("harm %q, want %q (the books show the retry ran again):\n%s", r.Harm(), judging.Double, report)
			}
			if !strings.Contains(report, "/lab/state: op ") || !strings.Contains(report, "✗ also "+string(judging.WrongAnswer)+":") {
				t.Fatalf("the report does not show both the double in the books and the wrong answer the check saw:\n%s", report)
			}
		})
	}
}
