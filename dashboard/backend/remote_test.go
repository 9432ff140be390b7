package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"idemlab/dashboard"
)

// TestRemote_SaysWhenAReplicaGoesAndComesBack: with lab dash on lab
// serve --replicas N, a replica killed and started again left no line in
// the feed, while lab serve printed "exited" and "is back". The server
// has no event for a process of its own that dies; the replica's stream
// breaking and opening again is what the dashboard sees, and it says so,
// marked with the replica.
func TestRemote_SaysWhenAReplicaGoesAndComesBack(t *testing.T) {
	opened := make(chan struct{}, 4)
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		opened <- struct{}{}
		<-r.Context().Done()
	})
	one := httptest.NewServer(http.NotFoundHandler())
	defer one.Close()
	two := httptest.NewServer(stream)
	defer two.Close()

	// A bound, not a wait: without the stream events the test fails
	// here rather than hang.
	ctx, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	ch, cancel := NewRemote("admin", one.URL, two.URL).Subscribe(ctx)
	defer cancel()
	<-opened
	two.CloseClientConnections() // the replica's process dies; lab serve starts it again
	<-opened
	var got []dashboard.Stream
	for len(got) < 2 {
		ev, ok := <-ch
		if !ok {
			t.Fatalf("the streams ended with %d stream events, want the break and the reopening", len(got))
		}
		if ev.Kind != dashboard.KindStream {
			continue
		}
		var st dashboard.Stream
		if err := json.Unmarshal(ev.Data, &st); err != nil {
			t.Fatal(err)
		}
		if ev.Replica != 2 {
			t.Errorf("a stream event of replica %d, want 2", ev.Replica)
		}
		got = append(got, st)
	}
	if got[0].Open || !got[1].Open {
		t.Errorf("stream events %+v, want the break and then the reopening", got)
	}
}
