package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"idemlab/grader/targets"
	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/labclient"
	"idemlab/kit/retry"
)

// lab is a lab serve under test: its servers' URLs, its admin token, the
// core it runs, and its standard error.
type lab struct {
	urls   []string
	admin  *labclient.Client
	core   *core.Client
	pids   map[string]int
	stderr *syncBuffer
}

// serveStage9 runs lab serve --stage 9 --solution with replicas servers
// on a database file, and reads its banner.
func serveStage9(t *testing.T, replicas int) *lab {
	t.Helper()
	db := filepath.Join(t.TempDir(), "lab.db")
	url, banner, stderr := serveWatched(t, "--stage", "9", "--solution", "--replicas", strconv.Itoa(replicas), "--db", db)
	return readBanner(t, url, banner, stderr, replicas)
}

// envRunLab makes this test binary run lab (TestMain) instead of its tests.
const envRunLab = "IDEMLAB_TEST_RUN_LAB"

// startLab runs lab serve --stage 9 --solution on the database file db in
// a process of its own, and reads its banner. It returns the lab and the
// process, which t's end kills if it still runs.
func startLab(t *testing.T, db string) (*lab, *exec.Cmd) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, stderr := &syncBuffer{}, &syncBuffer{}
	cmd := exec.Command(self, "serve", "--addr", "127.0.0.1:0", "--stage", "9", "--solution", "--db", db)
	cmd.Env = append(os.Environ(), envRunLab+"=1")
	cmd.Stdout, cmd.Stderr = out, stderr
	targets.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.After(60 * time.Second)
	for {
		printed, more := out.next()
		if m := bannerURL.FindStringSubmatch(printed); m != nil && strings.Contains(printed, "Ctrl-C stops the server.\n") {
			return readBanner(t, m[1], printed, stderr, 1), cmd
		}
		select {
		case <-exited:
			t.Fatalf("lab serve exited: %s", stderr)
		case <-more:
		case <-deadline:
			t.Fatalf("lab serve printed no whole banner within 60s: %q\n%s", printed, stderr)
		}
	}
}

// readBanner reads the servers, the admin token, the processes and the
// core ledger from the banner of a lab serve with replicas servers, the
// first at url.
func readBanner(t *testing.T, url, banner string, stderr *syncBuffer, replicas int) *lab {
	t.Helper()
	l := &lab{urls: []string{url}, stderr: stderr, pids: map[string]int{}}
	for _, m := range regexp.MustCompile(`replica +(http://\S+)`).FindAllStringSubmatch(banner, -1) {
		l.urls = append(l.urls, m[1])
	}
	for _, m := range regexp.MustCompile(`pid (\d+) +(.+)`).FindAllStringSubmatch(banner, -1) {
		l.pids[m[2]], _ = strconv.Atoi(m[1])
	}
	token := regexp.MustCompile(`admin token +(adm_\S+)`).FindStringSubmatch(banner)
	ledger := regexp.MustCompile(`core ledger +(http://\S+)`).FindStringSubmatch(banner)
	coreToken := regexp.MustCompile(`core token +(\S+)`).FindStringSubmatch(banner)
	if len(l.urls) != replicas || token == nil || ledger == nil || coreToken == nil {
		t.Fatalf("the banner names no %d servers, admin token, core ledger or core token:\n%s", replicas, banner)
	}
	l.admin = labclient.New(url, token[1], nil)
	l.core = core.NewClient(core.TokenURL(ledger[1], coreToken[1]), nil)
	return l
}

// kill ends the process lab serve started as name with SIGKILL, and waits
// until lab serve says it is back.
func (l *lab) kill(t *testing.T, name string) {
	t.Helper()
	pid := l.pids[name]
	if pid == 0 {
		t.Fatalf("the banner lists no pid for %s: %v", name, l.pids)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	back := regexp.MustCompile(`lab serve: ` + name + ` is back on \S+ \(pid (\d+)\)`)
	deadline := time.After(60 * time.Second)
	for {
		printed, more := l.stderr.next()
		if m := back.FindStringSubmatch(printed); m != nil {
			if !strings.Contains(printed, fmt.Sprintf("lab serve: %s (pid %d) exited", name, pid)) {
				t.Errorf("lab serve did not say which process exited:\n%s", printed)
			}
			l.pids[name], _ = strconv.Atoi(m[1])
			return
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("lab serve did not start %s again within 60s:\n%s", name, printed)
		}
	}
}

// transfer makes a transfer of 100 won on url under key, retrying as a
// client does until it has an answer, and returns the transfer's id.
func transfer(t *testing.T, url string, c bank.Customer, key string) string {
	return transferVia(t, http.DefaultClient, url, c, key)
}

// transferVia is transfer through hc's transport.
func transferVia(t *testing.T, hc *http.Client, url string, c bank.Customer, key string) string {
	policy := retry.Policy{Base: 20 * time.Millisecond, Cap: 100 * time.Millisecond, Horizon: time.Minute, Timeout: 10 * time.Second}
	cl := retry.Client{HTTP: &http.Client{Transport: hc.Transport, Timeout: policy.Timeout}, Policy: policy}
	body := `{"from":"` + c.Accounts[0] + `","to":"` + c.Accounts[1] + `","amount":100}`
	res := cl.Do(context.Background(), func(int) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, url+"/transfers", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		return req, nil
	}, nil)
	var tr struct{ ID string }
	if res.Answer.Status != http.StatusCreated || json.Unmarshal(res.Answer.Body, &tr) != nil || tr.ID == "" {
		t.Errorf("transfer %s on %s: %d %s %v", key, url, res.Answer.Status, res.Answer.Body, res.Answer.Err)
	}
	return tr.ID
}

// postedOnce waits until the servers' outbox is empty, then fails t unless
// the core holds exactly one posting for each of ids and no other. It
// returns how many postings the core holds.
func (l *lab) postedOnce(t *testing.T, ids []string) int {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		st, err := l.admin.State(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Outbox.Pending == 0 {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d transfers still to tell the core after 60s", st.Outbox.Pending)
		}
	}
	ps, err := l.core.Postings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	posted := map[string]int{}
	for _, p := range ps {
		posted[p.TransferID]++
	}
	lost := 0
	for _, id := range ids {
		if posted[id] != 1 {
			lost++
			t.Errorf("transfer %s posted %d times", id, posted[id])
		}
	}
	if len(ps) != len(ids) {
		t.Errorf("%d postings for %d transfers", len(ps), len(ids))
	}
	return len(ps)
}

// underLoad makes transfers from 8 clients, each client's on one of urls
// in turn, each retried with its key until answered, and calls kill once
// 100 have been answered. It returns the ids of every transfer made.
func underLoad(t *testing.T, hc *http.Client, urls []string, customers []bank.Customer, kill func()) []string {
	t.Helper()
	const clients, each, killAfter = 8, 40, 100
	var mu sync.Mutex
	var ids []string
	killNow := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n := range each {
				id := transferVia(t, hc, urls[i%len(urls)], customers[i%len(customers)], fmt.Sprintf("k-%d-%d", i, n))
				mu.Lock()
				ids = append(ids, id)
				if len(ids) == killAfter {
					close(killNow)
				}
				mu.Unlock()
			}
		})
	}
	<-killNow
	kill()
	wg.Wait()
	return ids
}

// TestServe_AKilledReplicaIsStartedAgain: a kill -9 of one replica's
// process under lab serve --replicas 2, while 8 clients make transfers on
// both, leaves the other and the core serving; lab serve says which
// replica exited and starts it again on its port, and no transfer's
// posting is lost. A lab serve that ended with the replica (it did: the
// other replica and the core ended with it), or left it dead, fails.
func TestServe_AKilledReplicaIsStartedAgain(t *testing.T) {
	l := serveStage9(t, 2)
	customers, err := l.admin.Reset(t.Context(), bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	ids := underLoad(t, http.DefaultClient, l.urls, customers, func() {
		l.kill(t, "replica 2")
		l.pastTheLeases(t)
	})
	n := l.postedOnce(t, ids)
	t.Logf("kill -9 of replica 2 after 100 of %d transfers: %d postings", len(ids), n)
}

// TestServe_AReplicaStartedAgainAdoptsTheLab: under lab serve --replicas
// 2, a clock move and a config change sent to replica 1 hold on replica 2
// at once, and still once lab serve has started replica 2 again after a
// kill -9: it adopts the config the lab runs with, not a default of its
// own, and writes its outbox rows on the lab's clock.
func TestServe_AReplicaStartedAgainAdoptsTheLab(t *testing.T) {
	l := serveStage9(t, 2)
	r2 := labclient.New(l.urls[1], l.admin.Token, nil)
	if _, err := l.admin.Configure(t.Context(), labclient.Config{CoreLatency: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.admin.Advance(t.Context(), 25*time.Hour); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		cfg, err := r2.Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		now, err := r2.Now(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ahead := time.Until(now); cfg.CoreLatency != 200*time.Millisecond || ahead < 25*time.Hour-time.Minute {
			t.Fatalf("%s, replica 2 runs with core_latency %v, its clock %v ahead; replica 1 was told 200ms and 25h",
				when, cfg.CoreLatency, ahead.Round(time.Second))
		}
	}
	check("at once")
	l.kill(t, "replica 2")
	check("started again")
}

// pastTheLeases moves the lab clock an hour on: the keys of the requests
// a kill cut off are taken over by their retries at once.
func (l *lab) pastTheLeases(t *testing.T) {
	t.Helper()
	if _, err := l.admin.Advance(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
}

// TestServe_KillNineUnderLoadLosesNoPosting: the server's process killed
// with kill -9 while 8 clients make transfers, and started again by lab
// serve: once the clients have their answers (retrying with the same key,
// the lab clock moved past the leases of requests the kill cut off) and
// the outbox is empty, the core holds each transfer once. A core in the
// server's memory, or in lab serve's, lost the postings of the transfers
// the relay had marked sent.
func TestServe_KillNineUnderLoadLosesNoPosting(t *testing.T) {
	l := serveStage9(t, 1)
	customers, err := l.admin.Reset(t.Context(), bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	ids := underLoad(t, http.DefaultClient, l.urls, customers, func() {
		l.kill(t, "the server")
		l.pastTheLeases(t)
	})
	n := l.postedOnce(t, ids)
	t.Logf("kill -9 of the server after 100 of %d transfers: %d postings", len(ids), n)
}

// TestServe_KillNineOfLabServeLosesNoPosting: lab serve itself killed
// with kill -9 while 8 clients make transfers (its server and its core
// ledger die with it), and lab serve started again on the same database
// file: once the clients have their answers, following lab serve to its
// new address, and the outbox is empty, the core holds each transfer
// once. A core ledger that kept its postings in a process's memory, or
// that a new lab serve started empty, lost those the relay had marked
// sent before the kill.
func TestServe_KillNineOfLabServeLosesNoPosting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts lab serve twice in processes of its own")
	}
	db := filepath.Join(t.TempDir(), "lab.db")
	l, cmd := startLab(t, db)
	customers, err := l.admin.Reset(t.Context(), bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	to := &follow{}
	to.set(t, l.urls[0])
	tr := to.transport()
	defer tr.CloseIdleConnections()
	ids := underLoad(t, &http.Client{Transport: tr}, l.urls, customers, func() {
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		l, _ = startLab(t, db)
		to.set(t, l.urls[0])
		l.pastTheLeases(t)
	})
	n := l.postedOnce(t, ids)
	t.Logf("kill -9 of lab serve after 100 of %d transfers: %d postings", len(ids), n)
}

// follow connects each request to the lab serve set last, whatever
// address the request names.
type follow struct {
	mu   sync.Mutex
	host string
}

func (f *follow) set(t *testing.T, url string) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.host = u.Host
}

// transport is an http.Transport whose connections go to the host set
// last.
func (f *follow) transport() *http.Transport {
	var d net.Dialer
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		f.mu.Lock()
		host := f.host
		f.mu.Unlock()
		return d.DialContext(ctx, network, host)
	}}
}

// TestServe_AKilledCoreKeepsItsPostings: the core ledger killed with kill
// -9 comes back, on its port and with the token the servers hold, with
// every posting it had, and takes new ones. A core that kept its postings
// in memory came back empty.
func TestServe_AKilledCoreKeepsItsPostings(t *testing.T) {
	l := serveStage9(t, 1)
	customers, err := l.admin.Reset(t.Context(), bank.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{transfer(t, l.urls[0], customers[0], "k-1"), transfer(t, l.urls[0], customers[1], "k-2")}
	l.postedOnce(t, ids)
	l.kill(t, "the core ledger")
	ids = append(ids, transfer(t, l.urls[0], customers[2], "k-3"))
	l.postedOnce(t, ids)
}
