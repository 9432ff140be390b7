// Package bench measures, in one run, what idempotency costs: the naive
// server (stage 0) and the final solution (stage 9), over HTTP from 1, 8
// and 64 clients at once, and the engine's ceiling: the final solution's
// statements for one new transfer, from one writer, with no HTTP (and the
// naive server's: the two ceilings' quotient is final/naive for servers
// that both reach their engine's limit). Each
// reports requests/s, p50 and p99 latency, commits per request, and the
// time the database's write gate was held per request and its share of
// the wall time (allocations per request come from -benchmem); and, for a server with
// an outbox, how many rows were still unsent when the last answer came,
// the transfers delivered to the core ledger per second and the delivery
// lag's p99. It runs them all in -rounds rounds (3 unless told), then
// prints each one's median round and, last, the ratios:
//
//	bench: final/naive X, final/ceiling Y, final p99/p50 at 64 clients Z, delivered/naive D, lag p99 L ms
//
// after the line that bounds final/naive by the gate's time per request,
// the one that says how many transactions each SQLite commit wrote, and
// the one that gives final/naive for the two servers' statements alone.
//
// Run it with make bench; docs/benchmarks.md has the figures.
package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/sqlitedb"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage9"
)

// clientCounts are the numbers of requests in flight at once that the
// servers are measured at.
var clientCounts = []int{1, 8, 64}

// heavy is the client count whose ratios the last line prints.
const heavy = 64

// result is one sub-benchmark's figures. commits counts the transactions
// committed per request; perGroup is how many of them one SQLite commit
// wrote, on average (group commit, kit/sqlitedb/group.go). gateUS,
// gateShare and gateHolds are the write gate's: the time it was held per
// request, in microseconds, the share of the wall time it was held, and
// the holds per request. left, delivered and lagP99 are
// a relaying server's: the outbox rows still unsent when the last answer
// came, the requests per second counted until the outbox was empty, and
// the p99 of the delivery lag (a transfer's commit to the core's
// acknowledgement), in milliseconds.
type result struct {
	perSecond, p50, p99, commits, allocs float64
	perGroup                             float64
	gateUS, gateShare, gateHolds         float64
	left, delivered, lagP99              float64
}

// roundsFlag is how many times every sub-benchmark runs. The rounds take
// turns (naive, final, …, ceiling, then again), so that a burst of other
// work on the machine lands on one round of each rather than on every
// round of one, and the summary shows each one's median round.
var roundsFlag = flag.Int("rounds", 3, "rounds of every transfer benchmark")

// rounds holds every round's result of each sub-benchmark, by name.
var rounds = map[string][]result{}

// dbDir holds the benchmarks' database files. It is the parent benchmark's
// temporary folder: the names testing gives repeated sub-benchmarks end in
// #01, and a database path must not hold a '#'.
var (
	dbDir string
	dbs   atomic.Int64
)

// benchDB names a new database for one benchmark: a file, or, when
// IDEMLAB_DATABASE_URL names a PostgreSQL cluster (make bench-pg), that
// cluster, on which the benchmark gets a database of its own.
func benchDB() string {
	if target := labdb.TestTarget(); labdb.EngineOfTarget(target) == labdb.PostgreSQL {
		return target
	}
	return filepath.Join(dbDir, fmt.Sprintf("bench-%d.db", dbs.Add(1)))
}

// openBenchDB opens a new database for one benchmark (see benchDB).
func openBenchDB(ctx context.Context) (*labdb.DB, error) {
	return labdb.OpenOwn(ctx, benchDB())
}

func BenchmarkTransfers(b *testing.B) {
	dbDir = b.TempDir()
	for range *roundsFlag {
		for _, n := range clientCounts {
			record(b, fmt.Sprintf("clients=%d/naive", n), func(b *testing.B) result { return benchServer(b, stage0.New, n) })
			record(b, fmt.Sprintf("clients=%d/final", n), func(b *testing.B) result { return benchServer(b, stage9.New, n) })
		}
		record(b, "ceiling", benchCeiling)
		record(b, "naive-ceiling", benchNaiveCeiling)
	}
	if len(rounds) == 2*len(clientCounts)+2 {
		summarize(os.Stdout, rounds, labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL)
	}
}

// record runs one sub-benchmark and keeps the figures of its last call
// (testing.B calls it first with b.N = 1), unless -bench left it out or it
// failed.
func record(b *testing.B, name string, run func(b *testing.B) result) {
	var last result
	ran := false
	b.Run(name, func(b *testing.B) { last, ran = run(b), !b.Failed() })
	if ran {
		rounds[name] = append(rounds[name], last)
	}
}

// median is the result whose req/s is the median of name's rounds.
func median(rounds map[string][]result, name string) result {
	rs := slices.Clone(rounds[name])
	slices.SortFunc(rs, func(a, b result) int {
		switch {
		case a.perSecond < b.perSecond:
			return -1
		case a.perSecond > b.perSecond:
			return 1
		}
		return 0
	})
	return rs[len(rs)/2]
}

// summarize prints to w the medians of rounds and, on the last line, the
// ratios. gated says whether the engine has a write gate (SQLite): on
// PostgreSQL, which lets many writers in at once, there is no gate to
// report and no group commit of ours, and one writer is not the engine's
// limit, so those lines say so instead of printing zeros and their
// quotients.
func summarize(w io.Writer, rounds map[string][]result, gated bool) {
	fmt.Fprintf(w, "bench: the median of %d rounds of each (by req/s)\n", len(rounds["ceiling"]))
	fmt.Fprintf(w, "bench: %-18s %9s %9s %9s %12s %11s %12s %10s %12s %11s %11s\n", "", "req/s", "p50 ms", "p99 ms", "commits/req",
		"allocs/req", "gate µs/req", "gate held", "outbox left", "delivered/s", "lag p99 ms")
	line := func(name string, r result) {
		gate := fmt.Sprintf(" %12s %10s", "-", "-")
		if gated {
			gate = fmt.Sprintf(" %12.0f %9.0f%%", r.gateUS, 100*r.gateShare)
		}
		delivery := ""
		if r.delivered > 0 {
			delivery = fmt.Sprintf(" %12.0f %11.0f %11.0f", r.left, r.delivered, r.lagP99)
		}
		fmt.Fprintf(w, "bench: %-18s %9.0f %9.2f %9.2f %12.2f %11.0f%s%s\n", name, r.perSecond, r.p50, r.p99, r.commits,
			r.allocs, gate, delivery)
	}
	for _, n := range clientCounts {
		line(fmt.Sprintf("naive, %d clients", n), median(rounds, fmt.Sprintf("clients=%d/naive", n)))
		line(fmt.Sprintf("final, %d clients", n), median(rounds, fmt.Sprintf("clients=%d/final", n)))
	}
	ceiling, naiveCeiling := median(rounds, "ceiling"), median(rounds, "naive-ceiling")
	line("ceiling, 1 writer", ceiling)
	line("naive ceiling", naiveCeiling)
	ratios := "bench: final/naive by clients:"
	for _, n := range clientCounts {
		ratios += fmt.Sprintf(" %d: %.2f", n, median(rounds, fmt.Sprintf("clients=%d/final", n)).perSecond/median(rounds, fmt.Sprintf("clients=%d/naive", n)).perSecond)
	}
	fmt.Fprintln(w, ratios)
	naive, final := median(rounds, fmt.Sprintf("clients=%d/naive", heavy)), median(rounds, fmt.Sprintf("clients=%d/final", heavy))
	if gated {
		fmt.Fprintf(w, "bench: write gate at %d clients: naive %.0f µs/req (held %.0f%%), final %.0f µs/req (held %.0f%%, %.1f holds/req): final/naive %.2f, bounded by %.2f\n",
			heavy, naive.gateUS, 100*naive.gateShare, final.gateUS, 100*final.gateShare, final.gateHolds,
			final.perSecond/naive.perSecond, naive.gateUS/final.gateUS)
		fmt.Fprintf(w, "bench: group commit at %d clients: naive %.1f transactions a commit, final %.1f; one writer alone %.1f\n",
			heavy, naive.perGroup, final.perGroup, ceiling.perGroup)
		fmt.Fprintf(w, "bench: the statements alone, on one writer: naive %.0f µs/req, final %.0f µs/req: final/naive %.2f if both servers ran at their engine's limit\n",
			1e6/naiveCeiling.perSecond, 1e6/ceiling.perSecond, ceiling.perSecond/naiveCeiling.perSecond)
	} else {
		fmt.Fprintln(w, "bench: no write gate and no group commit here: PostgreSQL lets many writers in at once")
		fmt.Fprintf(w, "bench: the statements alone, from one client: naive %.0f µs/req, final %.0f µs/req (final/naive %.2f); not the engine's limit, which lets more writers in\n",
			1e6/naiveCeiling.perSecond, 1e6/ceiling.perSecond, ceiling.perSecond/naiveCeiling.perSecond)
	}
	fmt.Fprintf(w, "bench: delivered to the core: final/naive %.2f, final/ceiling %.2f at %d clients\n",
		final.delivered/naive.perSecond, final.delivered/ceiling.perSecond, heavy)
	fmt.Fprintf(w, "bench: final/naive %.2f, final/ceiling %.2f, final p99/p50 at %d clients %.1f, delivered/naive %.2f, lag p99 %.0f ms\n",
		final.perSecond/naive.perSecond, final.perSecond/ceiling.perSecond, heavy, final.p99/final.p50, final.delivered/naive.perSecond, final.lagP99)
}

// benchServer sends transfers with fresh keys from clients goroutines at
// once to a lab server on a database file, over real HTTP on loopback.
// The server opens its connections before it serves, as lab serve's do
// (server.Options.OpenAhead; PostgreSQL's alone): without that, on
// PostgreSQL the 64 clients' first requests and the relay's first pass
// waited for backends started all in the same second, and the first
// postings' delivery lag, a second and more, was that start.
func benchServer(b *testing.B, factory stage.Factory, clients int) result {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Options{DB: benchDB(), OwnDB: true, Stage: factory, Lab: true, OpenAhead: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	customers, _, err := srv.Lab().Reset(ctx, bank.Params{Seed: 1, Customers: heavy, AccountsPerCustomer: 2, OpeningBalance: 1_000_000_000_000})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	transfer := func(i int64) error {
		c := customers[int(i)%len(customers)]
		body := fmt.Sprintf(`{"from":%q,"to":%q,"amount":%d,"metadata":{"op":"op-%d"}}`,
			c.Accounts[0], c.Accounts[1], 1+rand.IntN(1000), i)
		req, _ := http.NewRequest("POST", hs.URL+"/transfers", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", i))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		// Read to the end, or the client closes the connection and dials
		// a new one for the next request.
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	r := measure(b, clients, srv.Commits, srv.GateUse, transfer)
	r.left, r.delivered, r.lagP99 = delivery(b, srv.Lab().Bank, r.perSecond)
	return r
}

// delivery waits, up to a minute, for the outbox of a server that writes
// one (stage 9 on) to be empty once its last answer has gone out. It
// returns the rows that were unsent then, the rate of the b.N requests
// counted until the last of them was delivered, given perSecond, their
// rate until the last answer, and the p99 of every row's delivery lag in
// milliseconds; zeros for a server without an outbox.
func delivery(b *testing.B, bk *bank.Bank, perSecond float64) (left, delivered, lagP99 float64) {
	ctx := context.Background()
	start := time.Now()
	first, err := bk.Outbox(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if first.Pending+first.Sent == 0 {
		return 0, 0, 0
	}
	for c := first; c.Pending > 0; {
		if time.Since(start) > time.Minute {
			b.Fatalf("%d outbox rows still unsent a minute after the last answer", c.Pending)
		}
		time.Sleep(time.Millisecond)
		if c, err = bk.Outbox(ctx); err != nil {
			b.Fatal(err)
		}
	}
	drained := time.Since(start)
	b.ReportMetric(float64(first.Pending), "outbox-left")
	delivered = float64(b.N) / (float64(b.N)/perSecond + drained.Seconds())
	b.ReportMetric(delivered, "delivered/s")
	lags, err := bk.DeliveryLags(ctx)
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(lags)
	lagP99 = float64(lags[int(0.99*float64(len(lags)-1))].Microseconds()) / 1000
	b.ReportMetric(lagP99, "lag-p99-ms")
	return float64(first.Pending), delivered, lagP99
}

// measure warms up (each client's connections opened, the database's pages
// read), then runs op b.N times from clients goroutines at once, numbering
// the calls from 1 on, and reports the figures: commits and gate say what
// the database committed and what its write gate saw.
func measure(b *testing.B, clients int, commits func() int64, gate func() sqlitedb.GateUse, op func(i int64) error) result {
	var next atomic.Int64
	run := func(total int64) *latencies {
		lat := &latencies{d: make([]time.Duration, 0, total)}
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Load() < total {
					i := next.Add(1)
					if i > total {
						return
					}
					t := time.Now()
					if err := op(i); err != nil {
						b.Error(err)
						return
					}
					lat.add(time.Since(t))
				}
			}()
		}
		wg.Wait()
		return lat
	}
	warm := int64(4 * clients)
	run(warm)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c0, g0 := commits(), gate()
	b.ResetTimer()
	start := time.Now()
	lat := run(warm + int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	use := gate().Sub(g0)

	r := result{
		perSecond: float64(b.N) / elapsed.Seconds(),
		p50:       lat.quantile(0.50),
		p99:       lat.quantile(0.99),
		commits:   float64(commits()-c0) / float64(b.N),
		allocs:    float64(after.Mallocs-before.Mallocs) / float64(b.N),
	}
	r.gateUS, r.gateShare, r.gateHolds = gateFigures(use, b.N, elapsed)
	if use.Groups > 0 {
		r.perGroup = float64(commits()-c0) / float64(use.Groups)
	}
	b.ReportMetric(r.perSecond, "req/s")
	b.ReportMetric(r.p50, "p50-ms")
	b.ReportMetric(r.p99, "p99-ms")
	b.ReportMetric(r.commits, "commits/req")
	b.ReportMetric(r.gateUS, "gate-µs/req")
	b.ReportMetric(r.gateShare, "gate-share")
	return r
}

// gateFigures turns what the write gate saw while n requests ran for
// elapsed into the time it was held per request, in microseconds, the
// share of elapsed it was held, and its holds per request. A server whose
// gate is held nearly all the time can serve no more than one request per
// gateUS: that bounds its rate, and the ratio of two servers' rates.
func gateFigures(use sqlitedb.GateUse, n int, elapsed time.Duration) (gateUS, share, holds float64) {
	return float64(use.Held) / float64(time.Microsecond) / float64(n), use.Held.Seconds() / elapsed.Seconds(), float64(use.Holds) / float64(n)
}

// latencies collects request durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// quantile is the q-quantile of the durations, in milliseconds.
func (l *latencies) quantile(q float64) float64 {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return 0
	}
	return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000
}

// The gate's figures are what the gate saw: worked out from its holds and
// held time, and, measured on a database, as many holds per request as
// each request made. Caught: a figure that is a constant, one divided by
// the wrong count, and a measure that does not read the gate on both sides
// of the timed run (no holds counted, or all of them since the database
// was opened, divided by the last run's requests).
func TestMeasure_GateFiguresComeFromTheGate(t *testing.T) {
	us, share, holds := gateFigures(sqlitedb.GateUse{Holds: 30, Held: 3 * time.Millisecond}, 10, 6*time.Millisecond)
	if us != 300 || share != 0.5 || holds != 3 {
		t.Fatalf("3 ms held in 30 holds by 10 requests in 6 ms: %v µs/req, share %v, %v holds/req; want 300, 0.5, 3", us, share, holds)
	}

	ctx := context.Background()
	db, err := labdb.Open(ctx, filepath.Join(t.TempDir(), "gate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE n (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	for _, writes := range []int{1, 3} {
		var r result
		testing.Benchmark(func(b *testing.B) {
			r = measure(b, 2, db.Commits, db.GateUse, func(i int64) error {
				for range writes {
					if _, err := db.ExecContext(ctx, `INSERT INTO n VALUES (?)`, i); err != nil {
						return err
					}
				}
				return nil
			})
		})
		// The checkpointer may have taken the gate once or twice besides.
		if r.gateHolds < float64(writes) || r.gateHolds > float64(writes)+0.1 || r.gateUS <= 0 || r.gateShare <= 0 || r.gateShare > 1 {
			t.Errorf("%d writes a request: %v holds/req, %v µs/req, share %v; want %d holds/req and some time, at most all of it",
				writes, r.gateHolds, r.gateUS, r.gateShare, writes)
		}
	}
	// One client's transactions each commit on their own: one a commit,
	// counted between the two readings of the gate (not every group since
	// the database was opened, which the earlier runs made more of).
	var r result
	testing.Benchmark(func(b *testing.B) {
		r = measure(b, 1, db.Commits, db.GateUse, func(i int64) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (?)`, i); err != nil {
				return err
			}
			return tx.Commit()
		})
	})
	if r.perGroup != 1 {
		t.Errorf("one client's transactions: %v transactions a commit, want 1", r.perGroup)
	}
}

// The summary's last line is the one the targets are read from, on either
// engine; the write gate's lines are SQLite's alone. Caught: gate figures
// printed on PostgreSQL, where there is no gate (zeros, and a bound of
// NaN), the one-writer ceiling called the engine's limit there, and a
// summary that loses the gate's lines on SQLite.
func TestSummarize_TheGateIsSQLitesAlone(t *testing.T) {
	rounds := map[string][]result{
		"ceiling":       {{perSecond: 500}},
		"naive-ceiling": {{perSecond: 700}},
	}
	for _, n := range clientCounts {
		rounds[fmt.Sprintf("clients=%d/naive", n)] = []result{{perSecond: 1000, p50: 2, p99: 4, commits: 1}}
		rounds[fmt.Sprintf("clients=%d/final", n)] = []result{{perSecond: 600, p50: 3, p99: 6, commits: 2, delivered: 600, lagP99: 40}}
	}
	last := fmt.Sprintf("bench: final/naive 0.60, final/ceiling 1.20, final p99/p50 at %d clients 2.0, delivered/naive 0.60, lag p99 40 ms\n", heavy)

	var pg strings.Builder
	summarize(&pg, rounds, false)
	out := pg.String()
	for _, bad := range []string{"NaN", "Inf", "write gate at", "group commit at", "if both servers ran at their engine's limit"} {
		if strings.Contains(out, bad) {
			t.Errorf("PostgreSQL's summary says %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "no write gate") || !strings.HasSuffix(out, last) {
		t.Errorf("PostgreSQL's summary: want a line that there is no gate and the ratios last (%q):\n%s", last, out)
	}

	naive, final := fmt.Sprintf("clients=%d/naive", heavy), fmt.Sprintf("clients=%d/final", heavy)
	for _, name := range []string{naive, final} {
		rounds[name][0].gateUS, rounds[name][0].gateShare, rounds[name][0].perGroup = 100, 0.5, 4
	}
	rounds[final][0].gateUS = 200
	var lite strings.Builder
	summarize(&lite, rounds, true)
	out = lite.String()
	for _, want := range []string{"held 50%", "bounded by 0.50", "group commit at", "if both servers ran at their engine's limit"} {
		if !strings.Contains(out, want) {
			t.Errorf("SQLite's summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, last) {
		t.Errorf("SQLite's summary: want the ratios last (%q):\n%s", last, out)
	}
}
