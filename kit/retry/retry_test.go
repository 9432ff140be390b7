package retry_test

import (
	"context"
	"fmt"
	"io"
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

// TestPolicy_FullJitterUnderTheCeiling catches a backoff that adds a floor
// (half the ceiling and more: clients that failed together come back
// together), one that outgrows the cap, and a wait shorter than Retry-After.
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

// fakeClock is a Client's clock that moves only when the client sleeps
// (or the test says an attempt took time): no test here really waits.
type fakeClock struct {
	now    time.Time
	slept  []time.Duration
	cancel context.CancelFunc // when set, the first sleep ends the context
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	if c.cancel != nil {
		c.cancel()
	}
	return ctx.Err()
}

// reply is one scripted response.
type reply struct {
	status     int
	problem    string
	retryAfter int
}

// server is a transport that answers from a script (the last reply again
// once the script runs out) and records what each attempt sent.
type server struct {
	t      *testing.T
	script []reply
	clock  *fakeClock
	took   time.Duration // how far each attempt moves the clock
	sent   []string      // key and body of each round trip
	at     []time.Time   // when each round trip left
	rewind int           // round trips that reached it with GetBody set
}

func (s *server) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(s.sent) > 100_000 {
		s.t.Fatal("the client never stops")
	}
	if req.GetBody != nil {
		s.rewind++
	}
	body, _ := io.ReadAll(req.Body)
	s.sent = append(s.sent, req.Header.Get("Idempotency-Key")+" "+string(body))
	s.at = append(s.at, s.clock.now)
	s.clock.now = s.clock.now.Add(s.took)
	r := s.script[min(len(s.sent), len(s.script))-1]
	h := http.Header{}
	if r.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(r.retryAfter))
	}
	b := "{}"
	if r.problem != "" {
		b = fmt.Sprintf(`{"type":%q}`, r.problem)
	}
	return &http.Response{StatusCode: r.status, Header: h, Body: io.NopCloser(strings.NewReader(b)), Request: req}, nil
}

// submit runs one submission of a transfer under key k-1 against s.
func submit(ctx context.Context, s *server, p retry.Policy, seen func(int, retry.Answer)) retry.Result {
	c := retry.Client{HTTP: &http.Client{Transport: s}, Policy: p, Clock: s.clock, Jitter: rand.New(rand.NewPCG(7, 7))}
	return c.Do(ctx, func(n int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lab.test/transfers", strings.NewReader(`{"amount":100}`))
		if err == nil {
			req.Header.Set("Idempotency-Key", "k-1")
		}
		return req, err
	}, seen)
}

func newServer(t *testing.T, script ...reply) *server {
	return &server{t: t, script: script, clock: &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}}
}

// TestClient_EachAttemptIsOneSendOfTheSameRequest catches a loop that
// leaves GetBody set (net/http may then resend on its own, uncounted and
// unbacked-off), one that sends one request twice (the second attempt
// carries an empty body), and one that changes the key or the body.
func TestClient_EachAttemptIsOneSendOfTheSameRequest(t *testing.T) {
	s := newServer(t, reply{status: 503}, reply{status: 500}, reply{status: 201})
	var seen []int
	res := submit(t.Context(), s, retry.Published(), func(n int, a retry.Answer) { seen = append(seen, a.Status) })
	if res.Attempts != 3 || len(s.sent) != 3 || res.Answer.Status != 201 || res.GaveUp {
		t.Fatalf("result %+v after %d round trips, want 3 attempts ending in 201", res, len(s.sent))
	}
	if s.rewind != 0 {
		t.Errorf("%d of 3 round trips reached the transport with GetBody set", s.rewind)
	}
	for i, sent := range s.sent {
		if sent != `k-1 {"amount":100}` {
			t.Errorf("attempt %d sent %q, want the same key and body as the first", i+1, sent)
		}
	}
	if fmt.Sprint(seen) != "[503 500 201]" {
		t.Errorf("seen got %v, want every attempt's answer: [503 500 201]", seen)
	}
}

// TestClient_AnOutcomeIsNotRetried catches a loop that retries a final
// answer: a refusal, a duplicate, a reused key, an unknown 409, a 501.
func TestClient_AnOutcomeIsNotRetried(t *testing.T) {
	for _, r := range []reply{
		{status: 201},
		{status: 400, problem: problem.InvalidRequest.URI()},
		{status: 409, problem: problem.DuplicateRequest.URI()},
		{status: 409},
		{status: 422, problem: problem.IdempotencyKeyReused.URI()},
		{status: 501},
	} {
		s := newServer(t, r)
		res := submit(t.Context(), s, retry.Published(), nil)
		if len(s.sent) != 1 || res.Attempts != 1 || res.GaveUp || len(s.clock.slept) != 0 {
			t.Errorf("%d %s: %d round trips, result %+v, slept %v; want one attempt and no wait", r.status, r.problem, len(s.sent), res, s.clock.slept)
		}
	}
}

// TestClient_WaitsAtLeastRetryAfter catches a loop that retries a 429, a
// 408, a 503 or a request still in progress sooner than the server asked,
// and one that gives up on them.
func TestClient_WaitsAtLeastRetryAfter(t *testing.T) {
	for _, r := range []reply{
		{status: 429, retryAfter: 7},
		{status: 408, retryAfter: 7},
		{status: 503, retryAfter: 7},
		{status: 409, problem: problem.RequestInProgress.URI(), retryAfter: 7},
	} {
		s := newServer(t, r, reply{status: 201})
		res := submit(t.Context(), s, retry.Published(), nil)
		if res.Attempts != 2 || res.Answer.Status != 201 {
			t.Errorf("%d %s: result %+v, want a retry that gets 201", r.status, r.problem, res)
			continue
		}
		if gap := s.at[1].Sub(s.at[0]); gap < 7*time.Second {
			t.Errorf("%d %s: retried after %v, Retry-After said 7s", r.status, r.problem, gap)
		}
	}
}

// TestClient_BacksOffWithThePolicysJitter catches a loop that waits by
// another rule than Policy.Wait: a fixed delay, another jitter, no
// doubling.
func TestClient_BacksOffWithThePolicysJitter(t *testing.T) {
	s := newServer(t, reply{status: 503}, reply{status: 503}, reply{status: 503}, reply{status: 503}, reply{status: 201})
	p := retry.Published()
	submit(t.Context(), s, p, nil)
	same := rand.New(rand.NewPCG(7, 7))
	var want []time.Duration
	for n := 1; n <= 4; n++ {
		want = append(want, p.Wait(n, same, retry.Answer{Status: 503}))
	}
	if fmt.Sprint(s.clock.slept) != fmt.Sprint(want) {
		t.Errorf("waits %v, want Policy.Wait's from the same source: %v", s.clock.slept, want)
	}
}

// TestClient_StopsAtTheHorizon catches a loop that retries for ever, one
// that sends an attempt after the horizon (counting the time attempts
// took), and one that gives up long before it.
func TestClient_StopsAtTheHorizon(t *testing.T) {
	p := retry.Policy{Base: time.Second, Cap: 30 * time.Second, Horizon: 10 * time.Minute, Timeout: 10 * time.Second}
	s := newServer(t, reply{status: 503})
	s.took = p.Timeout
	res := submit(t.Context(), s, p, nil)
	if !res.GaveUp || res.Answer.Status != 503 || res.Attempts != len(s.sent) {
		t.Fatalf("result %+v after %d round trips, want a 503 and GaveUp", res, len(s.sent))
	}
	last := s.at[len(s.at)-1].Sub(s.at[0])
	if last > p.Horizon {
		t.Errorf("an attempt left %v after the first, past the %v horizon", last, p.Horizon)
	}
	if last < p.Horizon-p.Cap-p.Timeout {
		t.Errorf("gave up %v after the first attempt, long before the %v horizon", last, p.Horizon)
	}
}

// TestClient_StopsWhenTheContextEnds catches a loop that keeps sending
// after its caller has gone.
func TestClient_StopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := newServer(t, reply{status: 503})
	s.clock.cancel = cancel
	res := submit(ctx, s, retry.Published(), nil)
	if len(s.sent) != 1 || res.GaveUp {
		t.Errorf("%d round trips, result %+v; want the one before the context ended", len(s.sent), res)
	}
}
