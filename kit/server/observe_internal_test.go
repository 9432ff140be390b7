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
