package events_test

import (
	"encoding/json"
	"testing"

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
