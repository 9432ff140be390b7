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

// TestURLFlags_AskForTheScheme: the host and port alone, as the
// dashboard's pane shows them, are refused at once with the URL to give,
// by lab dash (each of its replicas), lab replay and lab grade; they
// failed later with Go's "first path segment in URL cannot contain colon".
func TestURLFlags_AskForTheScheme(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dash", "--url", "127.0.0.1:8080", "--token", "adm_x"}, "--url http://127.0.0.1:8080"},
		{[]string{"dash", "--url", "http://127.0.0.1:8080,127.0.0.1:8081", "--token", "adm_x"}, "--url http://127.0.0.1:8081"},
		{[]string{"replay", "--log", "../../datasets/day-small.plan.jsonl", "--url", "127.0.0.1:8080", "--admin-token", "adm_x"}, "--url http://127.0.0.1:8080"},
		{[]string{"grade", "--stage", "1", "--url", "127.0.0.1:8080", "--admin-token", "adm_x"}, "--url http://127.0.0.1:8080"},
		{[]string{"grade", "--stage", "1", "--url", "ftp://h", "--admin-token", "adm_x"}, "http:// or https://"},
	} {
		code, _, errs := runLabCommand(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, "path segment") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}
