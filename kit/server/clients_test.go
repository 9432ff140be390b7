package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/kit/accesslog"
	"idemlab/kit/bank"
	"idemlab/kit/server"
	"idemlab/solutions/stage0"
)

// These tests meet a lab server as the world does: through the http.Server
// every lab server listens with (server.NewHTTPServer), on a real port.

// listen serves a new lab server (stage 0, lab mode, opts on top) through
// server.NewHTTPServer until the test ends, and resets it with seed 1.
func listen(t *testing.T, opts server.Options) (*server.Server, string, []bank.Customer) {
	t.Helper()
	opts.DB, opts.Stage, opts.Lab = ":memory:", stage0.New, true
	srv, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := server.NewHTTPServer(srv.Handler())
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	customers, _, err := srv.Lab().Reset(context.Background(), bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return srv, ln.Addr().String(), customers
}

// answer is what one timed request got.
type answer struct {
	status int
	took   time.Duration
	err    error
}

// send makes one request and times it. The client gives up after 10
// seconds, so that a server that never answers fails the test instead of
// hanging it.
func send(method, url, token, body string) answer {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return answer{took: time.Since(start), err: err}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return answer{status: resp.StatusCode, took: time.Since(start)}
}

// startBody sends the headers of a deposit whose body is n bytes, waits
// until the server starts reading the body (Expect: 100-continue makes it
// say so), then sends the body's first part and nothing more.
func startBody(t *testing.T, addr string, c bank.Customer, n int, part string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /deposits HTTP/1.1\r\nHost: lab\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", c.Token, n)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("the server did not start reading the body: %q, %v", line, err)
	}
	conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, part); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestSlowClient_HoldsUpNeitherAResetNorAnotherCustomer: one customer
// sends half a body and stalls. A reset and another customer's requests
// must not wait for them. The body deadline is a minute away, so only a
// server that never holds the lab while a body arrives passes, not one
// that waits for the deadline to cut the slow client off.
func TestSlowClient_HoldsUpNeitherAResetNorAnotherCustomer(t *testing.T) {
	srv, addr, customers := listen(t, server.Options{BodyTimeout: time.Minute})
	slow, other := customers[0], customers[1]
	body := `{"account":"` + slow.Accounts[0] + `","amount":1000}`
	startBody(t, addr, slow, len(body), body[:len(body)/2])

	url := "http://" + addr
	reset := make(chan answer, 1)
	go func() { reset <- send("POST", url+"/lab/reset", srv.AdminToken(), `{"seed":1}`) }()
	get := send("GET", url+"/accounts/"+other.Accounts[0], other.Token, "")
	deposit := send("POST", url+"/deposits", other.Token, `{"account":"`+other.Accounts[0]+`","amount":1000}`)
	for _, c := range []struct {
		what string
		got  answer
		want int
	}{
		{"the reset", <-reset, 200},
		{"another customer's GET /accounts/{id}", get, 200},
		{"another customer's deposit", deposit, 201},
	} {
		t.Logf("%s answered %d in %v", c.what, c.got.status, c.got.took)
		if c.got.err != nil || c.got.status != c.want || c.got.took >= time.Second {
			t.Errorf("%s, while a client was still sending its body: %d, %v after %v; want %d within a second",
				c.what, c.got.status, c.got.err, c.got.took, c.want)
		}
	}
}

// TestSlowClient_ABodyThatNeverEndsIsCutOffAtTheDeadline: a client that
// sends part of its body and stops gets a 408 (a retry may well arrive in
// time) and loses its connection once the body deadline passes; nothing is
// executed.
func TestSlowClient_ABodyThatNeverEndsIsCutOffAtTheDeadline(t *testing.T) {
	srv, addr, customers := listen(t, server.Options{BodyTimeout: 200 * time.Millisecond})
	c := customers[0]
	body := `{"account":"` + c.Accounts[0] + `","amount":1000}`
	conn := startBody(t, addr, c, len(body), body[:len(body)/2])

	// The 10 seconds are the test's patience, not the deadline under test.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer to a body that never ends: %v", err)
	}
	problem, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(problem), "/problems/request-timeout") {
		t.Fatalf("a body that never ends: %d %s, want 408 /problems/request-timeout", resp.StatusCode, problem)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("the connection is still open after the answer (%v)", err)
	}
	st, err := srv.Lab().State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Accounts[0].Balance != bank.DefaultParams().OpeningBalance {
		t.Fatalf("a cut-off deposit moved money: %+v", st.Accounts[0])
	}
}

// TestOversizedHeaders_Get431: headers are bounded (server.MaxHeaderBytes),
// a megabyte path included; net/http answers before any handler runs.
func TestOversizedHeaders_Get431(t *testing.T) {
	_, addr, customers := listen(t, server.Options{})
	url := "http://" + addr
	for _, c := range []struct {
		name   string
		path   string
		header string
		want   int
	}{
		{"a 1 MiB path", "/accounts/" + strings.Repeat("a", 1<<20), "", 431},
		{"a 32 KiB header", "/accounts/" + customers[0].Accounts[0], strings.Repeat("h", 32<<10), 431},
		{"an 8 KiB header", "/accounts/" + customers[0].Accounts[0], strings.Repeat("h", 8<<10), 200},
	} {
		req, _ := http.NewRequest("GET", url+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+customers[0].Token)
		if c.header != "" {
			req.Header.Set("X-Padding", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// deposit is a deposit of 1,000 won into c's first account, as raw bytes
// whose request line and headers take exactly headerBytes bytes: a
// padding field fills them up.
func deposit(t *testing.T, c bank.Customer, headerBytes int) string {
	t.Helper()
	body := `{"account":"` + c.Accounts[0] + `","amount":1000}`
	head := fmt.Sprintf("POST /deposits HTTP/1.1\r\nHost: lab\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nX-Padding: ", c.Token, len(body))
	pad := headerBytes - len(head) - len("\r\n\r\n")
	if pad < 1 {
		t.Fatalf("%d bytes cannot hold a deposit's headers", headerBytes)
	}
	return head + strings.Repeat("p", pad) + "\r\n\r\n" + body
}

// TestHeaderLimit_IsTheDocumentedOne: headers of exactly
// server.MaxHeaderBytes are served, one byte more gets 431 and nothing is
// executed, also when the request comes pipelined behind another one on
// its connection (net/http would count only the bytes it had not read
// ahead with the first). A server that hands net/http MaxHeaderBytes as
// it is lets 4 KiB more through.
func TestHeaderLimit_IsTheDocumentedOne(t *testing.T) {
	srv, addr, customers := listen(t, server.Options{})
	c := customers[0]
	balance := func() int64 {
		st, err := srv.Lab().State(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range st.Accounts {
			if a.ID == c.Accounts[0] {
				return a.Balance
			}
		}
		t.Fatalf("no account %s", c.Accounts[0])
		return 0
	}
	for _, tc := range []struct {
		name     string
		requests []string
		want     []int
		moved    int64
	}{
		{"at the limit", []string{deposit(t, c, server.MaxHeaderBytes)}, []int{201}, 1000},
		{"one byte over", []string{deposit(t, c, server.MaxHeaderBytes+1)}, []int{431}, 0},
		{"4 KiB over", []string{deposit(t, c, server.MaxHeaderBytes+4<<10)}, []int{431}, 0},
		{"over, pipelined behind a small request", []string{deposit(t, c, 200), deposit(t, c, server.MaxHeaderBytes+3<<10)}, []int{201, 431}, 1000},
	} {
		before := balance()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, strings.Join(tc.requests, "")); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := bufio.NewReader(conn)
		for i, want := range tc.want {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("%s: answer %d: %v", tc.name, i+1, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: answer %d is %d, want %d", tc.name, i+1, resp.StatusCode, want)
			}
		}
		conn.Close()
		if moved := balance() - before; moved != tc.moved {
			t.Errorf("%s: %d won moved, want %d", tc.name, moved, tc.moved)
		}
	}
}

// TestAccessLog_ALongPathAddsABoundedLine: a 401 for a path of 12 KiB
// (within the header limit) adds a line that holds the path's first
// accesslog.MaxPath bytes and says the path was cut.
func TestAccessLog_ALongPathAddsABoundedLine(t *testing.T) {
	log := lineWriter(make(chan string, 1))
	_, addr, _ := listen(t, server.Options{AccessLog: log})
	got := send("GET", "http://"+addr+"/accounts/"+strings.Repeat("a", 12<<10), "tok_nobody", "")
	if got.err != nil || got.status != 401 {
		t.Fatalf("got %d %v, want 401", got.status, got.err)
	}
	var line string
	select {
	case line = <-log:
	case <-time.After(10 * time.Second):
		t.Fatal("no access log line within 10s of the answer")
	}
	if len(line) > accesslog.MaxPath+1024 {
		t.Fatalf("one request with a long path added %d bytes to the access log", len(line))
	}
	var rec accesslog.Record
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.Cut, "path") || !strings.HasPrefix(rec.Path, "/accounts/aaa") {
		t.Fatalf("the record does not say its path was cut: %s", line)
	}
}

// lineWriter is an access log that hands each line to the test.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}
