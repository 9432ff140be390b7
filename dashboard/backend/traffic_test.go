package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"idemlab/kit/bank"
)

// TestTraffic_DrainWaitsForTheOperationsUnderWay: paused traffic drains
// only once the operation a server holds has its answer.
func TestTraffic_DrainWaitsForTheOperationsUnderWay(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before srv.Close, which waits for the handlers

	tr := NewTraffic([]func() string{func() string { return srv.URL }}, bank.DefaultParams())
	calm, err := ProfileNamed("calm")
	if err != nil {
		t.Fatal(err)
	}
	tr.SetProfile(calm)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan struct{})
	go func() { defer close(ran); tr.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	select {
	case <-arrived:
	case <-time.After(patience):
		t.Fatal("no operation reached the server")
	}
	tr.SetPaused(true)
	given, giveUp := context.WithCancel(t.Context())
	giveUp()
	if err := tr.Drain(given); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain with an operation held by the server = %v, want context.Canceled", err)
	}
	free()
	if err := tr.Drain(t.Context()); err != nil {
		t.Fatalf("Drain after the server answered: %v", err)
	}
}
