package targets

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// A day replayed against a server in this process (replay.InProcess: lab
// replay --solution, the scoreboard, stage 0's tally check, make
// bench-day) sends a request for every attempt, some 140,000 in make
// bench-day's. Over loopback TCP each one is written and read through the
// kernel's sockets and wakes a goroutine through the network poller: a
// share of the day's time that measures the machine's kernel, not the
// server or the replay (docs/benchmarks.md has the figures). So such a
// day reaches its server over in-memory connections (bufferedPipe): the same
// HTTP/1.1, byte for byte, through the same net/http server and client,
// with the same faults on the way (grader/faultnet works on requests and
// answers, not on sockets). What a slow or oversized client does to a
// server is a socket's matter, and the checks that attack it run over
// loopback TCP.

// InMemory is an HTTP server in this process that clients reach over
// in-memory connections.
type InMemory struct {
	// URL is the server's base URL. Only Transport can reach it.
	URL string
	// Transport reaches URL in memory, and any other address (the core
	// ledger, say) over the network as an http.Transport would.
	Transport *http.Transport
	srv       *http.Server
	// handlers counts the requests under way, which Close waits for;
	// closed, under mu, turns away those read as it closes.
	handlers sync.WaitGroup
	mu       sync.Mutex
	closed   bool
}

// inMemoryHost names the in-memory server in its URL: a host no network
// dial could reach by mistake.
const inMemoryHost = "in-memory.invalid:80"

// ServeInMemory serves h over in-memory connections until Close.
func ServeInMemory(h http.Handler) *InMemory {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	m := &InMemory{URL: "http://" + inMemoryHost}
	m.srv = &http.Server{Handler: m.counted(h)}
	var network net.Dialer
	m.Transport = &http.Transport{
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
		DialContext: func(ctx context.Context, proto, addr string) (net.Conn, error) {
			if addr != inMemoryHost {
				return network.DialContext(ctx, proto, addr)
			}
			return ln.dial(ctx)
		},
	}
	go m.srv.Serve(ln)
	return m
}

// Close closes the server's connections and the transport's idle ones,
// then waits for the handlers under way to return, as httptest.Server's
// Close does: what they use (a lab server's database) is closed next.
func (m *InMemory) Close() {
	m.Transport.CloseIdleConnections()
	m.srv.Close()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.handlers.Wait()
}

// counted runs h for each request, counted in m.handlers. A request read
// from a connection as Close cut it is answered 503 and runs nothing: its
// handler would start after Close stopped waiting.
func (m *InMemory) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			http.Error(w, "the server is closed", http.StatusServiceUnavailable)
			return
		}
		m.handlers.Add(1)
		m.mu.Unlock()
		defer m.handlers.Done()
		h.ServeHTTP(w, r)
	})
}

// pipeListener hands the server end of each in-memory connection a
// client dials to the server's Accept.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// dial makes a connection and waits until the server has accepted it. It
// returns ctx's error if ctx ends first, and net.ErrClosed once the
// listener is closed.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := bufferedPipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// pipeAddr is the in-memory server's address.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return inMemoryHost }
