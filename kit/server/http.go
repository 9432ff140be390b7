package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The limits every lab server puts on its clients, whoever starts it (lab
// serve, the grader's child processes, the dashboard). A server students
// attach to meets clients that are slow, stuck or hostile; none of them may
// hold a connection, or the lab, for long.
const (
	// HeaderTimeout is how long a client has to send its request line and
	// headers.
	HeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout is how long a client has, after its headers, to
	// send its body (see Options.BodyTimeout).
	DefaultBodyTimeout = 10 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. It is longer than the longest core_latency (1m) a
	// handler may be asked to spend; the event stream extends it for
	// itself (see events.Hub.ServeHTTP).
	WriteTimeout = 2 * time.Minute
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request.
	IdleTimeout = time.Minute
	// MaxHeaderBytes bounds the request line and headers, as the client
	// sent them, the blank line that ends them included; a larger request
	// gets 431 Request Header Fields Too Large before any handler runs.
	MaxHeaderBytes = 16 << 10
	// netHTTPSlack is what net/http reads beyond http.Server.MaxHeaderBytes
	// before it refuses a request's headers (its bufio buffer, 4 KiB):
	// the http.Server is given MaxHeaderBytes less this, so that the
	// limit it enforces is MaxHeaderBytes.
	netHTTPSlack = 4 << 10
)

// NewHTTPServer returns the http.Server a lab server listens with: h behind
// the limits above. The body deadline is not among them: the server's
// handler sets it per request (see Options.BodyTimeout), so that it holds
// under any http.Server, httptest's included.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           boundHeaders(h),
		ReadHeaderTimeout: HeaderTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes - netHTTPSlack,
	}
}

// boundHeaders refuses with 431 a request whose headers are over
// MaxHeaderBytes although net/http let them through. net/http counts the
// bytes it reads from the connection for this request, and a client that
// pipelines requests has had the start of the next one read ahead with
// the one before, uncounted: up to netHTTPSlack more.
func boundHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) > MaxHeaderBytes {
			w.Header().Set("Connection", "close")
			http.Error(w, "431 Request Header Fields Too Large", http.StatusRequestHeaderFieldsTooLarge)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// headerBytes is how many bytes r's request line and headers took at
// least: net/http keeps each field's name and value but not the spaces
// around the value, nor the fields it takes out of the header (Host is
// counted from r.Host), so the count is never above what was sent.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + len("\r\n")
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + len("\r\n")
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n + len("\r\n")
}

// ServeUntilStopped serves h on ln behind NewHTTPServer's limits until
// stop is called. stop closes ln and every connection, then waits for the
// handlers under way to return, so that what they use (a database) can be
// closed after it; a request that slips in meanwhile gets 503. It does not
// wait for a connection to linger (net/http lingers half a second on one
// whose large body went unread).
func ServeUntilStopped(ln net.Listener, h http.Handler) (stop func()) {
	// Handlers hold running for reading; stop takes it for writing.
	var running sync.RWMutex
	stopped := false
	hs := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.RLock()
		defer running.RUnlock()
		if stopped {
			http.Error(w, "the server is stopping", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln)
	}()
	return func() {
		hs.Close()
		<-served
		running.Lock()
		stopped = true
		running.Unlock()
	}
}
