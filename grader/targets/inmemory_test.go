package targets_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"idemlab/grader/targets"
)

// TestServeInMemory_OneTransportForBothServers: the in-memory server's
// transport reaches it in memory and anything else over the network, as
// a day's replay needs (its server in memory, the core ledger on a
// port). It catches a transport that dials every address in memory (the
// core's postings would go to the lab server) or none (the in-memory
// URL would not resolve), and a server that does not see the request's
// body whole.
func TestServeInMemory_OneTransportForBothServers(t *testing.T) {
	echo := func(who string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			io.WriteString(w, who+" heard "+string(body))
		})
	}
	mem := targets.ServeInMemory(echo("memory"))
	defer mem.Close()
	network := httptest.NewServer(echo("network"))
	defer network.Close()

	client := &http.Client{Transport: mem.Transport}
	body := strings.Repeat("x", 64<<10) // more than one write of the pipe
	for range 3 {                       // the second and third on kept connections
		for _, c := range []struct{ url, want string }{
			{mem.URL + "/a", "memory heard " + body},
			{network.URL + "/b", "network heard " + body},
		} {
			resp, err := client.Post(c.url, "text/plain", strings.NewReader(body))
			if err != nil {
				t.Fatalf("POST %s: %v", c.url, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != c.want {
				t.Fatalf("POST %s: got %d bytes (%.20q…), %v; want %d bytes (%.20q…)", c.url, len(got), got, err, len(c.want), c.want)
			}
		}
	}
}

// TestServeInMemory_ClosedRefusesConnections: once closed, a new
// connection fails at once instead of waiting for an Accept that will
// never come.
func TestServeInMemory_ClosedRefusesConnections(t *testing.T) {
	mem := targets.ServeInMemory(http.NotFoundHandler())
	mem.Close()
	_, err := (&http.Client{Transport: mem.Transport, Timeout: 10 * time.Second}).Get(mem.URL)
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("GET after Close: %v, want %v", err, net.ErrClosed)
	}
}

// TestServeInMemory_CloseWaitsForHandlers: Close returns once the
// handlers under way have returned, as httptest.Server's Close does: a
// day replayed in this process closes its server's database right after
// (replay.InProcess). It catches a Close that cuts the connections and
// returns with a handler still running (one whose client gave up when
// the day was cancelled, say), on a database about to be closed.
func TestServeInMemory_CloseWaitsForHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		mem := targets.ServeInMemory(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			close(started)
			<-release
		}))
		// The request ends, with an error, when Close cuts its connection.
		go (&http.Client{Transport: mem.Transport}).Get(mem.URL)
		<-started
		var closed atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			mem.Close()
			closed.Store(true)
		}()
		synctest.Wait() // every other goroutine is blocked: Close has returned, or it waits
		if closed.Load() {
			t.Error("Close returned with a handler still running")
		}
		close(release)
		<-done
	})
}
