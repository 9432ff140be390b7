package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
	"idemlab/dashboard/backend"
)

func init() {
	register(command{name: "dash", summary: "watch a running lab server live (your make serve)", run: runDash})
}

func runDash(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab dash", "--url http://127.0.0.1:8080 --token adm_…", stderr)
	url := fs.String("url", os.Getenv("LAB"), "the lab server's URL (default $LAB, which make serve prints)")
	token := fs.String("token", os.Getenv("ADMIN"), "its admin token (default $ADMIN, which make serve prints)")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *url == "" || *token == "" {
		fs.Usage()
		return cannotRun(fmt.Errorf("--url and --token are needed: make serve prints both (export LAB=… ADMIN=…)"))
	}
	remote := backend.NewRemote(*url, *token)
	check, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := remote.State(check)
	cancel()
	if err != nil {
		return fmt.Errorf("cannot read %s/lab/state: %w", strings.TrimRight(*url, "/"), err)
	}
	if !isTerminal(stdout) {
		return fmt.Errorf("lab dash needs a terminal")
	}
	watch, stop := context.WithCancel(ctx)
	defer stop()
	model := dashboard.NewWatch(ctx, *url, time.Now())
	return runTUI(ctx, model, stdout, func(p *tea.Program) {
		p.Send(dashboard.SideMsg{Side: 0, Title: "lab server", URL: *url, Status: "running"})
		backend.Watch(watch, remote, 0, 0, p.Send)
	})
}
