// Package bench measures, in one run, what idempotency costs: the naive
// server (stage 0), the final solution (stage 6), and the raw SQLite
// ceiling for the final solution's statements without HTTP. Each reports
// requests/s, p50 and p99 latency and commits per request; the parent
// benchmark prints the ratios final/naive and final/ceiling.
//
//	make bench
package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/server"
	"idemlab/kit/stage"
	"idemlab/solutions/stage0"
	"idemlab/solutions/stage6"
)

// clients is how many requests are in flight at once, as docs/benchmarks.md
// reports the figures.
const clients = 64

// result is one sub-benchmark's figures.
type result struct {
	perSecond, p50, p99, commits float64
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

func (l *latencies) quantile(q float64) time.Duration {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return 0
	}
	return l.d[int(q*float64(len(l.d)-1))]
}

func report(b *testing.B, lat *latencies, elapsed time.Duration, commits int64) result {
	r := result{
		perSecond: float64(b.N) / elapsed.Seconds(),
		p50:       float64(lat.quantile(0.50).Microseconds()) / 1000,
		p99:       float64(lat.quantile(0.99).Microseconds()) / 1000,
		commits:   float64(commits) / float64(b.N),
	}
	b.ReportMetric(r.perSecond, "req/s")
	b.ReportMetric(r.p50, "p50-ms")
	b.ReportMetric(r.p99, "p99-ms")
	b.ReportMetric(r.commits, "commits/req")
	return r
}

func BenchmarkTransfers(b *testing.B) {
	var naive, final, ceiling result
	b.Run("naive", func(b *testing.B) { naive = benchServer(b, stage0.New) })
	b.Run("final", func(b *testing.B) { final = benchServer(b, stage6.New) })
	b.Run("ceiling", func(b *testing.B) { ceiling = benchCeiling(b) })
	if naive.perSecond > 0 && ceiling.perSecond > 0 {
		fmt.Printf("ratios: final/naive req/s = %.2f, final/ceiling req/s = %.2f; commits/req: naive %.2f, final %.2f, ceiling %.2f\n",
			final.perSecond/naive.perSecond, final.perSecond/ceiling.perSecond,
			naive.commits, final.commits, ceiling.commits)
	}
}

// benchServer sends transfers with fresh keys from 64 clients at once to a
// lab server on a database file, over real HTTP on loopback.
func benchServer(b *testing.B, factory stage.Factory) result {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Options{DB: filepath.Join(b.TempDir(), "bench.db"), Stage: factory, Lab: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	customers, err := srv.Lab().Reset(ctx, bank.Params{Seed: 1, Customers: clients, AccountsPerCustomer: 2, OpeningBalance: 1_000_000_000_000})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	commits := srv.Commits()
	lat, elapsed := hammer(b, func(i int64) error {
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
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	return report(b, lat, elapsed, srv.Commits()-commits)
}

// hammer runs op b.N times from 64 goroutines at once, numbering the calls
// from 1, and returns each call's latency and the time it all took.
func hammer(b *testing.B, op func(i int64) error) (*latencies, time.Duration) {
	var next atomic.Int64
	lat := &latencies{}
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t := time.Now()
			if err := op(next.Add(1)); err != nil {
				b.Error(err)
				return
			}
			lat.add(time.Since(t))
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	return lat, elapsed
}
