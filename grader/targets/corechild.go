package targets

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/core"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
)

// The environment that asks a binary to serve a core ledger instead of
// doing its usual work (see ServeCoreChild). CoreChild sets it.
const (
	// EnvCoreServe, when set, says the binary serves a core ledger on the
	// listening socket it inherits as file descriptor 3.
	EnvCoreServe = "IDEMLAB_CORE_SERVE"
	// EnvCoreDB is the database the core keeps its postings in.
	EnvCoreDB = "IDEMLAB_CORE_DB"
	// EnvCoreBooks is the lab's database, which the core reads (and never
	// writes) to post only the transfers the bank executed; empty for
	// none.
	EnvCoreBooks = "IDEMLAB_CORE_BOOKS"
	// EnvCoreToken is the core's service token.
	EnvCoreToken = "IDEMLAB_CORE_TOKEN"
)

// IsCoreChild reports whether this process was started by a CoreChild, to
// serve a core ledger.
func IsCoreChild() bool { return os.Getenv(EnvCoreServe) != "" }

// ServeCoreChild serves, in this process, the core ledger a CoreChild
// asked for through the environment, until the process is interrupted. It
// returns the process's exit status: 0 after a clean shutdown, 1 if the
// core could not start (the reason goes to stderr).
func ServeCoreChild() int {
	if err := serveCoreChild(); err != nil {
		fmt.Fprintln(os.Stderr, "lab: core ledger:", err)
		return 1
	}
	return 0
}

func serveCoreChild() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return fmt.Errorf("take the listening socket: %w", err)
	}
	cfg := core.Config{Token: os.Getenv(EnvCoreToken)}
	if target := os.Getenv(EnvCoreBooks); target != "" {
		books, err := labdb.Open(ctx, target)
		if err != nil {
			ln.Close()
			return fmt.Errorf("open the bank's books: %w", err)
		}
		defer books.Close()
		cfg.Books = bank.NewBooks(books.DB)
	}
	_, stopCore, err := server.ServeCore(ctx, ln, os.Getenv(EnvCoreDB), cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stopCore()
	return nil
}

// CoreChild is a core ledger running as a process of its own, so that it
// outlives the lab servers that post to it: a kill -9 of a server leaves
// the core, and the postings in its database, alone. lab serve runs one.
type CoreChild struct {
	// Binary is a binary whose main serves with ServeCoreChild when
	// IsCoreChild (the lab command).
	Binary string
	// DB is the database of the core's postings, across restarts: one of
	// its own, never the lab's (labdb.Sibling makes one beside it).
	DB string
	// Books is the lab's database, read to check postings; "" for none.
	Books string
	// Stderr receives the child's standard error; nil discards it.
	Stderr io.Writer
	// URL is the core's address once started, with its token in it
	// (core.TokenURL): what the servers are given.
	URL   string
	token string
	running
}

// Start (re)starts the core, on the port it had if it ran before, and
// waits until it answers. It returns an error if it cannot listen or the
// core exits or does not answer within 15 seconds.
func (c *CoreChild) Start(ctx context.Context) error {
	addr := "127.0.0.1:0"
	if c.URL != "" {
		addr = strings.TrimPrefix(core.NewClient(c.URL, nil).URL(), "http://")
	} else {
		c.token = core.NewToken()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for the core ledger: %w", err)
	}
	defer ln.Close()
	file, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("hand the listening socket to the core ledger: %w", err)
	}
	defer file.Close()
	cmd := exec.Command(c.Binary)
	DieWithParent(cmd)
	cmd.ExtraFiles = []*os.File{file}
	cmd.Env = append(os.Environ(), EnvCoreServe+"=1", EnvCoreDB+"="+c.DB, EnvCoreBooks+"="+c.Books, EnvCoreToken+"="+c.token)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if c.Stderr != nil {
		cmd.Stderr = io.MultiWriter(c.Stderr, stderr)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the core ledger: %w", err)
	}
	file.Close()
	ln.Close()
	c.cmd, c.exited = cmd, make(chan error, 1)
	c.URL = core.TokenURL("http://"+ln.Addr().String(), c.token)
	go func() { c.exited <- cmd.Wait() }()
	return c.awaitAnswer(ctx, stderr)
}

// awaitAnswer waits until the core answers its health check with the token.
func (c *CoreChild) awaitAnswer(ctx context.Context, stderr *lockedBuffer) error {
	probe := &http.Client{Timeout: time.Second}
	defer probe.CloseIdleConnections()
	base := core.NewClient(c.URL, nil).URL()
	return c.awaitReady(ctx, "the core ledger", base, stderr, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := probe.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
