package targets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
)

// The environment that asks a binary to serve a subject as a child
// process instead of doing its usual work (see ServeChild). Child sets it;
// ServeChild reads it.
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
	// EnvListener, when set, says the child inherits its listening socket
	// as file descriptor 3 (the first of exec.Cmd.ExtraFiles): the parent
	// holds the port from the moment it picks it, so no other process can
	// take it between the parent's choice and the child's start.
	EnvListener = "IDEMLAB_LISTENER"
	// EnvCore is the core ledger the child's server posts to
	// (server.Options.CoreURL).
	EnvCore = "IDEMLAB_CORE"
	// EnvOpenAhead, when set, has the child's server open its database's
	// connections before it serves (server.Options.OpenAhead): lab serve's
	// servers, and the delivery check's. The checks' children leave it
	// unset: a ladder on PostgreSQL runs many of them at once, and 41
	// connections each held from the start would pass the cluster's
	// max_connections.
	EnvOpenAhead = "IDEMLAB_OPEN_AHEAD"
	// EnvReplica, when set, has the child's server share its lab clock,
	// config and resets with the other servers on its database
	// (server.Options.Replica): "lead" for the first replica of a lab
	// that starts, "join" for the others and for any replica started
	// again while they run.
	EnvReplica = "IDEMLAB_REPLICA"
)

// replicaRoles are EnvReplica's values.
var replicaRoles = map[string]labctl.Role{"": labctl.Alone, "lead": labctl.Lead, "join": labctl.Join}

// IsChild reports whether this process was started by a Child, to serve
// a subject (EnvServe is set) instead of doing its usual work.
func IsChild() bool { return os.Getenv(EnvServe) != "" }

// ServeChild serves, in this process, the subject a Child asked for
// through the environment (the first of subjects unless EnvSubject names
// another), until the process is interrupted. It returns the process's
// exit status: 0 after a clean shutdown, 1 if there was nothing to serve
// or the server failed (the reason goes to stderr).
//
// A stage's test binary calls it from its TestMain (gradertest.Main):
// that is how lab serve and lab grade run a student's stage without
// compiling every other stage into the lab command (a half-finished stage
// breaks only itself), and how the grader starts a server it can kill -9.
func ServeChild(subjects ...Subject) int {
	if len(subjects) == 0 {
		fmt.Fprintln(os.Stderr, "lab: this binary has no subject to serve")
		return 1
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
			return 1
		}
	}
	opts := childOptions()
	if path := os.Getenv(EnvAccessLog); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
			return 1
		}
		opts.AccessLog = f // closed when the process ends; every record is written through
	}
	listening := func(url string) { fmt.Printf("listening on %s\n", url) }
	var err error
	if os.Getenv(EnvListener) != "" {
		var ln net.Listener
		if ln, err = net.FileListener(os.NewFile(3, "listener")); err == nil {
			err = serveOn(context.Background(), subject, ln, opts, listening)
		}
	} else {
		err = Serve(context.Background(), subject, os.Getenv(EnvServe), opts, listening)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		return 1
	}
	return 0
}

// childOptions are the server options a child's environment gives it
// (the Env constants), but for the access log, which it must open.
func childOptions() server.Options {
	return server.Options{DB: os.Getenv(EnvDB), AdminToken: os.Getenv(EnvAdmin), RandomTokens: os.Getenv(EnvRandomTokens) != "",
		CoreURL: os.Getenv(EnvCore), OpenAhead: os.Getenv(EnvOpenAhead) != "", Replica: replicaRoles[os.Getenv(EnvReplica)]}
}

// CanServe records that this process can serve subjects as children of
// itself (with ServeChild), so that a check that crashes its server can
// start one it may kill (see T.OnChild).
func CanServe(subjects ...Subject) {
	for _, s := range subjects {
		servable.Store(s.Name, true)
	}
}

// Serve runs subject as a lab server on addr until ctx ends or the
// process is interrupted, with the database, admin token and access log of
// opts (lab mode is always on), behind the limits of
// server.NewHTTPServer.
// It calls ready with the server's URL once the server accepts requests,
// and returns the error that stopped it.
func Serve(ctx context.Context, subject Subject, addr string, opts server.Options, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return serveOn(ctx, subject, ln, opts, ready)
}

// serveOn is Serve on a socket already listening, which it closes.
func serveOn(ctx context.Context, subject Subject, ln net.Listener, opts server.Options, ready func(url string)) error {
	defer ln.Close()
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

// Child is a lab server running as a child process: a binary that serves
// with ServeChild (a stage's test binary) started with the environment
// that asks it to. lab serve runs a student's stage as one; the grader
// runs one per check that crashes its server, on a database file, so that
// it can be killed (kill -9, or a crash fault) and started again on the
// same file.
type Child struct {
	Binary string
	// Subject is the Subject.Name the binary is asked to serve, if it
	// holds several; empty means its first.
	Subject string
	// DB is the database the child serves from, across restarts: a SQLite
	// file, or a postgres:// URL.
	DB    string
	Admin string
	// Addr is the address the child first listens on; empty means a free
	// port on loopback.
	Addr string
	// AccessLog, if set, is the file the child appends its access log to.
	AccessLog string
	// RandomTokens has the child's resets draw customer tokens at random.
	RandomTokens bool
	// OpenAhead has the child's server open its database's connections
	// before it serves (EnvOpenAhead). Left false, the child does as this
	// process's environment says: the delivery check sets EnvOpenAhead
	// for the children the grader starts for it.
	OpenAhead bool
	// CoreURL is the core ledger the child's server posts to, if any.
	CoreURL string
	// Replica is what the child is among the servers on its database
	// (EnvReplica): after a Lead's first start, Start starts it again as
	// one that joins the others, and adopts their config.
	Replica labctl.Role
	// Stderr, if set, receives the child's standard error as it writes
	// it; else the child's failure to start quotes it.
	Stderr io.Writer
	// URL is where the child answers, once started.
	URL string
	running
	// dropDB, if set, drops the database the grader created for the child.
	dropDB func(context.Context) error
}

// StartChild starts binary (a stage's test binary; os.Args[0] from inside
// one) as a lab server on a fresh database, with a fresh admin token, on a
// free port on loopback. The database is a file in dir or, when cluster is
// a postgres:// URL (labdb.TestTarget in tests), a new database on that
// cluster that DropDB removes (labdb.Fresh).
func StartChild(ctx context.Context, binary, dir, cluster string) (*Child, error) {
	return startChild(ctx, binary, Subject{}, dir, cluster, labctl.Alone)
}

func startChild(ctx context.Context, binary string, subject Subject, dir, cluster string, role labctl.Role) (*Child, error) {
	c := &Child{Binary: binary, Subject: subject.Name, Admin: AdminToken(), CoreURL: subject.CoreURL, Replica: role}
	var err error
	if c.DB, c.dropDB, err = labdb.Fresh(ctx, cluster, dir); err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		c.DropDB()
		return nil, err
	}
	return c, nil
}

// DropDB drops the database the grader created for the child on a
// PostgreSQL cluster, if it did; stop the child first.
func (c *Child) DropDB() {
	if c.dropDB != nil {
		if err := c.dropDB(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "lab: could not drop the child's database %s: %v\n", labdb.Redacted(c.DB), err)
		}
		c.dropDB = nil
	}
}

// environ is the environment the child starts with to serve on addr: this
// process's, and the Env constants' values for c.
func (c *Child) environ(addr string) []string {
	env := append(os.Environ(), EnvServe+"="+addr, EnvListener+"=1", EnvDB+"="+c.DB, EnvAdmin+"="+c.Admin, EnvSubject+"="+c.Subject, EnvAccessLog+"="+c.AccessLog, EnvCore+"="+c.CoreURL)
	if c.RandomTokens {
		env = append(env, EnvRandomTokens+"=1")
	}
	if c.OpenAhead {
		env = append(env, EnvOpenAhead+"=1")
	}
	for name, role := range replicaRoles {
		if role == c.Replica && role != labctl.Alone {
			env = append(env, EnvReplica+"="+name)
		}
	}
	return env
}

// AdminToken draws an admin token no one can guess, for a server the
// grader starts: server.NewAdminToken.
func AdminToken() string { return server.NewAdminToken() }

// Start (re)starts the child on its database and waits until it answers.
// A restarted child listens on the port it had, so that a client keeps its
// URL across a crash, as it would with a real server; if that port has
// been taken meanwhile, it moves to a new one (see URL). At the first
// start, it returns an error if Addr is taken (another server holds it).
func (c *Child) Start(ctx context.Context) error {
	if c.URL != "" {
		// A restart: the port it had, so that clients keep their URL.
		if ln, err := net.Listen("tcp", strings.TrimPrefix(c.URL, "http://")); err == nil {
			return c.startOn(ctx, ln)
		}
	}
	addr := c.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if c.URL != "" {
		// A restart whose port was taken: any free port on the same host.
		host, _, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort(host, "0")
	}
	// Take the address here and hand the socket to the child: if another
	// server holds it, say so rather than take its answers for the
	// child's; and once held, no other process can take it before the
	// child serves on it. A ":0" port becomes a free one.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (is another lab server running there?): %w", addr, err)
	}
	return c.startOn(ctx, ln)
}

// startOn starts the child on ln's socket, which it closes in this
// process once the child holds it, and waits until the child answers.
func (c *Child) startOn(ctx context.Context, ln net.Listener) error {
	defer ln.Close()
	file, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("hand the listening socket to the child: %w", err)
	}
	defer file.Close()
	addr := ln.Addr().String()
	cmd := exec.Command(c.Binary)
	DieWithParent(cmd)
	cmd.ExtraFiles = []*os.File{file}
	cmd.Env = c.environ(addr)
	if c.Replica == labctl.Lead {
		// A lead starts the lab once: started again, it joins the
		// replicas that run on.
		c.Replica = labctl.Join
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Binary, err)
	}
	// The child has its own copy of the socket now; this process's copies
	// close here so that the port is free once the child exits.
	file.Close()
	ln.Close()
	exited := make(chan error, 1)
	c.cmd, c.URL, c.exited = cmd, "http://"+addr, exited
	go func() { exited <- cmd.Wait() }()
	probe := &http.Client{Timeout: time.Second}
	defer probe.CloseIdleConnections()
	lab := labclient.New(c.URL, c.Admin, probe)
	return c.awaitReady(ctx, "the server", c.URL, stderr, func() bool { return c.answers(ctx, lab) })
}

// quote renders what a child wrote to stderr after an error, if anything.
func quote(stderr string) string {
	if stderr = strings.TrimSpace(stderr); stderr == "" {
		return ""
	}
	return ": " + stderr
}

// answers reports whether this child, and not some other process that
// took its port, answers on its URL: only this child knows its admin token.
func (c *Child) answers(ctx context.Context, lab *labclient.Client) bool {
	_, err := lab.Config(ctx)
	return err == nil
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
