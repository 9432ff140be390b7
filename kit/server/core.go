package server

import (
	"context"
	"fmt"
	"net"

	"idemlab/kit/core"
	"idemlab/kit/labdb"
)

// ServeCore runs a core ledger on ln, with its postings in a database of
// its own in memory, until stop is called; stop closes ln, waits for the
// postings under way, then closes the database. It returns an error if
// the database cannot be made.
func ServeCore(ctx context.Context, ln net.Listener) (c *core.Core, stop func(), err error) {
	db, err := labdb.Open(ctx, ":memory:")
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("start the core ledger: %w", err)
	}
	if c, err = core.New(ctx, db.DB); err != nil {
		ln.Close()
		db.Close()
		return nil, nil, err
	}
	serving := ServeUntilStopped(ln, c.Handler())
	return c, func() {
		serving()
		db.Close()
	}, nil
}

// StartCore runs a core ledger as ServeCore does, on a free loopback port,
// and returns its base URL: the grader's, which outlives the crashes of the
// server it watches, and lab serve's, which every process it starts shares.
func StartCore(ctx context.Context) (c *core.Core, url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the core ledger: %w", err)
	}
	url = "http://" + ln.Addr().String()
	c, stop, err = ServeCore(ctx, ln)
	return c, url, stop, err
}
