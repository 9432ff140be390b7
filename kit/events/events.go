// Package events is the lab's event stream: a hub that fans events out to
// subscribers, and the server-sent events endpoint GET /lab/events that the
// dashboard reads.
//
// A subscriber that falls behind is never blocked on and never silently
// starved: events it could not take are counted, and the next event it does
// take is preceded by a "dropped" event carrying that count.
package events

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of event: the event field of GET /lab/events (docs/api.md).
const (
	KindRequest   = "request"
	KindExecution = "execution"
	KindKey       = "key"
	KindFault     = "fault"
	KindReset     = "reset"
	KindClock     = "clock"
	KindDropped   = "dropped"
	// KindPurge reports a purge the server ran on its own that failed.
	KindPurge = "purge"
	// KindRedrive reports a dead letter an operator sent again (POST
	// /lab/outbox/redrive, stage 9): its data is the dead letter as it was
	// (bank.DeadLetter), and the relay sends its row on a later pass.
	KindRedrive = "redrive"
	// KindListen reports that the server stopped hearing of key-row
	// changes (PostgreSQL's LISTEN connection was lost: data Listen with
	// an error) and that it hears them again (reconnected), after which
	// it sends every key row anew, as "key" events.
	KindListen = "listen"
)

// Event is one thing that happened in a lab server.
type Event struct {
	Seq  int64           `json:"seq"`
	Kind string          `json:"kind"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
	// Replica is the server process the event came from, 1 to N, when a
	// reader merges the streams of N replicas on one database; 0 when it
	// reads one server. Each replica numbers its events (Seq) on its own.
	Replica int `json:"replica,omitempty"`
}

// Request is the data of a "request" event.
type Request struct {
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Customer   string  `json:"customer,omitempty"`
	Key        string  `json:"key,omitempty"`
	Status     int     `json:"status"`
	Type       string  `json:"type,omitempty"`
	Replayed   bool    `json:"replayed"`
	DurationMS float64 `json:"duration_ms"`
	Op         string  `json:"op,omitempty"`
	// Attempt is the request's Lab-Attempt header: the grader names each
	// request it sends, so that its timeline puts an execution on the
	// lane of the request that caused it.
	Attempt string `json:"attempt,omitempty"`
	// Cause is, for a 5xx, the error behind it as the server logged it:
	// the client sees only the problem type, and a student reading why a
	// check got 500 needs the database's words ("current transaction is
	// aborted"). Only lab mode's admin stream carries it.
	Cause string `json:"cause,omitempty"`
}

// AttemptHeader is the request header a grader names its requests with;
// the "request" and "execution" events carry it.
const AttemptHeader = "Lab-Attempt"

// Key is the data of a "key" event: a row of idempotency_keys as it is now
// (column name → value), or Deleted. At is when the server heard the
// last commit that changed it before it read the row to publish it: the
// event itself goes out later, and a request that read the committed row
// can be answered in between. Zero when the row was sent anew rather than
// heard changed (after the event stream reconnected).
type Key struct {
	RowID   int64          `json:"rowid"`
	Row     map[string]any `json:"row,omitempty"`
	Deleted bool           `json:"deleted,omitempty"`
	At      time.Time      `json:"at,omitzero"`
}

// Listen is the data of a "listen" event.
type Listen struct {
	Listening bool   `json:"listening"`
	Error     string `json:"error,omitempty"`
}

// Clock is the data of a "clock" event: the lab time after a POST
// /lab/clock, and whether that request moved the clock (false for a move
// by nothing, which graders send to learn that every event published
// before it has been heard).
type Clock struct {
	Now   string `json:"now"`
	Moved bool   `json:"moved"`
}

// Dropped is the data of a "dropped" event.
type Dropped struct {
	Count int64 `json:"count"`
}

// Hub is safe for concurrent use. The zero value is not usable; use NewHub.
type Hub struct {
	mu   sync.Mutex
	seq  int64
	subs map[*subscriber]struct{}
	now  func() time.Time
	// listeners is len(subs), readable without the lock (Listening).
	listeners atomic.Int64
}

type subscriber struct {
	ch      chan Event
	dropped int64
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{subs: map[*subscriber]struct{}{}, now: time.Now}
}

// Publish sends an event of kind with data (marshalled to JSON) to every
// subscriber, without waiting for any of them. With no subscriber, the
// event only takes its sequence number: nobody is there to read it.
func (h *Hub) Publish(kind string, data any) {
	if !h.Listening() {
		h.mu.Lock()
		h.seq++
		h.mu.Unlock()
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev := Event{Seq: h.seq, Kind: kind, Time: h.now().UTC(), Data: raw}
	for s := range h.subs {
		s.send(ev)
	}
}

func (s *subscriber) send(ev Event) {
	if s.dropped > 0 {
		raw, _ := json.Marshal(Dropped{Count: s.dropped})
		select {
		case s.ch <- Event{Seq: ev.Seq, Kind: KindDropped, Time: ev.Time, Data: raw}:
			s.dropped = 0
		default:
			s.dropped++
			return
		}
	}
	select {
	case s.ch <- ev:
	default:
		s.dropped++
	}
}

// Listening reports whether anyone is subscribed now. A publisher whose
// event costs work to make (a read of the database) can skip that work when
// nobody is: an event published with no subscriber reaches no one.
func (h *Hub) Listening() bool { return h.listeners.Load() > 0 }

// Subscribe returns a channel of events with room for buffer of them, and a
// function that ends the subscription and closes the channel.
func (h *Hub) Subscribe(buffer int) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, buffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.listeners.Add(1)
	h.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.listeners.Add(-1)
			h.mu.Unlock()
			close(s.ch)
		})
	}
}

// StreamWriteTimeout is how long one write of the event stream may take:
// a reader that takes nothing for that long is cut off.
const StreamWriteTimeout = 30 * time.Second

// ServeHTTP streams events as server-sent events: "id:" the sequence
// number, "event:" the kind, "data:" one JSON object. A comment line every
// 15 seconds keeps idle connections open.
//
// A stream lives longer than the server's WriteTimeout, which bounds a
// whole answer; it gives each of its writes a deadline of its own instead
// (StreamWriteTimeout), so that a reader that keeps reading is never cut
// off and one that stops is.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	rc := http.NewResponseController(w)
	extend := func() { rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout)) }
	ch, cancel := h.Subscribe(4096)
	defer cancel()
	extend()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": idemlab event stream\n\n")
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			extend()
			fmt.Fprint(w, ": keepalive\n\n")
			flusher.Flush()
		case ev, ok := <-ch:
			if !ok {
				return
			}
			extend()
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, ev.Data)
			// Send what is queued in one write before flushing.
			for more := true; more; {
				select {
				case ev, ok := <-ch:
					if !ok {
						return
					}
					fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, ev.Data)
				default:
					more = false
				}
			}
			flusher.Flush()
		}
	}
}
