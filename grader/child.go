package grader

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"idemlab/kit/server"
)

// The environment a stage's test binary reads when it is asked to serve
// instead of test (see Main).
const (
	EnvServe = "IDEMLAB_SERVE" // listen address, e.g. 127.0.0.1:8080
	EnvDB    = "IDEMLAB_DB"    // database file
	EnvAdmin = "IDEMLAB_ADMIN" // admin token
	// EnvAccessLog, when set, is the file the server appends its access
	// log to (one accesslog.Record per line).
	EnvAccessLog = "IDEMLAB_ACCESS_LOG"
	// EnvSubject names the subject to serve (Subject.Name) when the
	// binary holds several; empty means the first.
	EnvSubject = "IDEMLAB_SUBJECT"
	// EnvRandomTokens, when set, has the server's resets draw customer
	// tokens at random (server.Options.RandomTokens): lab serve --public.
	EnvRandomTokens = "IDEMLAB_RANDOM_TOKENS"
)

// Main is every stage's TestMain. Run normally, it runs the tests. With
// IDEMLAB_SERVE set, the test binary serves the subject in lab mode
// instead: that is how lab serve runs a student's stage without compiling
// every other stage into the lab command (a half-finished stage breaks
// only itself), and how the grader starts a server it can kill -9.
//
// A binary that tests several subjects (the ladder test) passes them
// all; IDEMLAB_SUBJECT then says which one to serve, and the crash checks
// can start any of them as a child process (see T.OnChild).
func Main(m *testing.M, subjects ...Subject) {
	addr := os.Getenv(EnvServe)
	if addr == "" {
		for _, s := range subjects {
			servable.Store(s.Name, true)
		}
		os.Exit(m.Run())
	}
	if len(subjects) == 0 {
		fmt.Fprintln(os.Stderr, "lab: this binary has no subject to serve")
		os.Exit(1)
	}
	subject := subjects[0]
	if name := os.Getenv(EnvSubject); name != "" {
		found := false
		for _, s := range subjects {
			if s.Name == name {
				subject, found = s, true
			}
		}
		if !found {
			fmt.Fprintf(os.Stderr, "lab: this binary cannot serve %q\n", name)
			os.Exit(1)
		}
	}
	opts := server.Options{DB: os.Getenv(EnvDB), AdminToken: os.Getenv(EnvAdmin), RandomTokens: os.Getenv(EnvRandomTokens) != ""}
	if path := os.Getenv(EnvAccessLog); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
			os.Exit(1)
		}
		opts.AccessLog = f // closed when the process ends; every record is written through
	}
	listening := func(url string) { fmt.Printf("listening on %s\n", url) }
	if err := Serve(context.Background(), subject, addr, opts, listening); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Serve runs subject as a lab server on addr until ctx ends or the
// process is interrupted, with the database, admin token and access log of
// opts (lab mode is always on), behind the limits of server.NewHTTPServer.
// It calls ready with the server's URL once the server accepts requests,
// and returns the error that stopped it.
func Serve(ctx context.Context, subject Subject, addr string, opts server.Options, ready func(url string)) error {
	if opts.DB == "" {
		opts.DB = "idemlab.db"
	}
	opts.Stage, opts.Lab = subject.New, true
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := server.New(ctx, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ready("http://" + ln.Addr().String())
	hs := server.NewHTTPServer(srv.Handler())
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	shutdown := make(chan error, 1)
	go func() {
		<-ctx.Done()
		wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdown <- hs.Shutdown(wait)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := <-shutdown; err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// Child is a lab server running as a child process on a database file, so
// that it can be killed (kill -9, or a crash fault) and started again on
// the same file.
type Child struct {
	Binary string
	// Subject is the Subject.Name the binary is asked to serve, if it
	// holds several (see Main); empty means its first.
	Subject string
	DB      string
	Admin   string
	URL     string
	cmd     *exec.Cmd
	exited  chan error
}

// StartChild starts binary (a stage's test binary; os.Args[0] from inside
// one) as a lab server on a fresh database in dir.
func StartChild(ctx context.Context, binary, dir string) (*Child, error) {
	return startChild(ctx, binary, "", dir)
}

func startChild(ctx context.Context, binary, subject, dir string) (*Child, error) {
	var b [12]byte
	rand.Read(b[:])
	c := &Child{Binary: binary, Subject: subject, DB: filepath.Join(dir, "lab.db"), Admin: "adm_" + hex.EncodeToString(b[:])}
	return c, c.Start(ctx)
}

// Start (re)starts the child on its database and waits until it answers.
// A restarted child listens on the port it had, so that a client keeps its
// URL across a crash, as it would with a real server; if that port has
// been taken meanwhile, it moves to a new one (see URL).
func (c *Child) Start(ctx context.Context) error {
	if c.URL != "" {
		if err := c.startOn(ctx, strings.TrimPrefix(c.URL, "http://")); err == nil || ctx.Err() != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	return c.startOn(ctx, addr)
}

func (c *Child) startOn(ctx context.Context, addr string) error {
	cmd := exec.Command(c.Binary)
	DieWithParent(cmd)
	cmd.Env = append(os.Environ(), EnvServe+"="+addr, EnvDB+"="+c.DB, EnvAdmin+"="+c.Admin, EnvSubject+"="+c.Subject)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start child: %w", err)
	}
	exited := make(chan error, 1)
	c.cmd, c.URL, c.exited = cmd, "http://"+addr, exited
	go func() { exited <- cmd.Wait() }()
	probe := &http.Client{Timeout: time.Second}
	defer probe.CloseIdleConnections()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for {
		if c.answers(probe) {
			return nil
		}
		select {
		case err := <-c.exited:
			c.exited <- err
			return fmt.Errorf("child exited at start (%v): %s", err, stderr.String())
		case <-ctx.Done():
			c.Kill()
			return ctx.Err()
		case <-deadline:
			c.Kill()
			return fmt.Errorf("child did not answer within 15s: %s", stderr.String())
		case <-tick.C:
		}
	}
}

// answers reports whether this child, and not some other process that
// took its port, answers on its URL: only this child knows its admin token.
func (c *Child) answers(client *http.Client) bool {
	req, err := http.NewRequest("GET", c.URL+"/lab/config", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+c.Admin)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// lockedBuffer collects a child's stderr, written by exec's copying
// goroutine and read by whoever reports the child's failure.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Exited reports, without waiting, whether the child has exited (after a
// crash fault, say) and how.
func (c *Child) Exited() (bool, error) {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true, err
	default:
		return false, nil
	}
}

// awaitExit waits until the child exits, reporting true, or stop closes.
func (c *Child) awaitExit(stop <-chan struct{}) bool {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true
	case <-stop:
		return false
	}
}

// WaitExit waits up to d for the child to exit on its own.
func (c *Child) WaitExit(d time.Duration) (bool, error) {
	select {
	case err := <-c.exited:
		c.exited <- err
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// Kill ends the child with SIGKILL, as a machine losing power would, and
// waits for it to be gone.
func (c *Child) Kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Kill()
	err := <-c.exited
	c.exited <- err
}
