package targets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"idemlab/kit/labctl"
)

// Start starts a fresh target for one check.
type Start func(ctx context.Context, subject Subject) (*Target, func(), error)

// InProcess starts the subject in this process (the default for go test).
var InProcess Start = inProcess

// servable holds the names of the subjects this process can serve as a
// child of itself: CanServe records them (a stage's test binary does, in
// gradertest.Main), and ServeChild serves them.
var servable sync.Map

// Servable reports whether this process can serve the subject named name
// as a child of itself (CanServe recorded it).
func Servable(name string) bool {
	_, ok := servable.Load(name)
	return ok
}

// ChildProcess returns a Start that runs binary (a stage's test binary, or
// anything that serves with ServeChild) as a lab server in a child
// process, on a fresh database (a file in a temporary folder, or a new
// database on the PostgreSQL cluster the postgres:// URL cluster names:
// see StartChild), so that checks can kill it and start it again on the
// same database. The child serves the subject of the same Name if the
// binary holds several.
func ChildProcess(binary, cluster string) Start {
	return func(ctx context.Context, subject Subject) (*Target, func(), error) {
		dir, err := os.MkdirTemp("", "idemlab-child-")
		if err != nil {
			return nil, nil, err
		}
		c, err := startChild(ctx, binary, subject, dir, cluster, labctl.Alone)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("start %s as a child process: %w", subject.Name, err)
		}
		client := NewClient()
		stop := func() {
			client.CloseIdleConnections()
			c.Kill()
			c.DropDB()
			os.RemoveAll(dir)
		}
		return &Target{URL: c.URL, Admin: c.Admin, Client: client, Child: c}, stop, nil
	}
}

// ReplicaProcesses returns a Start that runs n copies of binary (as
// ChildProcess runs one, on cluster) as lab servers on one fresh database:
// several app servers behind a load balancer, which share the lab's
// clock, config and resets (server.Options.Replica). The target's URL is
// the first; the others are its Replicas.
func ReplicaProcesses(binary, cluster string, n int) Start {
	return func(ctx context.Context, subject Subject) (*Target, func(), error) {
		dir, err := os.MkdirTemp("", "idemlab-replicas-")
		if err != nil {
			return nil, nil, err
		}
		var children []*Child
		stop := func() {
			for _, c := range children {
				c.Kill()
			}
			if len(children) > 0 {
				children[0].DropDB()
			}
			os.RemoveAll(dir)
		}
		first, err := startChild(ctx, binary, subject, dir, cluster, labctl.Lead)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("start %s as a child process: %w", subject.Name, err)
		}
		children = append(children, first)
		target := &Target{URL: first.URL, Admin: first.Admin, Client: NewClient(), Child: first}
		for range n - 1 {
			c := &Child{Binary: binary, Subject: subject.Name, DB: first.DB, Admin: first.Admin, CoreURL: subject.CoreURL, Replica: labctl.Join}
			if err := c.Start(ctx); err != nil {
				stop()
				return nil, nil, fmt.Errorf("start a replica of %s: %w", subject.Name, err)
			}
			children = append(children, c)
			target.Replicas = append(target.Replicas, c.URL)
		}
		return target, func() { target.Client.CloseIdleConnections(); stop() }, nil
	}
}

// ErrNoReplicas is returned by T.OnReplicas when the grader cannot start the
// subject in processes of its own. It names no command: the grader, which
// knows the stage being graded and how the lab was started, adds one
// (grader.WithRunHint).
var ErrNoReplicas = errors.New("this check runs the server as several processes on one database, so it needs to start them itself, not reach a server started elsewhere (--url)")

// ErrNoChild is returned by T.OnChild when the grader cannot start the
// subject in a process of its own. Like ErrNoReplicas, it names no command.
var ErrNoChild = errors.New("this check crashes the server, so it needs one the grader can kill and restart, not a server started elsewhere (--url)")
