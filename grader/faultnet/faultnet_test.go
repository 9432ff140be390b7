package faultnet

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/grader/dayplan"
)

// TestTransport_SevenPoints sends one request through each failure
// point to a server that records what it received, and checks what the
// server saw and what the client was told.
func TestTransport_SevenPoints(t *testing.T) {
	const body = `{"from":"acc_a","to":"acc_b","amount":300000}`
	var mu sync.Mutex
	var received []string              // the bodies the server read, or "error: …"
	recorded := make(chan struct{}, 1) // a receipt after each append to received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		defer func() {
			select {
			case recorded <- struct{}{}:
			default: // a receipt is already waiting
			}
		}()
		if err != nil {
			received = append(received, "error: "+err.Error())
			http.Error(w, "truncated", http.StatusBadRequest)
			return
		}
		received = append(received, string(b))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"tr_1"}`)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &Transport{Base: srv.Client().Transport}}

	cases := []struct {
		point dayplan.Point
		// server: what the server read ("" for nothing, "error" for a
		// failed read, "body" for the whole body)
		server  string
		status  int // 0 when the client gets an error
		timeout bool
	}{
		{"", "body", 201, false},
		{dayplan.ConnectFails, "", 0, false},
		{dayplan.NeverArrives, "", 0, false},
		{dayplan.TruncatedBody, "error", 0, false},
		{dayplan.Shed503, "", 503, false},
		{dayplan.Server5xx, "", 500, false},
		{dayplan.ResetAfterProcessing, "body", 0, false},
		{dayplan.ResponseWithheld, "body", 0, true},
	}
	for _, c := range cases {
		name := string(c.point)
		if name == "" {
			name = "no fault"
		}
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			received = nil
			mu.Unlock()
			req, _ := http.NewRequestWithContext(WithFault(t.Context(), c.point), "POST", srv.URL+"/transfers", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if c.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %d, want an error", resp.StatusCode)
				}
				var fe *Error
				if !errors.As(err, &fe) || fe.Point != c.point {
					t.Fatalf("error %v is not the fault %s", err, c.point)
				}
				var ne net.Error
				if !errors.As(err, &ne) || ne.Timeout() != c.timeout {
					t.Errorf("error %v: want a net.Error with Timeout() = %v", err, c.timeout)
				}
			} else {
				if err != nil {
					t.Fatalf("error %v, want %d", err, c.status)
				}
				resp.Body.Close()
				if resp.StatusCode != c.status {
					t.Fatalf("got %d, want %d", resp.StatusCode, c.status)
				}
				if c.status == 503 && resp.Header.Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
			}
			srv.Client().CloseIdleConnections()
			mu.Lock()
			got := append([]string(nil), received...)
			mu.Unlock()
			switch c.server {
			case "":
				if len(got) != 0 {
					t.Errorf("the server received %q; the request should never have reached it", got)
				}
			case "body":
				if len(got) != 1 || got[0] != body {
					t.Errorf("the server received %q, want the whole body once", got)
				}
			case "error":
				// The truncated upload may still be on its way when the
				// client gives up; wait for the server's handler.
				for len(got) == 0 {
					select {
					case <-recorded:
					case <-time.After(10 * time.Second):
						t.Fatal("the server's handler recorded nothing within 10s of the cut upload")
					}
					mu.Lock()
					got = append([]string(nil), received...)
					mu.Unlock()
				}
				if len(got) != 1 || !strings.HasPrefix(got[0], "error: ") {
					t.Errorf("the server received %q, want a read error for the cut body", got)
				}
			}
		})
	}
}
