package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/kit/sqlitedb"
	"idemlab/solutions/stage0"
)

// TestSlots_AFullSetAdmitsNoOneUntilASlotIsReleased: with every slot
// taken, a request that cannot wait (its context has ended) is refused,
// and once one slot is released the next is admitted. A set that admits
// beyond its size admits the third request; one whose release frees
// nothing refuses the fourth.
func TestSlots_AFullSetAdmitsNoOneUntilASlotIsReleased(t *testing.T) {
	s := make(slots, 2)
	for i := range 2 {
		if !s.take(context.Background()) {
			t.Fatalf("take %d of 2 refused on a set with room", i+1)
		}
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if s.take(ended) {
		t.Fatal("a third request admitted while both slots were taken")
	}
	s.release()
	if !s.take(ended) {
		t.Fatal("no request admitted after a slot was released")
	}
}

// TestRequestSlots_LeaveTheReservedConnectionsFree: a bounded pool gives
// the customer requests all its connections but reservedConns; a pool too
// small for that still admits one at a time; an unbounded pool (SQLite's,
// MaxOpenConnections 0) has no slots, and admits every request.
func TestRequestSlots_LeaveTheReservedConnectionsFree(t *testing.T) {
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// As SQLite opens it: no bound, so no slots.
	if got := cap(requestSlots(db.DB)); got != 0 {
		t.Errorf("a SQLite database as opened gives %d request slots, want none", got)
	}
	for _, c := range []struct {
		pool, want int
	}{{0, 0}, {48, 48 - reservedConns}, {reservedConns, 1}} {
		db.SetMaxOpenConns(c.pool)
		if got := cap(requestSlots(db.DB)); got != c.want {
			t.Errorf("a pool of %d connections gives %d request slots, want %d", c.pool, got, c.want)
		}
	}
}

// TestObserve_ARequestThatGaveUpWaitingIsReported: a request whose client
// went away while every slot was taken runs nothing, and is still in the
// access log, with its 503: none goes unreported. It catches a server that
// returns before the report.
func TestObserve_ARequestThatGaveUpWaitingIsReported(t *testing.T) {
	var log bytes.Buffer
	srv, err := New(context.Background(), Options{DB: ":memory:", OwnDB: true, Lab: true, Stage: stage0.New, AccessLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.slots = make(slots, 1)
	srv.slots.take(context.Background()) // every slot taken
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(gone, http.MethodPost, "/transfers", strings.NewReader(`{}`))
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("answered %d, want 503", rec.Code)
	}
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), `"status":503`) {
		t.Errorf("the access log has %d records: %q; want the one 503", n, log.String())
	}
}
