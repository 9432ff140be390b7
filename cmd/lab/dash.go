package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"idemlab/dashboard"
	"idemlab/dashboard/backend"
)

func runDash(ctx context.Context, in *invocation) error {
	url := in.String("url", os.Getenv("LAB"), "the lab server's URL (default $LAB, which make serve prints); for replicas, every replica's, comma-separated, and each request shows which one answered")
	token := in.String("token", os.Getenv("ADMIN"), "its admin token (default $ADMIN, which make serve prints)")
	if done, err := in.parse(); done {
		return err
	}
	if *url == "" || *token == "" {
		in.Usage()
		return cannotRun(fmt.Errorf("--url and --token are needed: make serve prints both (export LAB=… ADMIN=…)"))
	}
	urls := strings.FieldsFunc(*url, func(r rune) bool { return r == ',' })
	if len(urls) == 0 {
		return cannotRun(fmt.Errorf("--url %q names no server", *url))
	}
	for _, u := range urls {
		if err := checkServerURL(u); err != nil {
			return err
		}
	}
	remote := backend.NewRemote(*token, urls...)
	for _, lab := range remote.Replicas {
		check, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := lab.State(check)
		cancel()
		if err != nil {
			return fmt.Errorf("cannot read %s/lab/state: %w", strings.TrimRight(lab.URL(), "/"), err)
		}
	}
	if !isTerminal(in.stdout) {
		// main names the command before the error: "lab dash: needs …".
		return errors.New("needs a terminal to draw in: run it in a terminal window, with its output neither piped nor redirected")
	}
	watch, stop := context.WithCancel(ctx)
	defer stop()
	title := "lab server"
	if len(urls) > 1 {
		title = fmt.Sprintf("lab server, %d replicas", len(urls))
	}
	model := dashboard.NewWatch(ctx, urls[0], time.Now())
	return runTUI(ctx, model, in.stdout, func(p *tea.Program) {
		p.Send(dashboard.SideMsg{Side: 0, Title: title, URL: urls[0], Status: "running"})
		backend.Watch(watch, remote, 0, 0, p.Send)
	})
}
