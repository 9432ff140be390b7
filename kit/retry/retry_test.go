package retry_test

import (
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"idemlab/kit/problem"
	"idemlab/kit/retry"
)

// TestAnswer_RetryableIsThePublishedList catches a client that retries a
// refusal (400, 409 duplicate, 422) or a 501, and one that gives up on a
// 408, a 429, a 503 or a request still in progress.
func TestAnswer_RetryableIsThePublishedList(t *testing.T) {
	for _, c := range []struct {
		a    retry.Answer
		want bool
	}{
		{retry.Answer{Err: http.ErrHandlerTimeout}, true},
		{retry.Answer{Status: 408}, true},
		{retry.Answer{Status: 409, Problem: problem.RequestInProgress.URI()}, true},
		{retry.Answer{Status: 409, Problem: "/problems/something-else"}, false},
		{retry.Answer{Status: 429}, true},
		{retry.Answer{Status: 500}, true},
		{retry.Answer{Status: 502}, true},
		{retry.Answer{Status: 503}, true},
		{retry.Answer{Status: 504}, true},
		{retry.Answer{Status: 501}, false},
		{retry.Answer{Status: 201}, false},
		{retry.Answer{Status: 400}, false},
		{retry.Answer{Status: 422}, false},
	} {
		if got := c.a.Retryable(); got != c.want {
			t.Errorf("%d %q err=%v: Retryable = %v, want %v", c.a.Status, c.a.Problem, c.a.Err, got, c.want)
		}
	}
}

// TestPolicy_FullJitterUnderTheCeiling catches a backoff that adds a floor
// (half the ceiling and more: clients that failed together come back
// together), one that outgrows the cap, and a wait shorter than Retry-After.
// TestAnswer_RetryableIsWhatTheDocsPublish reads the retryable statuses
// from docs/api.md ("What a client must do") and checks every status from
// 100 to 599 against Retryable. It catches the code and the published
// policy drifting apart: a status added to one and not the other.
func TestAnswer_RetryableIsWhatTheDocsPublish(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rule, ok := strings.Cut(string(doc), "**Retry with the same key and the same request**")
	rule, _, ok2 := strings.Cut(rule, "Any other")
	if !ok || !ok2 {
		t.Fatal("docs/api.md has no bullet \"Retry with the same key and the same request … Any other answer\"")
	}
	listed := map[int]bool{}
	for _, m := range regexp.MustCompile("`(\\d{3})").FindAllStringSubmatch(rule, -1) {
		n, _ := strconv.Atoi(m[1])
		listed[n] = true
	}
	if len(listed) == 0 {
		t.Fatalf("no status in the published rule: %q", rule)
	}
	for status := 100; status < 600; status++ {
		a := retry.Answer{Status: status}
		if status == http.StatusConflict {
			a.Problem = problem.RequestInProgress.URI() // the docs list "409 request-in-progress"
		}
		if got := a.Retryable(); got != listed[status] {
			t.Errorf("%d: Retryable = %v, docs/api.md lists it: %v", status, got, listed[status])
		}
	}
}

func TestPolicy_FullJitterUnderTheCeiling(t *testing.T) {
	p := retry.Published()
	r := rand.New(rand.NewPCG(1, 2))
	for n, ceiling := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 7: 30 * time.Second, 40: 30 * time.Second} {
		low := false
		for range 200 {
			d := p.Backoff(n, r)
			if d < 0 || d > ceiling {
				t.Fatalf("backoff %d = %v, want 0..%v", n, d, ceiling)
			}
			low = low || d < ceiling/4
		}
		if !low {
			t.Errorf("backoff %d never fell under a quarter of %v in 200 draws: not full jitter", n, ceiling)
		}
	}
	if d := p.Wait(1, r, retry.Answer{RetryAfter: 5 * time.Second}); d < 5*time.Second {
		t.Errorf("wait = %v, shorter than Retry-After 5s", d)
	}
}

// rewinds records whether the transport could have resent the body.
type rewinds struct{ couldResend bool }

func (rw *rewinds) RoundTrip(req *http.Request) (*http.Response, error) {
	rw.couldResend = req.GetBody != nil
	return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {"2"}},
		Body: http.NoBody, Request: req}, nil
}

// TestSend_OneAttemptTheTransportCannotRepeat catches a Send that leaves
// GetBody set: net/http would then resend a request carrying an
// Idempotency-Key on its own, behind the policy's back.
func TestSend_OneAttemptTheTransportCannotRepeat(t *testing.T) {
	rw := &rewinds{}
	req, _ := http.NewRequest("POST", "http://lab.test/transfers", strings.NewReader(`{}`))
	a := retry.Send(&http.Client{Transport: rw}, req)
	if rw.couldResend {
		t.Error("the request reached the transport with GetBody set")
	}
	if a.Status != 503 || a.RetryAfter != 2*time.Second || !a.Retryable() {
		t.Errorf("answer %+v", a)
	}
}
