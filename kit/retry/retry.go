// Package retry is the client's retry policy of docs/api.md ("What a
// client must do") and the one way the lab's clients send an attempt: the
// same key and the same request on every attempt, a retry only after an
// answer that says "not now" or no answer at all, exponential backoff with
// full jitter, never less than Retry-After, and a horizon after which the
// client gives up. Client is that loop; the replay (lab replay) and the
// demo's traffic both send through it.
package retry

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"idemlab/kit/problem"
)

// Policy is when to retry and how long to wait.
type Policy struct {
	// Base is the ceiling of the first backoff; each retry doubles it, up
	// to Cap.
	Base time.Duration
	Cap  time.Duration
	// Horizon is how long after its first attempt a client still retries.
	// The server's retention must be longer.
	Horizon time.Duration
	// Timeout is how long the client waits for a response.
	Timeout time.Duration
}

// Published is the policy docs/api.md publishes: up to 0.5 s before the
// first retry, doubling up to 30 s, for an hour; a 10 s timeout.
func Published() Policy {
	return Policy{Base: 500 * time.Millisecond, Cap: 30 * time.Second, Horizon: time.Hour, Timeout: 10 * time.Second}
}

// Backoff is the wait before retry n (1 for the first retry): a random
// time up to Base·2^(n-1), capped at Cap ("full jitter"), so that clients
// that failed together do not come back together.
func (p Policy) Backoff(n int, r *rand.Rand) time.Duration {
	ceiling := p.Cap
	if n < 30 {
		ceiling = min(p.Cap, p.Base<<(n-1))
	}
	return time.Duration(r.Int64N(int64(ceiling) + 1))
}

// Wait is the wait before retry n after answer a: the backoff, and never
// less than the server's Retry-After.
func (p Policy) Wait(n int, r *rand.Rand, a Answer) time.Duration {
	return max(p.Backoff(n, r), a.RetryAfter)
}

// Answer is what one attempt got: a response, or Err when none came.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Problem is the problem type of an error response, if it is one.
	Problem string
	// Replayed is the Idempotent-Replayed header.
	Replayed bool
	// RetryAfter is the Retry-After header, in whole seconds.
	RetryAfter time.Duration
	Err        error
}

// Retryable reports whether the policy retries after a: no answer at
// all, 408, 409 request-in-progress, 429, 500, 502, 503 or 504. Every
// other answer is the operation's outcome. A 408 says the server closed
// the connection before it had the whole request (RFC 9110, 15.5.9): it
// ran nothing, and the client may repeat the request.
func (a Answer) Retryable() bool {
	if a.Err != nil {
		return true
	}
	switch a.Status {
	case http.StatusConflict:
		return a.Problem == problem.RequestInProgress.URI()
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// MaxBody is how much of a response Send keeps.
const MaxBody = 1 << 20

// Send makes exactly one attempt of req with c and reads the answer.
// Go's transport resends on its own a request whose reused connection
// dropped, if it can rewind the body; a request that carries an
// Idempotency-Key is the client's to retry, counted and backed off by the
// policy, so Send takes that rewind away.
func Send(c *http.Client, req *http.Request) Answer {
	req.GetBody = nil
	resp, err := c.Do(req)
	if err != nil {
		return Answer{Err: err}
	}
	defer resp.Body.Close()
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	a.Body, a.Err = io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if a.Err != nil {
		return a
	}
	if resp.StatusCode >= 400 {
		var p problem.Body
		if json.Unmarshal(a.Body, &p) == nil {
			a.Problem = p.Type
		}
	}
	a.RetryAfter = RetryAfter(resp.Header)
	return a
}

// RetryAfter is h's Retry-After in whole seconds, 0 when it has none or
// one the policy does not read (an HTTP date: the policy's backoff then).
func RetryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// Clock is the time a Client waits on: the real one, a day plan's (the
// replay runs a day in minutes), or a test's.
type Clock interface {
	Now() time.Time
	// Sleep waits d; it returns ctx's error if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Wall is the wall clock, the one a Client with no Clock waits on.
var Wall Clock = wall{}

type wall struct{}

func (wall) Now() time.Time { return time.Now() }

// Sleep waits d on a timer; since Go 1.23 an unfired time.After is
// collected without being stopped.
func (wall) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Client sends one submission by its Policy: one request per attempt, each
// sent once, until an answer is the outcome or the horizon is over. A
// Client is one submission's: make a new one (it is a small value) for
// each, since Jitter is not safe for concurrent use.
type Client struct {
	HTTP   *http.Client
	Policy Policy
	// Clock is the time the client waits on; nil means the wall clock.
	Clock Clock
	// Jitter draws the backoffs; nil means a fresh random source. A caller
	// that wants the same waits every time (the replay, the demo against
	// each of its servers) seeds its own.
	Jitter *rand.Rand
}

// Result is how a submission ended.
type Result struct {
	// Answer is the last attempt's.
	Answer Answer
	// Attempts is how many were sent.
	Attempts int
	// GaveUp says the last answer was retryable and the next attempt
	// would have left after the horizon: the client does not know the
	// operation's outcome.
	GaveUp bool
}

// Do sends the submission: newRequest makes the request of attempt n
// (from 1), a new one each time with the same key and the same request,
// and Do sends it once with Send. After each attempt it calls seen, when
// set, with n and the answer, so that the caller can record every attempt.
// It retries a retryable answer after Policy.Wait, on c's clock, as long
// as the next attempt leaves within Policy.Horizon of the first; it stops
// when ctx ends, and when newRequest fails (its error is the answer's Err).
func (c Client) Do(ctx context.Context, newRequest func(n int) (*http.Request, error), seen func(n int, a Answer)) Result {
	clock, jitter := c.Clock, c.Jitter
	if clock == nil {
		clock = Wall
	}
	if jitter == nil {
		jitter = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	first := clock.Now()
	for n := 1; ; n++ {
		req, err := newRequest(n)
		var a Answer
		if err != nil {
			a = Answer{Err: err}
		} else {
			a = Send(c.HTTP, req)
		}
		if seen != nil {
			seen(n, a)
		}
		res := Result{Answer: a, Attempts: n}
		if err != nil || !a.Retryable() || ctx.Err() != nil {
			return res
		}
		wait := c.Policy.Wait(n, jitter, a)
		if clock.Now().Sub(first)+wait > c.Policy.Horizon {
			res.GaveUp = true
			return res
		}
		if clock.Sleep(ctx, wait) != nil {
			return res
		}
	}
}
