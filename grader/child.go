package grader

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
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
)

// Main is every stage's TestMain. Run normally, it runs the tests. With
// IDEMLAB_SERVE set, the test binary serves the subject in lab mode
// instead: that is how lab serve runs a student's stage without compiling
// every other stage into the lab command (a half-finished stage breaks
// only itself), and how the grader starts a server it can kill -9.
func Main(m *testing.M, subject Subject) {
	addr := os.Getenv(EnvServe)
	if addr == "" {
		os.Exit(m.Run())
	}
	if err := Serve(context.Background(), subject, addr, os.Getenv(EnvDB), os.Getenv(EnvAdmin)); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Serve runs subject as a lab server on addr until interrupted. It prints
// one line, "listening on http://ADDR", once the server accepts requests.
func Serve(ctx context.Context, subject Subject, addr, db, admin string) error {
	if db == "" {
		db = "idemlab.db"
	}
	srv, err := server.New(ctx, server.Options{DB: db, Stage: subject.New, Lab: true, AdminToken: admin})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Child is a lab server running as a child process on a database file, so
// that it can be killed (kill -9, or a crash fault) and started again on
// the same file.
type Child struct {
	Binary string
	DB     string
	Admin  string
	URL    string
	cmd    *exec.Cmd
	exited chan error
}

// StartChild starts binary (a stage's test binary; os.Args[0] from inside
// one) as a lab server on a fresh database in dir.
func StartChild(ctx context.Context, binary, dir string) (*Child, error) {
	c := &Child{Binary: binary, DB: filepath.Join(dir, "lab.db"), Admin: "adm_child"}
	return c, c.Start(ctx)
}

// Start (re)starts the child on its database, on a new port, and waits
// until it answers.
func (c *Child) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(c.Binary)
	cmd.Env = append(os.Environ(), EnvServe+"="+addr, EnvDB+"="+c.DB, EnvAdmin+"="+c.Admin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start child: %w", err)
	}
	c.cmd, c.URL, c.exited = cmd, "http://"+addr, make(chan error, 1)
	go func() { c.exited <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-c.exited:
			c.exited <- err
			return fmt.Errorf("child exited at start (%v): %s", err, stderr.String())
		case <-ctx.Done():
			c.Kill()
			return ctx.Err()
		default:
		}
		if resp, err := http.Get(c.URL + "/healthz"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Kill()
	return fmt.Errorf("child did not answer within 15s: %s", stderr.String())
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
