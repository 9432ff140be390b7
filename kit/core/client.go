package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"idemlab/kit/idemkey"
)

// Client posts to the core ledger over HTTP. It sends each posting once:
// when to send it again is the caller's decision (a relay's).
type Client struct {
	url  string
	http *http.Client
	// Answered, when set, is called as the core's success answer has
	// arrived, before Post returns it: where a lab server's crash point
	// crash-after-post fires, between a relay's send and its mark.
	Answered func()
}

// NewClient returns a client of the core at url; hc nil means a client of
// its own.
func NewClient(url string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{url: strings.TrimRight(url, "/"), http: hc}
}

// URL is the core's base URL.
func (c *Client) URL() string { return c.url }

// Post sends p to the core under the Idempotency-Key key and returns the
// core's receipt: of this posting, or of the one first sent with key
// (replayed is then true). It returns an error when the core did not
// answer (the posting may or may not have been applied: send it again
// with the same key to find out), and when it answered anything but
// success, such as 503 while it is down (not applied).
func (c *Client) Post(ctx context.Context, key string, p Posting) (rc Receipt, replayed bool, err error) {
	body, err := json.Marshal(p)
	if err != nil {
		return Receipt{}, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/postings", bytes.NewReader(body))
	if err != nil {
		return Receipt{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemkey.Header, key)
	// net/http resends on its own a request with an Idempotency-Key whose
	// connection broke, if it can rewind the body: one send is one send.
	req.GetBody = nil
	resp, err := c.http.Do(req)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("core: no answer to posting %s: %w", p.TransferID, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Receipt{}, false, fmt.Errorf("core: answer to posting %s cut off: %w", p.TransferID, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Receipt{}, false, fmt.Errorf("core: posting %s refused: %d %s", p.TransferID, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, &rc); err != nil {
		return Receipt{}, false, fmt.Errorf("core: answer to posting %s: %w", p.TransferID, err)
	}
	if c.Answered != nil {
		c.Answered()
	}
	return rc, resp.Header.Get("Idempotent-Replayed") == "true", nil
}

// Postings reads every posting the core applied, in the order applied.
func (c *Client) Postings(ctx context.Context) ([]Receipt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/postings", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("core: read the postings: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("core: read the postings: %s", resp.Status)
	}
	var out []Receipt
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("core: read the postings: %w", err)
	}
	return out, nil
}
