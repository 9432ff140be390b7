package grader

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// GiveUp says when a client abandons its request.
type GiveUp int

// The moments a client gives up at.
const (
	// MidBody: half the body is sent, then the client hangs up. The
	// server never has the whole request, so nothing may be claimed.
	MidBody GiveUp = iota
	// OnSignal: the whole request is sent, and the client hangs up when
	// the check says (Abandoned.GiveUp): during the core wait, say.
	OnSignal
	// AfterSent: the whole request is sent, and the client hangs up a
	// given delay later, wherever the server is in its work by then:
	// before its claim, inside its business write, just after the commit.
	AfterSent
)

// Abandoned is a request whose client gives up before its answer comes.
type Abandoned struct {
	*Pending
	cancel context.CancelFunc
	once   sync.Once
}

// GiveUp hangs up: the client closes its connection, and the server sees
// its request's context cancelled.
func (a *Abandoned) GiveUp() { a.once.Do(a.cancel) }

// Abandon sends req as a client that gives up at the moment how says
// (after delay, for AfterSent) and returns at once; the Pending's answer
// is then the client's error, unless the server answered first.
func (t *T) Abandon(req Request, how GiveUp, delay time.Duration) *Abandoned {
	ctx, cancel := context.WithCancel(t.ctx)
	a := &Abandoned{cancel: cancel}
	sent := make(chan struct{})
	client := *t.target.Client
	client.Transport = giveUpTransport{base: transport(t.target.Client), how: how, ctx: ctx, sent: sent}
	target := *t.target
	target.Client = &client
	// A copy of T that sends with the request's own context and client.
	c := *t
	c.ctx, c.target = ctx, &target
	a.Pending = c.Launch(req)
	go func() {
		select {
		case <-sent:
		case <-a.done:
			return
		}
		switch how {
		case OnSignal:
			return
		case AfterSent:
			if delay > 0 {
				wait := time.NewTimer(delay)
				defer wait.Stop()
				select {
				case <-wait.C:
				case <-a.done:
				}
			}
		}
		a.GiveUp()
	}()
	return a
}

// transport is the round tripper of client.
func transport(client *http.Client) http.RoundTripper {
	if client.Transport != nil {
		return client.Transport
	}
	return http.DefaultTransport
}

// giveUpTransport sends a request's body through a reader that tells when
// the body has gone (or, MidBody, sends only half of it and stalls until
// the client gives up).
type giveUpTransport struct {
	base http.RoundTripper
	how  GiveUp
	ctx  context.Context
	sent chan struct{}
}

func (g giveUpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		close(g.sent)
		return g.base.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.ContentLength = int64(len(b))
	body := &watchedBody{rest: b, sent: g.sent, ctx: g.ctx}
	if g.how == MidBody {
		body.stallAt = len(b) / 2
	} else {
		body.stallAt = -1
	}
	out.Body = body
	return g.base.RoundTrip(out)
}

// watchedBody hands out a body, closes sent once it is all out (or, when
// stallAt ≥ 0, once that many bytes are out, and then stalls until ctx
// is done).
type watchedBody struct {
	rest    []byte
	n       int
	stallAt int
	sent    chan struct{}
	once    sync.Once
	ctx     context.Context
}

func (w *watchedBody) Read(p []byte) (int, error) {
	if w.stallAt >= 0 && w.n >= w.stallAt {
		w.once.Do(func() { close(w.sent) })
		<-w.ctx.Done()
		return 0, w.ctx.Err()
	}
	if len(w.rest) == 0 {
		w.once.Do(func() { close(w.sent) })
		return 0, io.EOF
	}
	limit := len(w.rest)
	if w.stallAt >= 0 {
		limit = min(limit, w.stallAt-w.n)
	}
	k := copy(p[:min(len(p), limit)], w.rest)
	w.rest = w.rest[k:]
	w.n += k
	return k, nil
}

func (w *watchedBody) Close() error { return nil }

// retryUntilAnswered retries req, sent first as sent says, as a patient
// client does: again whenever it is told to come back (toldToComeBack) or
// gets no answer, with a backoff from 5 ms doubling up to 100 ms, for as
// long as patience. It returns the first other answer, or the last one if
// patience ran out, and how many retries it sent. It is the client's
// retry policy: a 409 with no problem type (a plain-text 409) is recorded
// as a contract difference once in a check (expected is what the retry
// should have been told) and retried, as untilAnswered does; a caller
// still told to come back judges what the client knows when it stops.
func (t *T) retryUntilAnswered(req Request, patience time.Duration, sent, expected string) (Response, int) {
	asked := sent + "\nthen the same request again"
	return t.retryWhile(req, patience, func(r Response) bool {
		if untypedConflict(r) {
			t.differUntyped(asked, r, expected)
		}
		return toldToComeBack(r) || r.Err != nil
	})
}

// retryWhile retries req, with retryUntilAnswered's backoff, for as long
// as wait says the answer asks the client to wait, and at most for
// patience. It returns the last answer and how many were sent.
func (t *T) retryWhile(req Request, patience time.Duration, wait func(Response) bool) (Response, int) {
	deadline := time.Now().Add(patience)
	backoff := 5 * time.Millisecond
	for n := 1; ; n++ {
		r := t.Do(req)
		if !wait(r) || time.Now().After(deadline) || t.ctx.Err() != nil {
			return r, n
		}
		pace := time.NewTimer(backoff)
		select {
		case <-pace.C:
		case <-t.ctx.Done():
			pace.Stop()
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}
