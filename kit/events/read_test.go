package events_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"idemlab/kit/events"
)

// TestRead_RoundTripsTheHubsStream publishes through the hub's endpoint
// and reads the stream back. It catches a reader that drops the first
// event after the banner comment, one that loses the id or the kind, and
// one that mangles data holding a colon.
func TestRead_RoundTripsTheHubsStream(t *testing.T) {
	h := events.NewHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The response headers are written after the subscription: what is
	// published from now on is on the stream.
	sent := []struct {
		kind string
		data any
	}{
		{events.KindRequest, events.Request{Method: "POST", Path: "/transfers", Status: 201, Key: "k:1"}},
		{events.KindClock, map[string]string{"now": "2026-03-02T09:00:00Z"}},
		{events.KindKey, events.Key{RowID: 3, Deleted: true}},
	}
	for _, s := range sent {
		h.Publish(s.kind, s.data)
	}
	var got []events.Event
	err = events.Read(resp.Body, func(ev events.Event) bool {
		got = append(got, ev)
		return len(got) < len(sent)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1 request {"method":"POST","path":"/transfers","key":"k:1","status":201,"replayed":false,"duration_ms":0}`,
		`2 clock {"now":"2026-03-02T09:00:00Z"}`,
		`3 key {"rowid":3,"deleted":true}`,
	}
	for i, ev := range got {
		if line := strings.Join([]string{strconv.FormatInt(ev.Seq, 10), ev.Kind, string(ev.Data)}, " "); line != want[i] {
			t.Errorf("event %d = %s, want %s", i, line, want[i])
		}
	}
}

// TestRead_MultiLineDataAndComments reads what a hand-written stream may
// hold: comments between events and data split over several lines.
func TestRead_MultiLineDataAndComments(t *testing.T) {
	stream := ": idemlab event stream\n\n" +
		"id: 1\nevent: request\ndata: {\"status\":201}\n\n" +
		": keepalive\n\n" +
		"id: 3\nevent: clock\ndata: {\"now\"\ndata: :1}\n\n"
	var got []events.Event
	if err := events.Read(strings.NewReader(stream), func(ev events.Event) bool {
		got = append(got, ev)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[1].Kind != "clock" || string(got[1].Data) != "{\"now\"\n:1}" {
		t.Fatalf("got %+v", got)
	}
}
