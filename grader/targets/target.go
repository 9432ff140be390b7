// Package targets starts the server under test, in this process or as a
// child process it can kill -9 and start again on the same database, and
// the core ledger it posts to: what the checks, the replay and the
// scoreboard send their requests to. It judges nothing.
package targets

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"idemlab/kit/accesslog"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/stage"
)

// Subject is what is being graded.
type Subject struct {
	// Stage is the stage the subject claims to have reached.
	Stage int
	// Name says where its code lives, e.g. "stages/stage3".
	Name string
	// New builds its handlers.
	New stage.Factory
	// Tally is stage 0's exercise; nil for a subject without one.
	Tally func(io.Reader) (accesslog.Report, error)
	// CoreURL is the core ledger its server posts to (server.Options
	// .CoreURL): set by RunCheck, for a check of stage 9 on, to a core the
	// check watches.
	CoreURL string
}

// Target is a lab server to send requests to.
type Target struct {
	URL    string
	Admin  string
	Client *http.Client
	// Server is set when the target runs in this process.
	Server *server.Server
	// Child is set when the target runs in a child process that checks
	// may crash and restart (see ChildProcess and T.Restart).
	Child *Child
	// Replicas are the URLs of the other server processes of the subject
	// on the same database, if the target has any (see T.OnReplicas).
	Replicas []string
}

// ReplicaURL is the URL of replica i: URL for 0, and one of Replicas
// after it, in turn.
func (t *Target) ReplicaURL(i int) string {
	if i <= 0 || len(t.Replicas) == 0 {
		return t.URL
	}
	return t.Replicas[(i-1)%len(t.Replicas)]
}

// NewClient returns a client that keeps enough connections open for
// simultaneous requests, with a timeout no check should reach.
func NewClient() *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 0, DisableCompression: true}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// inProcess runs the subject in this process on a fresh database of
// its own (in memory, or on the PostgreSQL cluster IDEMLAB_DATABASE_URL
// names: labdb.TestTarget), in lab mode, behind the limits every lab
// server has. A crash fault aborts the request under it.
//
// Its stop waits for every handler to return before it closes the
// database, but not for the connections themselves: net/http lingers half
// a second on a connection whose large body went unread (a 413), so that
// the client reads the answer before the reset, and waiting for that
// would add half a second to every check that sends one.
func inProcess(ctx context.Context, subject Subject) (*Target, func(), error) {
	srv, err := server.New(ctx, server.Options{
		DB: labdb.TestTarget(), OwnDB: true, Stage: subject.New, Lab: true,
		Crash: func(string) {}, CoreURL: subject.CoreURL,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", subject.Name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("start %s: %w", subject.Name, err)
	}
	serving := server.ServeUntilStopped(ln, srv.Handler())
	client := NewClient()
	stop := func() {
		client.CloseIdleConnections()
		serving()
		srv.Close()
	}
	return &Target{URL: "http://" + ln.Addr().String(), Admin: srv.AdminToken(), Client: client, Server: srv}, stop, nil
}

// Root finds the project's root (the folder holding go.mod) from the
// working directory, so that checks find datasets/ from any package.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Running is a Start for a server that is already running at url, with
// admin token admin: every check gets the same server, and resets it
// itself. Checks that must crash the server cannot run against it.
func Running(url, admin string) Start {
	client := NewClient()
	return func(ctx context.Context, subject Subject) (*Target, func(), error) {
		return &Target{URL: url, Admin: admin, Client: client}, func() {}, nil
	}
}
