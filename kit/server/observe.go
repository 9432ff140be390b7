package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"idemlab/kit/accesslog"
	"idemlab/kit/auth"
	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/events"
	"idemlab/kit/fault"
	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
	"idemlab/kit/request"
)

// record is what the observe middleware learns about one request.
type record struct {
	customer string
}

type recordKey struct{}

// noteCustomer copies the authenticated customer into the request's record.
func noteCustomer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := r.Context().Value(recordKey{}).(*record); ok {
			rec.customer = auth.Customer(r.Context())
		}
		next.ServeHTTP(w, r)
	})
}

// servingCustomer marks the request as a customer's being served until
// its handler returns (core.Client.Serving): a posting of a transfer it
// made, given up on before then, is one the customer's answer waited for
// (GET /lab/outbox's core_unanswered); one given up once it is answered
// is not.
func (s *Server) servingCustomer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, returned := s.core.Serving(r.Context())
		defer returned()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// SessionCookie is the name of the cookie every customer response carries.
const SessionCookie = "lab_session"

// sessionCookie gives every customer response a fresh session cookie, set
// before the handler runs, as a real web application's session layer
// would. It is there to be left alone: a stage that stores "the response
// headers" and replays them hands one client's session to another, and a
// check sees it.
func sessionCookie(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [12]byte
		rand.Read(b[:])
		c := &http.Cookie{Name: SessionCookie, Value: hex.EncodeToString(b[:]), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}
		w.Header().Add("Set-Cookie", c.String())
		next.ServeHTTP(w, r)
	})
}

// observe buffers each response until its handler has returned, so that
// the crash-before-response fault can end the process after the work and
// before a byte is sent; then it sends the response and reports the
// request, and the executions it committed, on the event stream and in
// the access log (when the server keeps one, or someone is subscribed).
//
// The handler runs, and its executions are read, while the lab is held
// against a reset (labctl.Controller.Shared); the answer is sent after the
// lab is let go, so that a client slow to read it never holds up a reset.
// Before all that, the request waits for one of the server's slots
// (requestSlots), which keep database connections free for the relay and
// the lab's own endpoints.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &record{}
		ctx := context.WithValue(r.Context(), recordKey{}, rec)
		if s.db.SlowSettingsRereadsLeft() > 0 || s.db.SlowKeyDeletesAfterReadLeft() > 0 {
			// The database notes in the context what the request's
			// statements did, for the faults that hold up a read after
			// a write or a read and a delete after a read; only while one is
			// armed, as it is before its check's requests are sent.
			ctx = fault.WithRequest(ctx)
		}
		ctx, execs := bank.WithExecutionLog(ctx)
		body := &captureReader{r: r.Body}
		r.Body = body
		buf := &bufferedWriter{header: http.Header{}, status: http.StatusOK}
		// Each call to the core is counted for the lab's state as it
		// starts, by the op of the body the handler has read by then.
		execs.OnCoreCall(func() { s.bank.CountCoreCall(opOf(body.buf.Bytes())) })
		attempt := r.Header.Get(events.AttemptHeader)

		// The wait for a slot is part of the request's duration, as the
		// wait for a database connection was before there were slots.
		if s.slots.take(r.Context()) {
			func() {
				// The slot is free again before the answer goes out: a
				// client slow to read it holds no database connection, nor
				// a slot.
				defer s.slots.release()
				s.ctl.Shared(func() {
					// A crash fault aborts the request by panicking through
					// here; the money it committed first must still be
					// reported.
					defer s.publishExecutions(ctx, execs, attempt)
					s.serveRecovered(buf, r.WithContext(ctx), next)
				})
			}()
			s.faults.BeforeResponse()
		} else {
			// Its client went away while it waited: nothing ran, and the
			// answer reaches no one, but the request is reported as any
			// other is.
			problem.Write(buf, problem.New(problem.Unavailable, "the request ended while it waited for the server to take it; nothing was executed"))
		}

		dst := w.Header()
		for k, v := range buf.headers() {
			dst[k] = v
		}
		w.WriteHeader(buf.status)
		w.Write(buf.body.Bytes())

		// The report decodes the body and the answer again: make it only
		// for someone who reads it.
		logError := buf.status >= 500 && s.log != nil
		if !logError && s.accessLog == nil && !s.hub.Listening() {
			return
		}
		ev := events.Request{
			Method: r.Method, Path: r.URL.Path, Customer: rec.customer,
			Key: r.Header.Get(idemkey.Header), Status: buf.status,
			Replayed:   buf.headers().Get("Idempotent-Replayed") == "true",
			DurationMS: float64(time.Since(start).Microseconds()) / 1000,
			Op:         opOf(body.buf.Bytes()),
			Attempt:    attempt,
		}
		if ev.Status >= 400 {
			ev.Type = problemType(buf.body.Bytes())
		}
		if buf.status >= 500 && buf.cause != nil {
			ev.Cause = buf.cause.Error()
		}
		if logError {
			s.log.Error("answered "+strconv.Itoa(ev.Status), "method", ev.Method, "path", ev.Path,
				"key", ev.Key, "problem", ev.Type, "cause", buf.cause)
		}
		s.hub.Publish(events.KindRequest, ev)
		s.logAccess(ev, body.buf.Bytes())
	})
}

// Execution is the data of an "execution" event: the business write, and
// the Lab-Attempt header of the request that made it.
type Execution struct {
	bank.Execution
	Attempt string `json:"attempt,omitempty"`
}

// publishExecutions reports the business writes of a request that
// committed, if anyone is subscribed to hear of them, with the request's
// attempt name.
func (s *Server) publishExecutions(ctx context.Context, execs *bank.ExecutionLog, attempt string) {
	if !s.hub.Listening() {
		return
	}
	committed, err := s.bank.Committed(context.WithoutCancel(ctx), execs)
	if err != nil {
		s.hub.Publish(events.KindExecution, map[string]string{"error": err.Error()})
	}
	for _, e := range committed {
		s.hub.Publish(events.KindExecution, Execution{Execution: e, Attempt: attempt})
	}
}

// serveRecovered runs next and turns a panic into a 500 problem, except
// http.ErrAbortHandler, which a crash fault uses to abort the request.
func (s *Server) serveRecovered(w *bufferedWriter, r *http.Request, next http.Handler) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			w.reset()
			problem.Write(w, problem.Wrap(problem.Internal, fmt.Errorf("panic: %v", v),
				"the handler panicked; retrying with the same Idempotency-Key is safe"))
		}
	}()
	next.ServeHTTP(w, r)
}

func (s *Server) logAccess(ev events.Request, body []byte) {
	if s.accessLog == nil {
		return
	}
	s.accessLog.Write(accesslog.Record{
		Time: clock.Format(s.clock.Now()), Customer: ev.Customer, Method: ev.Method, Path: ev.Path,
		Key: ev.Key, Status: ev.Status, Type: ev.Type, Replayed: ev.Replayed, Op: ev.Op,
		DurationMS: ev.DurationMS, Body: string(body),
	})
}

func opOf(body []byte) string {
	var v struct {
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	op, _ := v.Metadata["op"].(string)
	return op
}

func problemType(body []byte) string {
	var p problem.Body
	json.Unmarshal(body, &p)
	return p.Type
}

// captureReader keeps a copy of what the handler read of the body, up to
// one byte past the size limit.
type captureReader struct {
	r   io.ReadCloser
	buf bytes.Buffer
}

func (c *captureReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if room := request.MaxBody + 1 - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(n, room)])
	}
	return n, err
}

func (c *captureReader) Close() error { return c.r.Close() }

// bufferedWriter holds a response until the handler is done, and the
// cause of a problem it carries (see problem.CauseRecorder). Its headers
// are those the handler had set when it wrote the status, as on a plain
// net/http server, where a header set after WriteHeader never reaches the
// client: holding the response back must not make such code work here.
type bufferedWriter struct {
	header      http.Header
	sent        http.Header // the headers as they were at WriteHeader
	status      int
	wroteHeader bool
	body        bytes.Buffer
	cause       error
}

func (b *bufferedWriter) RecordCause(err error) { b.cause = err }

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(status int) {
	if !b.wroteHeader {
		b.status, b.wroteHeader = status, true
		b.sent = b.header.Clone()
	}
}

// headers are the headers the response goes out with.
func (b *bufferedWriter) headers() http.Header {
	if b.wroteHeader {
		return b.sent
	}
	return b.header
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

func (b *bufferedWriter) reset() {
	b.header, b.sent = http.Header{}, nil
	b.status, b.wroteHeader = http.StatusOK, false
	b.body.Reset()
	b.cause = nil
}
