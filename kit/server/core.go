package server

import (
	"context"
	"fmt"
	"net"

	"idemlab/kit/core"
	"idemlab/kit/labdb"
)

// ServeCore runs a core ledger on ln with cfg, with its postings in the
// database target names (a SQLite file, ":memory:" or a postgres:// URL;
// labdb.Open), until stop is called; stop closes ln, waits for the
// postings under way, then closes the database. It returns an error if
// the database cannot be opened or the core cannot start on it.
func ServeCore(ctx context.Context, ln net.Listener, target string, cfg core.Config) (c *core.Core, stop func(), err error) {
	db, err := labdb.Open(ctx, target)
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("start the core ledger: %w", err)
	}
	if c, err = core.New(ctx, db.DB, cfg); err != nil {
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

// StartCore runs a core ledger as ServeCore does, in memory, on a free
// loopback port, with a token of its own and no books (it checks a
// posting's form only), and returns its address with the token in it
// (core.TokenURL): the grader's, which outlives the crashes of the server
// it watches.
func StartCore(ctx context.Context) (c *core.Core, url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the core ledger: %w", err)
	}
	token := core.NewToken()
	url = core.TokenURL("http://"+ln.Addr().String(), token)
	c, stop, err = ServeCore(ctx, ln, ":memory:", core.Config{Token: token})
	return c, url, stop, err
}
