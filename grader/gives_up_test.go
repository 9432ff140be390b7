package grader_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage3"
)

// anotherOpsAnswer serves stage 3's solution, but answers the retry of a
// transfer whose original was not answered 201 with the last 201 the
// server gave another key, in a 200: the retry's own transfer never runs,
// and its client is told another operation's result.
func anotherOpsAnswer() func(http.Handler) http.Handler {
	var mu sync.Mutex
	ran := map[string]bool{} // by key: whether its original was answered 201
	var last []byte
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/transfers" {
				next.ServeHTTP(w, r)
				return
			}
			key := r.Header.Get("Idempotency-Key")
			mu.Lock()
			created, retry := ran[key]
			other := last
			mu.Unlock()
			if retry && !created && other != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write(other)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			mu.Lock()
			if !retry {
				ran[key] = rec.Code == http.StatusCreated
			}
			if rec.Code == http.StatusCreated {
				last = rec.Body.Bytes()
			}
			mu.Unlock()
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	}
}

// TestClientGivesUp_AnotherOperationsAnswerIsAWrongAnswer: a retry
// answered 200 with another operation's transfer, while its own never
// ran, leaves the books balanced (its client was not told that its money
// moved), but the client takes that result for its own: a wrong answer,
// not a contract difference.
func TestClientGivesUp_AnotherOperationsAnswerIsAWrongAnswer(t *testing.T) {
	c, _ := grader.Lookup("S3.client-gives-up")
	subject := grader.Subject{Stage: 3, Name: "solutions/stage3", New: stage3.New}
	r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage3.New, anotherOpsAnswer()))
	var f *judging.Failure
	if !errors.As(r.Err, &f) || f.Harm != judging.WrongAnswer {
		t.Fatalf("got %v, want a wrong answer", r.Err)
	}
}
