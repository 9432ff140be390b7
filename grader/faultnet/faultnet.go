// Package faultnet is the client side of a flaky network: an
// http.RoundTripper that makes a request meet one of the seven failure
// points of a remote call. The replay and the demo's traffic send through
// it; the server never knows it is there. (Server-side faults, the crash
// points armed through POST /lab/faults, are kit/fault's.)
package faultnet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/kit/problem"
)

// Transport is an http.RoundTripper that sits between a client and a
// server and makes a request meet one of the seven failure points of a
// remote call (docs/grader.md numbers them), chosen per request with
// WithFault. A request without a fault passes through to Base untouched.
//
// Points 1, 2, 4 and 5 never reach the server: the transport answers or
// fails by itself. Point 3 sends the server a body cut in half. Points 6
// and 7 let the server process the request, throw its response away and
// fail as the network would; the client cannot tell them from 1 and 2,
// which is why only an idempotency key makes its retry safe.
//
// Point 7 does not really wait: it fails at once with a timeout error, and
// the replay driver moves its own clock on by the client's timeout.
type Transport struct {
	// Base carries the requests that reach the server.
	Base http.RoundTripper
}

type faultKey struct{}

// WithFault returns a context whose request meets point p when it goes
// through a Transport.
func WithFault(ctx context.Context, p dayplan.Point) context.Context {
	return context.WithValue(ctx, faultKey{}, p)
}

func faultOf(ctx context.Context) dayplan.Point {
	p, _ := ctx.Value(faultKey{}).(dayplan.Point)
	return p
}

// Error is the error a client sees at a failure point. It is a
// net.Error: Timeout reports true for a withheld response.
type Error struct {
	Point dayplan.Point
	// Reached says whether the server received the request.
	Reached bool
	msg     string
	err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (fault %s)", e.msg, e.Point)
}

// Unwrap returns the system error the fault imitates, if any.
func (e *Error) Unwrap() error { return e.err }

// Timeout reports whether the client gave up waiting.
func (e *Error) Timeout() bool { return e.Point == dayplan.ResponseWithheld }

// Temporary is part of net.Error; every failure point is worth a retry.
func (e *Error) Temporary() bool { return true }

// RoundTrip sends req through the failure point its context names.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := faultOf(req.Context())
	switch p {
	case "":
		return t.Base.RoundTrip(req)
	case dayplan.ConnectFails:
		closeBody(req)
		return nil, &Error{Point: p, msg: "dial tcp " + req.URL.Host + ": connect: connection refused", err: syscall.ECONNREFUSED}
	case dayplan.NeverArrives:
		closeBody(req)
		return nil, &Error{Point: p, msg: "write tcp " + req.URL.Host + ": the request was lost before it reached the server", err: syscall.EPIPE}
	case dayplan.TruncatedBody:
		return t.truncate(req)
	case dayplan.Shed503:
		closeBody(req)
		return synthesized(req, problem.Unavailable,
			"the load balancer shed this request before it reached the server (injected fault shed-503)"), nil
	case dayplan.Server5xx:
		closeBody(req)
		return synthesized(req, problem.Internal,
			"the server failed before doing any work (injected fault server-5xx)"), nil
	case dayplan.ResetAfterProcessing, dayplan.ResponseWithheld:
		resp, err := t.Base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if p == dayplan.ResetAfterProcessing {
			return nil, &Error{Point: p, Reached: true, msg: "read tcp " + req.URL.Host + ": connection reset by peer", err: syscall.ECONNRESET}
		}
		return nil, &Error{Point: p, Reached: true, msg: "the response was withheld until the client's timeout", err: context.DeadlineExceeded}
	default:
		closeBody(req)
		return nil, fmt.Errorf("faultnet: unknown failure point %q", p)
	}
}

// truncate sends the first half of the body under the full Content-Length
// and then breaks the connection, as a client that dies mid-upload does.
// The server must answer 400 and execute nothing; the client never sees
// that answer.
func (t *Transport) truncate(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	cut := len(body) / 2
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:cut]), errReader{io.ErrUnexpectedEOF}))
	out.ContentLength = int64(len(body))
	out.GetBody = nil
	resp, err := t.Base.RoundTrip(out)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil, &Error{Point: dayplan.TruncatedBody, Reached: true,
		msg: fmt.Sprintf("write tcp %s: the connection broke after %d of %d body bytes", req.URL.Host, cut, len(body)), err: syscall.EPIPE}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// synthesized is a problem response made by something in front of the
// server, a load balancer or a dying process, written by the kit's own
// problem writer so that it reads like the server's.
func synthesized(req *http.Request, t *problem.Type, detail string) *http.Response {
	rec := httptest.NewRecorder()
	pe := problem.New(t, "%s", detail)
	if t == problem.Unavailable {
		pe.RetryAfter = time.Second
	}
	problem.Write(rec, pe)
	resp := rec.Result()
	resp.Request = req
	return resp
}
