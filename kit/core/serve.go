package core

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"idemlab/kit/labdb"
	"idemlab/kit/problem"
)

// Serve runs a core on ln, with its postings in a database of its own in
// memory, until stop is called; stop closes ln and the database. It
// returns an error if the database cannot be made.
func Serve(ctx context.Context, ln net.Listener) (c *Core, stop func(), err error) {
	db, err := labdb.Open(ctx, ":memory:")
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("start the core ledger: %w", err)
	}
	if c, err = New(ctx, db.DB); err != nil {
		ln.Close()
		db.Close()
		return nil, nil, err
	}
	// Handlers hold running for reading; stop takes it for writing, so
	// the database closes only after every posting under way has ended.
	var running sync.RWMutex
	stopped := false
	h := c.Handler()
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			running.RLock()
			defer running.RUnlock()
			if stopped {
				problem.Write(w, problem.New(Down, "the core ledger is stopping"))
				return
			}
			h.ServeHTTP(w, r)
		})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln)
	}()
	return c, func() {
		hs.Close()
		<-served
		running.Lock()
		stopped = true
		running.Unlock()
		db.Close()
	}, nil
}

// Start runs a core as Serve does, on a free loopback port, and returns
// its base URL.
func Start(ctx context.Context) (c *Core, url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the core ledger: %w", err)
	}
	url = "http://" + ln.Addr().String()
	c, stop, err = Serve(ctx, ln)
	return c, url, stop, err
}
