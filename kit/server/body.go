package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"idemlab/kit/request"
)

// readBody is middleware that reads each request's body into memory, up to
// one byte past request.MaxBody, before anything else handles the request,
// and gives the client timeout to send it. Two promises rest on it: no lab
// lock is held while a client sends (a reset waits for every request that
// holds the lab, and every request that comes after the reset waits for the
// reset, so one slow client would stall them all), and a client that never
// finishes its body loses its connection instead of keeping it.
//
// A handler then reads what the client sent: its bytes, then the error that
// ended them (the deadline, a connection cut mid-body), so a truncated body
// is refused as before. A body over the limit is refused by the handler,
// which sees the limit's extra byte.
func readBody(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody {
				var err error
				if r.Body, err = readAhead(w, r.Body, timeout); err != nil {
					// net/http cancels a request's context when a read
					// from its connection fails. The request goes on all
					// the same, to be refused as truncated by its handler
					// and seen on the event stream and in the access log.
					r = r.WithContext(context.WithoutCancel(r.Context()))
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// readAhead reads body under a read deadline and returns a body that gives
// back what was read, and the error that ended the read early. The deadline is set only when a body remains to be
// read: net/http clears it once the body has been read to its end, before
// it starts watching the connection for a client going away. A body cut at
// the limit keeps it, which also bounds what net/http reads of the rest
// after the answer. Under a ResponseWriter with no connection (a test's
// recorder) there is no deadline to set.
func readAhead(w http.ResponseWriter, body io.ReadCloser, timeout time.Duration) (io.ReadCloser, error) {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	got, err := io.ReadAll(io.LimitReader(body, request.MaxBody+1))
	var r io.Reader = bytes.NewReader(got)
	if err != nil {
		r = io.MultiReader(r, failingReader{err})
	}
	return readCloser{Reader: r, Closer: body}, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }
