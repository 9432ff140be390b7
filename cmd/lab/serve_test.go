package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"idemlab/grader/replay"
	"idemlab/grader/targets"
	"idemlab/kit/bank"
	"idemlab/kit/core"
)

func TestServe_RefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:8080", "--solution"}, "--public"},
		{[]string{"serve", "--addr", "192.0.2.1:8080", "--solution"}, "--public"},
		{[]string{"serve", "--stage", "10", "--solution"}, "0..9"},
		{[]string{"serve", "--stage", "-1"}, "0..9"},
		{[]string{"serve", "--addr", "nonsense"}, "--addr"},
		{[]string{"serve", "--addr", "127.0.0.1:abc", "--solution"}, "the port must be a number from 0 to 65535"},
		{[]string{"serve", "--addr", "127.0.0.1:99999", "--solution"}, "the port must be a number from 0 to 65535"},
		{[]string{"serve", "--addr", "127.0.0.1:65535", "--replicas", "2", "--db", "x.db", "--solution"}, "past 65535"},
		{[]string{"serve", "--public", "--admin-token", "x", "--solution"}, "at least 32"},
		{[]string{"serve", "--public", "--addr", "0.0.0.0:8080", "--admin-token", "adm_demo", "--solution"}, "at least 32"},
		{[]string{"serve", "--public", "--admin-token", strings.Repeat(" ", 32), "--solution"}, "visible ASCII"},
		{[]string{"serve", "--admin-token", " adm_demo", "--solution"}, "visible ASCII"},
		{[]string{"serve", "--public", "--admin-token", strings.Repeat("adm_demo", 4), "--solution"}, "bits of entropy"},
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
// ends, and returns its URL and banner once the whole banner is out (it is
// printed once the server listens, a line at a time, the Ctrl-C line last).
func serveUntilReady(t *testing.T, args ...string) (url, banner string) {
	t.Helper()
	url, banner, _ = serveWatched(t, args...)
	return url, banner
}

// serveWatched is serveUntilReady that also returns lab serve's standard
// error, where it says which process it started again.
func serveWatched(t *testing.T, args ...string) (url, banner string, stderr *syncBuffer) {
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
	deadline := time.After(60 * time.Second)
	for {
		printed, more := out.next()
		if m := bannerURL.FindStringSubmatch(printed); m != nil && strings.Contains(printed, "Ctrl-C stops the server.\n") {
			return m[1], printed, errs
		}
		select {
		case code := <-done:
			t.Fatalf("lab serve exited with %d: %s", code, errs.String())
		case <-more:
		case <-deadline:
			t.Fatalf("lab serve printed no whole banner within 60s: %q\n%s", printed, errs.String())
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
			// The instructor attaches the dashboard with what the banner
			// says; it said so only of several replicas.
			if !strings.Contains(banner, "lab dash --url "+url+" --token "+token[1]+"\n") {
				t.Errorf("the banner does not say how to watch the server:\n%s", banner)
			}
			if status, body := resetSeed1(t, url, token[1]); status != 200 || !strings.Contains(string(body), `"customers"`) {
				t.Fatalf("reset: %d %s", status, body)
			}
		})
	}
}

// resetSeed1 resets the lab server at url to seed 1 with its admin
// token, and returns the answer's status and body.
func resetSeed1(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/lab/reset", strings.NewReader(`{"seed":1}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestCheckAdminToken(t *testing.T) {
	long := strings.Repeat("a", MinPublicAdminToken)
	drawn := "3f9c0a7be15d42c8906fd2a4b7e1c35d"
	for _, c := range []struct {
		token  string
		public bool
		why    string // what the refusal says; "" for a token taken
	}{
		{"adm_demo", false, ""}, // a loopback server is the student's own
		{"", true, ""},          // drawn later, long enough
		{drawn, true, ""},
		{"adm_" + drawn, true, ""},
		{drawn[1:], true, "31 characters"},
		{"x", true, "1 characters"},
		{long, true, "one character repeated"},
		{strings.Repeat("adm_demo", 4), true, "bits of entropy"},
		{"abcdefghijklmnopqrstuvwxyzABCDEF", true, "bits of entropy"},
		{strings.Repeat(" ", MinPublicAdminToken), true, "character 1 is ' ' (U+0020)"},
		{strings.Repeat(" ", MinPublicAdminToken), false, "character 1 is ' ' (U+0020)"},
		{"adm_demo ", false, "character 9"},
		{drawn + "\u00a0", true, "character 33 is '\\u00a0' (U+00A0)"},
	} {
		err := checkAdminToken(c.token, c.public)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%q public=%v: %v, want it taken", c.token, c.public, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%q public=%v: %v, want it refused: %s", c.token, c.public, err, c.why)
		}
	}
	for range 1000 {
		if err := checkAdminToken(targets.AdminToken(), true); err != nil {
			t.Fatalf("a drawn admin token is refused by a public server: %v", err)
		}
	}
}

// TestServe_PublicDrawsCustomerTokensAtRandom: the tokens of seed 1 are
// in docs/api.md for anyone to read. A public server hands out the seed's
// customers and accounts with tokens nobody could have drawn, and its
// banner says what to share.
func TestServe_PublicDrawsCustomerTokensAtRandom(t *testing.T) {
	url, banner := serveUntilReady(t, "--stage", "1", "--solution", "--public")
	token := regexp.MustCompile(`admin token +(adm_\S+)`).FindStringSubmatch(banner)
	if token == nil || !strings.Contains(banner, "Share with the students") {
		t.Fatalf("the banner of a public server says nothing of what to share:\n%s", banner)
	}
	status, body := resetSeed1(t, url, token[1])
	var out struct{ Customers []bank.Customer }
	if err := json.Unmarshal(body, &out); err != nil || status != 200 {
		t.Fatalf("reset: %d %v", status, err)
	}
	seeded := bank.Population(bank.DefaultParams())
	if len(out.Customers) != len(seeded) {
		t.Fatalf("reset made %d customers, want %d", len(out.Customers), len(seeded))
	}
	for i, c := range out.Customers {
		if c.ID != seeded[i].ID || !slices.Equal(c.Accounts, seeded[i].Accounts) {
			t.Errorf("customer %d is %s %v; seed 1 has %s %v", i, c.ID, c.Accounts, seeded[i].ID, seeded[i].Accounts)
		}
		if c.Token == seeded[i].Token || c.OtherToken == seeded[i].OtherToken {
			t.Errorf("customer %s has one of seed 1's tokens, which anyone can read in docs/api.md", c.ID)
		}
	}
	for _, c := range []struct {
		token string
		want  int
	}{{out.Customers[0].Token, 200}, {out.Customers[0].OtherToken, 200}, {seeded[0].Token, 401}, {seeded[0].OtherToken, 401}} {
		req, _ := http.NewRequest("GET", url+"/accounts/"+seeded[0].Accounts[0], nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET /accounts/{id} with %s: %d, want %d", c.token, resp.StatusCode, c.want)
		}
	}
	// The server listens behind the kit's limits (server.NewHTTPServer).
	req, _ := http.NewRequest("GET", url+"/healthz", nil)
	req.Header.Set("X-Padding", strings.Repeat("h", 32<<10))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 431 {
		t.Errorf("32 KiB of headers: %v %v, want 431", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestBanner_AServerOnEveryAddressIsTypedAsLoopback: a server asked to
// listen on 0.0.0.0 reports [::]; the banner's own URLs and commands are
// typed on this machine, and name the loopback address, while the
// classroom part lists the addresses students use. A banner that printed
// http://[::]:8080 for the instructor's shell fails.
func TestBanner_AServerOnEveryAddressIsTypedAsLoopback(t *testing.T) {
	var b strings.Builder
	printBanner(&b, serveFlags{stage: 9, db: ":memory:", admin: "adm_x", core: "http://core_x@127.0.0.1:8079", public: true},
		"stage 9", "http://[::]:8080", []string{"http://[::]:8081"})
	own, classroom, ok := strings.Cut(b.String(), "public: a classroom server")
	if !ok {
		t.Fatalf("a public server's banner without its classroom part:\n%s", b.String())
	}
	for _, want := range []string{"url          http://127.0.0.1:8080", "replica      http://127.0.0.1:8081", "export LAB=http://127.0.0.1:8080 ", "--url http://127.0.0.1:8080,http://127.0.0.1:8081 "} {
		if !strings.Contains(own, want) {
			t.Errorf("the banner does not say %q:\n%s", want, own)
		}
	}
	if strings.Contains(own, "[::]") {
		t.Errorf("the banner names the unspecified address for this machine's commands:\n%s", own)
	}
	if !strings.Contains(classroom, "url          http://") || strings.Contains(classroom, "127.0.0.1") {
		t.Errorf("the classroom part names no URL, or the loopback one:\n%s", classroom)
	}
}

// TestServe_ReplicasShareOneDatabase catches replicas that do not share
// the database (each on a file of its own, or one of them never started):
// a transfer answered by the first replica and retried on the second must
// be a duplicate there.
func TestServe_ReplicasShareOneDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "lab.db")
	url, banner := serveUntilReady(t, "--stage", "1", "--solution", "--replicas", "2", "--db", db)
	replica := regexp.MustCompile(`replica +(http://\S+)`).FindStringSubmatch(banner)
	token := regexp.MustCompile(`admin token +(adm_\S+)`).FindStringSubmatch(banner)
	if replica == nil || token == nil || replica[1] == url {
		t.Fatalf("the banner names no second replica:\n%s", banner)
	}
	if !strings.Contains(banner, "lab dash --url "+url+","+replica[1]+" --token "+token[1]) {
		t.Errorf("the banner does not say how to watch both replicas:\n%s", banner)
	}
	do := func(base, path, bearer, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, reset := do(url, "/lab/reset", token[1], "", `{"seed":1}`)
	var r struct {
		Customers []struct {
			Token    string
			Accounts []string
		}
	}
	if err := json.Unmarshal([]byte(reset), &r); err != nil || len(r.Customers) == 0 {
		t.Fatalf("reset: %v %s", err, reset)
	}
	c := r.Customers[0]
	body := `{"from":"` + c.Accounts[0] + `","to":"` + c.Accounts[1] + `","amount":100}`
	if code, got := do(url, "/transfers", c.Token, "k-1", body); code != http.StatusCreated {
		t.Fatalf("the first replica answered %d %s", code, got)
	}
	if code, got := do(replica[1], "/transfers", c.Token, "k-1", body); code != http.StatusConflict {
		t.Fatalf("the second replica answered the retry %d %s, want 409: it does not see the first one's claim", code, got)
	}
}

// TestServe_ReplicasTellOneCoreLedger: stage 9's replicas post to the one
// core ledger lab serve runs and prints; a transfer made on each replica
// is posted there once. Replicas that each ran a core of their own, or a
// banner without the core, fail.
func TestServe_ReplicasTellOneCoreLedger(t *testing.T) {
	db := filepath.Join(t.TempDir(), "lab.db")
	url, banner := serveUntilReady(t, "--stage", "9", "--solution", "--replicas", "2", "--db", db)
	replica := regexp.MustCompile(`replica +(http://\S+)`).FindStringSubmatch(banner)
	token := regexp.MustCompile(`admin token +(adm_\S+)`).FindStringSubmatch(banner)
	ledger := regexp.MustCompile(`core ledger +(http://\S+)`).FindStringSubmatch(banner)
	coreToken := regexp.MustCompile(`core token +(\S+)`).FindStringSubmatch(banner)
	if replica == nil || token == nil || ledger == nil || coreToken == nil {
		t.Fatalf("the banner names no second replica, token, core ledger or core token:\n%s", banner)
	}
	req, _ := http.NewRequest("POST", url+"/lab/reset", strings.NewReader(`{"seed":1}`))
	req.Header.Set("Authorization", "Bearer "+token[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reset struct {
		Customers []struct {
			Token    string
			Accounts []string
		}
	}
	json.NewDecoder(resp.Body).Decode(&reset)
	resp.Body.Close()
	if len(reset.Customers) == 0 {
		t.Fatalf("reset: %s", resp.Status)
	}
	c := reset.Customers[0]
	var ids []string
	for i, base := range []string{url, replica[1]} {
		body := `{"from":"` + c.Accounts[0] + `","to":"` + c.Accounts[1] + `","amount":100}`
		req, _ := http.NewRequest("POST", base+"/transfers", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("replica %d answered %d", i+1, resp.StatusCode)
		}
		ids = append(ids, tr.ID)
	}
	cl := core.NewClient(core.TokenURL(ledger[1], coreToken[1]), nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := cl.Postings(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, p := range ps {
			got[p.TransferID]++
		}
		if got[ids[0]] == 1 && got[ids[1]] == 1 && len(ps) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the core ledger has %v; want %v, each once", got, ids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStageBinary_StoppedBuildIsNoCompileError: lab serve compiles the
// student's stage first, and a person who presses Ctrl-C meanwhile (or a
// deadline that ends it) must not be told that their stage does not
// compile; the compiler never said so.
func TestStageBinary_StoppedBuildIsNoCompileError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out strings.Builder
	_, err := stageBinary(ctx, filepath.Join("..", ".."), 9, &out)
	if err == nil {
		t.Fatal("a stopped build returned a binary")
	}
	if strings.Contains(err.Error(), "does not compile") || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("got %q; want the build said stopped, not a compile error", err)
	}
	if out.Len() > 0 {
		t.Errorf("printed %q, as if it were the compiler's errors", out.String())
	}
}

// TestCompilingIsSaid: lab serve, lab grade and lab replay on the
// student's stage compile it first, which on a cold cache took half a
// minute to more than a minute on a two-core machine, and said nothing
// meanwhile: the command looked hung. Each says that it compiles, and
// what, before it does (here a build stopped at once: nothing is built).
func TestCompilingIsSaid(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	root := filepath.Join("..", "..")
	for name, run := range map[string]func(io.Writer) error{
		"lab serve": func(w io.Writer) error {
			return serveProcesses(ctx, root, serveFlags{stage: 2, db: ":memory:", admin: "adm_x", replicas: 1}, io.Discard, w)
		},
		"lab grade": func(w io.Writer) error {
			_, _, err := gradeTarget(ctx, gradeFlags{serverFlags: serverFlags{stage: 2}}, ":memory:", w)
			return err
		},
		"lab replay": func(w io.Writer) error {
			_, err := replayMine(ctx, 2, nil, replay.Options{}, w)
			return err
		},
	} {
		var stderr strings.Builder
		if err := run(&stderr); err == nil {
			t.Errorf("%s: a stopped build started something", name)
		}
		if want := "lab: compiling stages/stage2 (go test -c) first"; !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("%s printed %q first; want %q", name, stderr.String(), want)
		}
	}
}

// A server alone is told apart from several: "the others keep serving"
// under one pid would send an instructor looking for processes that do
// not exist.
func TestPrintProcesses_OneServerHasNoOthers(t *testing.T) {
	pid := func() int { return 4711 }
	var one strings.Builder
	printProcesses(&one, []process{{name: "the server", pid: pid}})
	if got := one.String(); strings.Contains(got, "others") || !strings.Contains(got, "kill -9 it: lab serve starts it again") {
		t.Errorf("one process:\n%s", got)
	}
	var two strings.Builder
	printProcesses(&two, []process{{name: "replica 1", pid: pid}, {name: "replica 2", pid: pid}})
	if got := two.String(); !strings.Contains(got, "the others keep serving") {
		t.Errorf("two processes:\n%s", got)
	}
}

// TestBanner_APublicServerOnLoopbackSaysNoStudentReachesIt: --public
// without --addr listens on 127.0.0.1, and the banner told the instructor
// to share http://127.0.0.1:8080 with the class, which reaches each
// student's own machine. It says so, and how to listen on every address;
// a server on every address does not.
func TestBanner_APublicServerOnLoopbackSaysNoStudentReachesIt(t *testing.T) {
	for url, warned := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://[::1]:8080": true, "http://localhost:8080": true,
		"http://[::]:8080": false, "http://192.0.2.1:8080": false,
	} {
		var b strings.Builder
		printBanner(&b, serveFlags{stage: 1, db: ":memory:", admin: "adm_x", public: true}, "stage 1", url, nil)
		if got := strings.Contains(b.String(), "listens on loopback only") && strings.Contains(b.String(), "--addr 0.0.0.0:PORT"); got != warned {
			t.Errorf("%s: warned %v, want %v:\n%s", url, got, warned, b.String())
		}
	}
}
