package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labctl"
)

// Remote is a lab server reached over HTTP: a student's `make serve`, or a
// stage running as a child process. It reads only what any lab server
// serves: /lab/events, /lab/state and the other /lab endpoints.
type Remote struct {
	// Base returns the server's base URL (a child process may move port
	// when it restarts).
	Base func() string
	// Token is the admin token.
	Token  string
	Client *http.Client
}

// NewRemote returns a remote backend for the server at url.
func NewRemote(url, token string) *Remote {
	url = strings.TrimRight(url, "/")
	return &Remote{Base: func() string { return url }, Token: token, Client: &http.Client{}}
}

// URL is the server's base URL.
func (r *Remote) URL() string { return r.Base() }

func (r *Remote) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.Base()+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.Client.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// State reads GET /lab/state.
func (r *Remote) State(ctx context.Context) (labctl.State, error) {
	var st labctl.State
	err := r.do(ctx, http.MethodGet, "/lab/state", nil, &st)
	return st, err
}

// Reset calls POST /lab/reset.
func (r *Remote) Reset(ctx context.Context, p bank.Params) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return r.do(ctx, http.MethodPost, "/lab/reset", body, nil)
}

// Arm calls POST /lab/faults.
func (r *Remote) Arm(ctx context.Context, point string, count int64) error {
	body, err := json.Marshal(map[string]any{"point": point, "count": count})
	if err != nil {
		return err
	}
	return r.do(ctx, http.MethodPost, "/lab/faults", body, nil)
}

// Configure calls POST /lab/config.
func (r *Remote) Configure(ctx context.Context, cfg map[string]string) error {
	body, err := jsonBody(cfg)
	if err != nil {
		return err
	}
	return r.do(ctx, http.MethodPost, "/lab/config", body, nil)
}

// Restart is not possible for a server this process did not start.
func (r *Remote) Restart(ctx context.Context) error {
	return errors.New("this server runs on its own: restart it where it runs")
}

// Close does nothing: the server is not ours.
func (r *Remote) Close() error { return nil }

// Subscribe reads GET /lab/events, reconnecting (with a short pause) when
// the stream breaks, until cancel is called or ctx ends. Events sent while
// the stream was down are missed; the state poll catches the executions
// among them (see Side.ApplyState).
func (r *Remote) Subscribe(ctx context.Context) (<-chan events.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan events.Event, 256)
	go func() {
		defer close(out)
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
			r.stream(ctx, out)
		}
	}()
	return out, cancel
}

// stream reads one connection of the event stream into out.
func (r *Remote) stream(ctx context.Context, out chan<- events.Event) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.Base()+"/lab/events", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := r.Client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	ReadSSE(resp.Body, func(ev events.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// ReadSSE parses a server-sent events stream as the kit writes it ("id:",
// "event:", "data:" lines, a blank line after each event, ":" comments),
// calling emit for each event until emit returns false or the stream ends.
// An event's Time is when it was read: the SSE lines carry none.
func ReadSSE(r io.Reader, emit func(events.Event) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev events.Event
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if ev.Kind != "" {
				ev.Data = data
				ev.Time = time.Now()
				if !emit(ev) {
					return nil
				}
			}
			ev, data = events.Event{}, nil
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			ev.Seq, _ = strconv.ParseInt(string(value), 10, 64)
		case "event":
			ev.Kind = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	return sc.Err()
}

func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}
