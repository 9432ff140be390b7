package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/kit/server"
	"idemlab/solutions/stage0"
)

func TestDash_NeedsAServerAndATerminal(t *testing.T) {
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: stage0.New, Lab: true, AdminToken: "adm_t"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	t.Setenv("LAB", "")
	t.Setenv("ADMIN", "")
	for _, c := range []struct {
		args []string
		code int
		why  string
	}{
		{[]string{"dash"}, 2, "--url and --token"},
		{[]string{"dash", "--url", hs.URL, "--token", "wrong"}, 1, "refused the admin token"},
		{[]string{"dash", "--url", "http://127.0.0.1:1", "--token", "adm_t"}, 1, "cannot read"},
		{[]string{"dash", "--url", hs.URL, "--token", "adm_t"}, 1, "needs a terminal"},
		{[]string{"dash", "--url", ",", "--token", "adm_t"}, 2, "names no server"},
		{[]string{"dash", "--url", hs.URL + ",http://127.0.0.1:1", "--token", "adm_t"}, 1, "cannot read http://127.0.0.1:1"},
		{[]string{"dash", "--url", hs.URL + "," + hs.URL, "--token", "adm_t"}, 1, "needs a terminal"},
	} {
		code, _, errs := runLabCommand(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.why) || strings.Contains(errs, "lab dash: lab dash") {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, errs, c.code, c.why)
		}
	}
}
