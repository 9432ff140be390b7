package events_test

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"idemlab/kit/events"
)

func TestHub_SlowSubscriberIsToldWhatItMissed(t *testing.T) {
	h := events.NewHub()
	ch, cancel := h.Subscribe(2)
	defer cancel()
	for i := range 10 {
		h.Publish(events.KindRequest, map[string]int{"i": i})
	}
	// The buffer held two; eight were dropped.
	<-ch
	<-ch
	h.Publish(events.KindRequest, map[string]int{"i": 10})
	ev := <-ch
	if ev.Kind != events.KindDropped {
		t.Fatalf("first event after the gap is %q, want dropped", ev.Kind)
	}
	var d events.Dropped
	json.Unmarshal(ev.Data, &d)
	if d.Count != 8 {
		t.Fatalf("dropped count = %d, want 8", d.Count)
	}
	if ev := <-ch; ev.Kind != events.KindRequest || ev.Seq != 11 {
		t.Fatalf("then got %s #%d, want request #11", ev.Kind, ev.Seq)
	}
}

func TestHub_CancelClosesAndStopsDelivery(t *testing.T) {
	h := events.NewHub()
	ch, cancel := h.Subscribe(1)
	cancel()
	cancel()
	h.Publish(events.KindReset, nil)
	if _, ok := <-ch; ok {
		t.Fatal("channel still open after cancel")
	}
}

// TestHub_ListeningFollowsTheSubscribers: a publisher skips the work of
// an event (a read of the database) while nobody listens, so Listening
// must turn true as soon as someone subscribes and false when the last
// one leaves; the events published meanwhile keep their place in the
// sequence.
func TestHub_ListeningFollowsTheSubscribers(t *testing.T) {
	h := events.NewHub()
	if h.Listening() {
		t.Fatal("a new hub is listening")
	}
	h.Publish(events.KindRequest, map[string]int{"i": 1})
	ch, cancel := h.Subscribe(4)
	if !h.Listening() {
		t.Fatal("not listening with a subscriber")
	}
	h.Publish(events.KindRequest, map[string]int{"i": 2})
	if ev := <-ch; ev.Seq != 2 || string(ev.Data) != `{"i":2}` {
		t.Fatalf("got #%d %s, want #2 {\"i\":2}", ev.Seq, ev.Data)
	}
	_, cancel2 := h.Subscribe(1)
	cancel()
	if !h.Listening() {
		t.Fatal("not listening with one subscriber left of two")
	}
	cancel2()
	if h.Listening() {
		t.Fatal("still listening after every subscriber left")
	}
}

// TestServeHTTP_OutlivesTheServersWriteTimeout: a lab server's
// WriteTimeout bounds a whole answer, and the stream is one answer that
// never ends. Here the server's deadline has passed before the stream's
// first write: only a stream that sets its own deadlines gets through.
func TestServeHTTP_OutlivesTheServersWriteTimeout(t *testing.T) {
	h := events.NewHub()
	hs := httptest.NewUnstartedServer(h)
	hs.Config.WriteTimeout = time.Nanosecond
	hs.Start()
	defer hs.Close()
	resp, err := hs.Client().Get(hs.URL)
	if err != nil {
		t.Fatalf("the stream was cut by the server's WriteTimeout: %v", err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	if line, err := stream.ReadString('\n'); err != nil || !strings.HasPrefix(line, ": idemlab event stream") {
		t.Fatalf("first line %q, %v", line, err)
	}
	h.Publish(events.KindClock, map[string]string{"now": "then"})
	for {
		line, err := stream.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before its first event: %v", err)
		}
		if line == "event: clock\n" {
			return
		}
	}
}
