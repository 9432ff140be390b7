package grader_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/server"
	"idemlab/solutions/stage9"
)

// TestStage9_AServerStartedElsewhereIsNotFailed: lab grade --url points
// at a server that posts to a core ledger of its own, which the check
// cannot read. Stage 9's checks must say they could not observe it, not
// fail a correct server for postings they never saw.
func TestStage9_AServerStartedElsewhereIsNotFailed(t *testing.T) {
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: stage9.New, Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := server.NewHTTPServer(srv.Handler())
	go hs.Serve(ln)
	defer hs.Close()
	subject := grader.Subject{Stage: 9, Name: "solutions/stage9", New: stage9.New}
	for _, id := range []string{"S9.posted-once", "S9.core-down"} {
		c, ok := grader.Lookup(id)
		if !ok {
			t.Fatalf("no check %s", id)
		}
		r := grader.RunCheck(context.Background(), subject, c, 1, targets.Running("http://"+ln.Addr().String(), srv.AdminToken()))
		var u *judging.Unobserved
		if r.Caught() || !errors.As(r.Err, &u) {
			t.Errorf("%s against a server started elsewhere: %v, want could not observe", id, r.Err)
		}
	}
}
