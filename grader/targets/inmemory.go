package targets

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// A day replayed against a server in this process (replay.InProcess: lab
// replay --solution, the scoreboard, stage 0's tally check, make
// bench-day) sends some 140,000 requests. Over loopback TCP each one is
// written and read through the kernel's sockets and wakes a goroutine
// through the network poller: a share of the day's time that measures
// the machine's kernel, not the server or the replay (docs/benchmarks.md
// has the figures). So such a day
// reaches its server over in-memory connections (net.Pipe): the same
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
	ln        *pipeListener
}

// inMemoryHost names the in-memory server in its URL: a host no network
// dial could reach by mistake.
const inMemoryHost = "in-memory.invalid:80"

// ServeInMemory serves h over in-memory connections until Close.
func ServeInMemory(h http.Handler) *InMemory {
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	m := &InMemory{URL: "http://" + inMemoryHost, srv: &http.Server{Handler: h}, ln: ln}
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

// Close closes the server's connections and the transport's idle ones.
func (m *InMemory) Close() {
	m.Transport.CloseIdleConnections()
	m.srv.Close()
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
	client, server := net.Pipe()
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
