package problem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"idemlab/kit/problem"
)

func TestWrite_RFC9457Body(t *testing.T) {
	w := httptest.NewRecorder()
	problem.Write(w, &problem.Error{Type: problem.RequestInProgress, Detail: "wait", RetryAfter: 300 * time.Millisecond})
	if w.Code != 409 || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d %v", w.Code, w.Header())
	}
	var b problem.Body
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if b.Type != "/problems/request-in-progress" || b.Status != 409 || b.Title == "" || b.Detail != "wait" {
		t.Fatalf("body = %+v", b)
	}
}

func TestWrite_UnavailableSaysWhenToRetry(t *testing.T) {
	w := httptest.NewRecorder()
	problem.Write(w, problem.New(problem.Unavailable, "key store down"))
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d, Retry-After %q; want 503 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
	}
}

func TestFrom_HidesInternalErrors(t *testing.T) {
	err := fmt.Errorf("claim key: %w", errors.New("disk I/O error at /var/secret"))
	w := httptest.NewRecorder()
	problem.Write(w, err)
	if w.Code != 500 || strings.Contains(w.Body.String(), "secret") {
		t.Fatalf("internal error leaked or wrong status: %d %s", w.Code, w.Body)
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", problem.New(problem.InsufficientFunds, "x")), problem.InsufficientFunds) {
		t.Fatal("errors.Is does not see a wrapped problem's type")
	}
}

func TestEveryTypeIsServed(t *testing.T) {
	for _, typ := range problem.Catalogue {
		r := httptest.NewRequest("GET", typ.URI(), nil)
		r.SetPathValue("name", typ.Name)
		w := httptest.NewRecorder()
		problem.Handler(w, r)
		if w.Code != 200 || !strings.Contains(w.Body.String(), typ.Title) {
			t.Errorf("GET %s: %d %s", typ.URI(), w.Code, w.Body)
		}
	}
	r := httptest.NewRequest("GET", "/problems/nope", nil)
	r.SetPathValue("name", "nope")
	w := httptest.NewRecorder()
	problem.Handler(w, r)
	if w.Code != 404 {
		t.Errorf("unknown problem type: %d", w.Code)
	}
}

func TestWrite_LocationOfTheOriginal(t *testing.T) {
	w := httptest.NewRecorder()
	problem.Write(w, &problem.Error{Type: problem.DuplicateReference, Detail: "paid", Location: "/transfers/tr_1"})
	if w.Code != 409 || w.Header().Get("Location") != "/transfers/tr_1" {
		t.Fatalf("got %d, Location %q; want 409 with Location /transfers/tr_1", w.Code, w.Header().Get("Location"))
	}
	w = httptest.NewRecorder()
	problem.Write(w, problem.New(problem.InsufficientFunds, "x"))
	if _, ok := w.Header()["Location"]; ok {
		t.Fatalf("a problem without a Location sent one: %v", w.Header())
	}
}
