package grader_test

import (
	"net"
	"net/http"
	"testing"

	"idemlab/grader/targets"
	"idemlab/kit/server"
	"idemlab/kit/stage"
)

// serveWrapped serves the stage that newStage builds, in lab mode, behind
// wrap: a server that answers as the stage would, but for what wrap
// changes, for a check to catch. The server closes with the test.
func serveWrapped(t *testing.T, newStage stage.Factory, wrap func(http.Handler) http.Handler) targets.Start {
	t.Helper()
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: newStage, Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := server.NewHTTPServer(wrap(srv.Handler()))
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return targets.Running("http://"+ln.Addr().String(), srv.AdminToken())
}
