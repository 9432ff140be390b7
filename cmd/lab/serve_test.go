package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServe_RefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:8080", "--solution"}, "--public"},
		{[]string{"serve", "--addr", "192.0.2.1:8080", "--solution"}, "--public"},
		{[]string{"serve", "--stage", "7", "--solution"}, "0..6"},
		{[]string{"serve", "--stage", "-1"}, "0..6"},
		{[]string{"serve", "--addr", "nonsense"}, "--addr"},
	} {
		code, _, errs := runLabCommand(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.why) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.why)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true, "127.0.0.2:1": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:8080": false,
	} {
		if err := checkLoopback(addr, false); (err == nil) != ok {
			t.Errorf("%s: err %v, want allowed %v", addr, err, ok)
		}
		if err := checkLoopback(addr, true); err != nil {
			t.Errorf("%s with --public: %v", addr, err)
		}
	}
}

var bannerURL = regexp.MustCompile(`url +(http://\S+)`)

// serveUntilReady runs lab serve with args on a free port until the test
// ends, and returns its URL and banner once it answers.
func serveUntilReady(t *testing.T, args ...string) (url, banner string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errs := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", ":memory:"}, args...), out, errs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("lab serve did not stop within 10s of its context ending")
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := bannerURL.FindStringSubmatch(out.String()); m != nil {
			return m[1], out.String()
		}
		select {
		case code := <-done:
			t.Fatalf("lab serve exited with %d: %s", code, errs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab serve printed no URL within 60s: %s", errs.String())
		}
	}
}

// TestServe_PrintsAWorkingResetCommand: the banner's admin token and
// reset command work against the server it started.
func TestServe_PrintsAWorkingResetCommand(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"reference solution in process", []string{"--stage", "1", "--solution"}},
		{"student stage as a child process", []string{"--stage", "0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && !strings.Contains(c.name, "solution") {
				t.Skip("compiles stages/stage0")
			}
			url, banner := serveUntilReady(t, c.args...)
			token := regexp.MustCompile(`admin token +(adm_\S+)`).FindStringSubmatch(banner)
			if token == nil || !strings.Contains(banner, "curl -s -X POST "+url+"/lab/reset -H 'Authorization: Bearer "+token[1]+"'") {
				t.Fatalf("the banner has no admin token or reset command:\n%s", banner)
			}
			req, _ := http.NewRequest("POST", url+"/lab/reset", strings.NewReader(`{"seed":1}`))
			req.Header.Set("Authorization", "Bearer "+token[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"customers"`) {
				t.Fatalf("reset: %d %s", resp.StatusCode, body)
			}
		})
	}
}
