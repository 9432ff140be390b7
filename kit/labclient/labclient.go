// Package labclient is the one client of the lab API (docs/api.md, "Lab
// endpoints"): reset, state, config, faults, clock, purge and the event
// stream of a lab server, with the admin token. The grader, the replay
// and the dashboard all reach a lab server through it.
package labclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labctl"
	"idemlab/kit/stage"
)

// Client calls the /lab endpoints of one lab server.
type Client struct {
	// Base returns the server's base URL. It is a function because a
	// server run as a child process may move port when it restarts.
	Base func() string
	// Token is the admin token.
	Token string
	// HTTP carries the requests; nil means http.DefaultClient.
	HTTP *http.Client
}

// New returns a client of the lab server at url with the admin token.
func New(url, token string, hc *http.Client) *Client {
	url = strings.TrimRight(url, "/")
	return &Client{Base: func() string { return url }, Token: token, HTTP: hc}
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.Base() }

func (c *Client) http() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// Error is a lab endpoint's answer other than 200.
type Error struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *Error) Error() string {
	if e.Status == http.StatusUnauthorized {
		return fmt.Sprintf("%s %s: the server refused the admin token (lab serve prints it at start)", e.Method, e.Path)
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// do sends one lab request with in as its JSON body (nil sends none) and
// decodes a 200 answer into out (nil ignores it). It returns the
// transport's error, an *Error for any other status, or the decoding's.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base()+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Body: string(bytes.TrimSpace(raw))}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// Reset gives the server a fresh population (POST /lab/reset) and returns
// its customers, with the tokens it handed out.
func (c *Client) Reset(ctx context.Context, p bank.Params) ([]bank.Customer, error) {
	var out struct {
		Customers []bank.Customer `json:"customers"`
	}
	err := c.do(ctx, http.MethodPost, "/lab/reset", p, &out)
	return out.Customers, err
}

// State reads GET /lab/state.
func (c *Client) State(ctx context.Context) (labctl.State, error) {
	var st labctl.State
	err := c.do(ctx, http.MethodGet, "/lab/state", nil, &st)
	return st, err
}

// Outbox reads the outbox's counts and dead letters (GET /lab/outbox):
// what GET /lab/state says of them, without the rest.
func (c *Client) Outbox(ctx context.Context) (labctl.Outbox, error) {
	var o labctl.Outbox
	err := c.do(ctx, http.MethodGet, "/lab/outbox", nil, &o)
	return o, err
}

// Redrive sends the dead letter of transferID again (POST
// /lab/outbox/redrive): its row is owed again, under its key, and the
// answer is the dead letter as it was. A transfer whose row is not a dead
// letter gets an *Error with status 404.
func (c *Client) Redrive(ctx context.Context, transferID string) (bank.DeadLetter, error) {
	var out struct {
		Redriven bank.DeadLetter `json:"redriven"`
	}
	err := c.do(ctx, http.MethodPost, "/lab/outbox/redrive", map[string]string{"transfer_id": transferID}, &out)
	return out.Redriven, err
}

// TransferOps reads a page of the executed transfers (GET
// /lab/transfers): those whose id sorts after after, in the order of
// their ids, at most limit (1 to bank.MaxListed), each with the
// operation that made it and its amount. A page shorter than limit is the
// last.
func (c *Client) TransferOps(ctx context.Context, after string, limit int) ([]bank.Executed, error) {
	var out struct {
		Transfers []bank.Executed `json:"transfers"`
	}
	err := c.do(ctx, http.MethodGet, pagePath("/lab/transfers", after, limit), nil, &out)
	return out.Transfers, err
}

// DepositOps reads a page of the executed deposits (GET /lab/deposits)
// as TransferOps reads transfers.
func (c *Client) DepositOps(ctx context.Context, after string, limit int) ([]bank.Executed, error) {
	var out struct {
		Deposits []bank.Executed `json:"deposits"`
	}
	err := c.do(ctx, http.MethodGet, pagePath("/lab/deposits", after, limit), nil, &out)
	return out.Deposits, err
}

// pagePath is the request for the page of the listing at path after
// after, at most limit long.
func pagePath(path, after string, limit int) string {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	return path + "?" + q.Encode()
}

// Config is a change of the lab config (POST /lab/config). A member left
// zero is not sent, and the server keeps what it has: the endpoint takes
// every member as optional. Only the core latency may be zero, so it alone
// has a switch that sets it to zero; a latency that may be zero is set
// with WithCoreLatency, never as Config{CoreLatency: d}, which leaves the
// last latency in force when d is zero.
type Config struct {
	CoreLatency  time.Duration
	Retention    time.Duration
	Lease        time.Duration
	RetryHorizon time.Duration
	// NoCoreLatency sets the core latency to zero.
	NoCoreLatency bool
}

// Whole is the change that sets every member to c's.
func Whole(c stage.Config) Config {
	return Config{
		Retention: c.Retention, Lease: c.Lease, RetryHorizon: c.RetryHorizon,
	}.WithCoreLatency(c.CoreLatency)
}

// WithCoreLatency is c with the core latency set to d, zero included.
func (c Config) WithCoreLatency(d time.Duration) Config {
	c.CoreLatency, c.NoCoreLatency = d, d == 0
	return c
}

// Wire is the body of POST /lab/config for the change: the members set,
// as Go duration strings.
func (c Config) Wire() map[string]string {
	out := map[string]string{}
	put := func(name string, d time.Duration) {
		if d != 0 {
			out[name] = d.String()
		}
	}
	put("core_latency", c.CoreLatency)
	if c.NoCoreLatency {
		out["core_latency"] = "0s"
	}
	put("retention", c.Retention)
	put("lease", c.Lease)
	put("retry_horizon", c.RetryHorizon)
	return out
}

// Configure changes the members c sets and returns the config now in
// force. The server refuses a change that leaves the retention no longer
// than the retry horizon, and changes nothing then.
func (c *Client) Configure(ctx context.Context, change Config) (stage.Config, error) {
	var out labctl.ConfigJSON
	if err := c.do(ctx, http.MethodPost, "/lab/config", change.Wire(), &out); err != nil {
		return stage.Config{}, err
	}
	return parseConfig(out)
}

// Config reads the config in force (GET /lab/config).
func (c *Client) Config(ctx context.Context) (stage.Config, error) {
	var out labctl.ConfigJSON
	if err := c.do(ctx, http.MethodGet, "/lab/config", nil, &out); err != nil {
		return stage.Config{}, err
	}
	return parseConfig(out)
}

func parseConfig(w labctl.ConfigJSON) (stage.Config, error) {
	var cfg stage.Config
	for _, m := range []struct {
		name string
		s    string
		dst  *time.Duration
	}{
		{"core_latency", w.CoreLatency, &cfg.CoreLatency}, {"retention", w.Retention, &cfg.Retention},
		{"lease", w.Lease, &cfg.Lease}, {"retry_horizon", w.RetryHorizon, &cfg.RetryHorizon},
	} {
		d, err := time.ParseDuration(m.s)
		if err != nil {
			return stage.Config{}, fmt.Errorf("the server's config: %s: %w", m.name, err)
		}
		*m.dst = d
	}
	return cfg, nil
}

// Arm arms count occurrences of a fault point (labctl.Points; POST
// /lab/faults); a count of 0 disarms it.
func (c *Client) Arm(ctx context.Context, point string, count int64) error {
	return c.do(ctx, http.MethodPost, "/lab/faults", map[string]any{"point": point, "count": count}, nil)
}

// Armed reads how many more times each armed fault point will fire (GET
// /lab/faults); a point it does not name will not fire.
func (c *Client) Armed(ctx context.Context) (map[string]int64, error) {
	var out struct {
		Armed []labctl.ArmedFault `json:"armed"`
	}
	if err := c.do(ctx, http.MethodGet, "/lab/faults", nil, &out); err != nil {
		return nil, err
	}
	left := map[string]int64{}
	for _, f := range out.Armed {
		left[f.Point] = f.Count
	}
	return left, nil
}

// Advance moves the lab clock on by d (POST /lab/clock) and returns the
// lab time now.
func (c *Client) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	return c.moveClock(ctx, map[string]string{"advance": d.String()})
}

// Set moves the lab clock to at (POST /lab/clock), forward or back, and
// returns the lab time now.
func (c *Client) Set(ctx context.Context, at time.Time) (time.Time, error) {
	return c.moveClock(ctx, map[string]string{"set": at.UTC().Format(time.RFC3339Nano)})
}

// Now reads the lab time (GET /lab/clock): one small answer, where the
// lab state would read every account and key row, and nothing moves.
func (c *Client) Now(ctx context.Context) (time.Time, error) {
	return c.clock(ctx, http.MethodGet, nil)
}

// moveClock posts move to /lab/clock and returns the lab time the answer
// gives.
func (c *Client) moveClock(ctx context.Context, move map[string]string) (time.Time, error) {
	return c.clock(ctx, http.MethodPost, move)
}

// clock sends method to /lab/clock, with body unless it is nil, and
// returns the lab time the answer gives.
func (c *Client) clock(ctx context.Context, method string, body any) (time.Time, error) {
	var out struct {
		Now time.Time `json:"now"`
	}
	err := c.do(ctx, method, "/lab/clock", body, &out)
	return out.Now, err
}

// Purge asks the server to purge expired keys (POST /lab/purge) and
// reports how many went.
func (c *Client) Purge(ctx context.Context) (int64, error) {
	p, err := c.PurgeAnswer(ctx)
	return p.Count, err
}

// Purged is the answer of POST /lab/purge.
type Purged struct {
	Count int64 `json:"purged"`
	// Note says why nothing could be purged: the stage has no purge
	// (labctl.NoPurge); empty when it has one.
	Note string `json:"note,omitempty"`
}

// PurgeAnswer asks the server to purge expired keys (POST /lab/purge) and
// returns its whole answer.
func (c *Client) PurgeAnswer(ctx context.Context) (Purged, error) {
	var out Purged
	err := c.do(ctx, http.MethodPost, "/lab/purge", nil, &out)
	return out, err
}

// Events reads one connection of GET /lab/events, calling emit for each
// event until emit returns false, the stream ends or ctx ends. It returns
// an error if the stream could not be opened or broke.
func (c *Client) Events(ctx context.Context, emit func(events.Event) bool) error {
	s, err := c.OpenEvents(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Read(emit)
}

// Stream is one open connection of GET /lab/events.
type Stream struct {
	body io.ReadCloser
}

// OpenEvents opens GET /lab/events and returns once the server has
// answered: from then on, every event the server publishes is on the
// stream (a reader that falls far behind is told how many were dropped).
// It returns an error if the stream could not be opened. The stream lives
// until ctx ends, the server goes away or Close.
func (c *Client) OpenEvents(ctx context.Context) (*Stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base()+"/lab/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /lab/events: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &Error{Method: http.MethodGet, Path: "/lab/events", Status: resp.StatusCode, Body: string(bytes.TrimSpace(raw))}
	}
	return &Stream{body: resp.Body}, nil
}

// Read calls emit for each event until emit returns false or the stream
// ends; it returns the error that broke the stream, if any (see
// events.Read).
func (s *Stream) Read(emit func(events.Event) bool) error { return events.Read(s.body, emit) }

// Close closes the stream; a Read under way returns.
func (s *Stream) Close() error { return s.body.Close() }
