package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/kit/fault"
	"idemlab/kit/labdb"
	"idemlab/solutions/stage0"
)

// TestObserve_ARequestsStatementsAreNotedWhileTheRereadFaultIsArmed: with
// slow-settings-reread armed, a request that writes the settings and then
// reads them has that read held up; without the request noted in its
// context (fault.WithRequest), the read would run at once and the fault
// would hold nothing in a lab server.
func TestObserve_ARequestsStatementsAreNotedWhileTheRereadFaultIsArmed(t *testing.T) {
	srv, err := New(context.Background(), Options{DB: ":memory:", OwnDB: true, Lab: true, Stage: stage0.New})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	if err := labdb.CreateTable(ctx, srv.db.DB, `CREATE TABLE IF NOT EXISTS account_settings (account_id TEXT PRIMARY KEY, version INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	srv.db.SlowSettingsRereads(1)
	var reread error
	h := srv.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := srv.db.ExecContext(r.Context(), `UPDATE account_settings SET version = version + 1 WHERE account_id = 'acc'`); err != nil {
			t.Error(err)
		}
		short, cancel := context.WithTimeout(r.Context(), fault.SettingsRereadDelay/5)
		defer cancel()
		var v int
		reread = srv.db.QueryRowContext(short, `SELECT version FROM account_settings WHERE account_id = 'acc'`).Scan(&v)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/accounts/acc/settings", strings.NewReader(`{}`)))
	if !errors.Is(reread, context.DeadlineExceeded) {
		t.Errorf("the read after the request's write, the fault armed: %v; want it held past its context's end (%v)", reread, context.DeadlineExceeded)
	}
}

// TestObserve_AHeaderSetAfterTheStatusIsNotSent: the lab holds a response
// back until its handler returns, but what goes out is what a plain
// net/http server would send: a header set after WriteHeader is dropped,
// so a replay that writes the status first and its Location and marker
// after fails here as it would in production.
func TestObserve_AHeaderSetAfterTheStatusIsNotSent(t *testing.T) {
	srv, err := New(context.Background(), Options{DB: ":memory:", OwnDB: true, Lab: true, Stage: stage0.New})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Header().Set("Location", "/transfers/tr_1")
		w.Header().Set("Idempotent-Replayed", "true")
		w.Write([]byte(`{}`))
	}
	want := httptest.NewRecorder()
	http.HandlerFunc(handler).ServeHTTP(want, httptest.NewRequest(http.MethodPost, "/transfers", nil))
	got := httptest.NewRecorder()
	srv.observe(http.HandlerFunc(handler)).ServeHTTP(got, httptest.NewRequest(http.MethodPost, "/transfers", nil))
	if got.Code != want.Code {
		t.Errorf("status %d, want %d", got.Code, want.Code)
	}
	for _, h := range []string{"Content-Type", "Location", "Idempotent-Replayed"} {
		if g, w := got.Header().Get(h), want.Result().Header.Get(h); g != w {
			t.Errorf("%s: %q through the lab, %q from net/http", h, g, w)
		}
	}
}
