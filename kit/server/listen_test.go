package server_test

import (
	"encoding/json"
	"testing"
	"time"

	"idemlab/kit/events"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/solutions/stage1"
)

// TestEvents_KeyRowsFlowAgainAfterTheListenerIsCut (PostgreSQL): the
// backend of the connection that LISTENs for key rows is terminated, as a
// database restart would end it. The stream says so ("listen", not
// listening), says when it listens again, sends the key rows anew, and
// key events flow for what changes next. A listener that never
// reconnected (it did not: the dashboard's key table froze for good)
// fails.
func TestEvents_KeyRowsFlowAgainAfterTheListenerIsCut(t *testing.T) {
	if labdb.EngineOfTarget(labdb.TestTarget()) != labdb.PostgreSQL {
		t.Skip("the LISTEN connection is PostgreSQL's; set " + labdb.EnvURL)
	}
	srv, hs := startWith(t, server.Options{Stage: stage1.New})
	c0, c1 := resetTwo(t, srv)
	ch, cancel := srv.Events().Subscribe(256)
	defer cancel()
	body := `{"from":"` + c0.Accounts[0] + `","to":"` + c1.Accounts[0] + `","amount":5}`
	if code, b := callAs(t, hs, "POST", "/transfers", "Bearer "+c0.Token, "k-before", body); code != 201 {
		t.Fatalf("transfer: %d %s", code, b)
	}
	awaitEvent(t, ch, "a key event for k-before", keyEventFor("k-before"))
	var cut int
	err := srv.Lab().DB.QueryRowContext(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN idemlab_key_rows' AND pid <> pg_backend_pid()`).Scan(&cut)
	if err != nil || cut != 1 {
		t.Fatalf("terminated %d listening backends (%v), want 1", cut, err)
	}
	awaitEvent(t, ch, "a listen event that says the listener was lost", listenEvent(false))
	awaitEvent(t, ch, "a listen event that says it listens again", listenEvent(true))
	awaitEvent(t, ch, "k-before's row sent anew", keyEventFor("k-before"))
	if code, b := callAs(t, hs, "POST", "/transfers", "Bearer "+c0.Token, "k-after", body); code != 201 {
		t.Fatalf("transfer: %d %s", code, b)
	}
	awaitEvent(t, ch, "a key event for k-after", keyEventFor("k-after"))
}

// awaitEvent reads ch until an event matches, and fails t after 10 seconds
// without one.
func awaitEvent(t *testing.T, ch <-chan events.Event, what string, match func(events.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-ch:
			if match(ev) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

func keyEventFor(key string) func(events.Event) bool {
	return func(ev events.Event) bool {
		var k events.Key
		return ev.Kind == events.KindKey && json.Unmarshal(ev.Data, &k) == nil && k.Row["key"] == key
	}
}

func listenEvent(listening bool) func(events.Event) bool {
	return func(ev events.Event) bool {
		var l events.Listen
		return ev.Kind == events.KindListen && json.Unmarshal(ev.Data, &l) == nil && l.Listening == listening &&
			(listening || l.Error != "")
	}
}
