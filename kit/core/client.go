package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/idemkey"
	"idemlab/kit/request"
)

// HurriedTimeout is how long a request of postings waits for its answer
// when Hurried says so.
const HurriedTimeout = 100 * time.Millisecond

// Client posts to the core ledger over HTTP. It sends each posting once:
// when to send it again is the caller's decision (a relay's).
type Client struct {
	url   string
	token string
	http  *http.Client
	// Answered, when set, is called as the core's success answer has
	// arrived, before Post returns it, and as each answer to PostAll's
	// requests that acknowledged a posting has arrived, before PostAll
	// returns: where a lab server's crash point crash-after-post fires,
	// between a relay's send and its mark.
	Answered func()
	// Hurried, when set, is called as each request of postings starts,
	// alone or a batch; true makes that request give up waiting for its
	// answer after HurriedTimeout rather than the client's own timeout:
	// where a lab server's fault point core-timeout fires, so that a
	// check sees a call to a silent core given up without waiting 5 s.
	Hurried func() bool
	// unanswered counts the postings a customer's request waited on and
	// got no whole answer to (see Unanswered).
	unanswered atomic.Int64
	// givenUp counts every request to the core that got no whole answer
	// (see GivenUp).
	givenUp atomic.Int64
	// mu guards serving.
	mu sync.Mutex
	// serving holds the transfers made by customers' requests still being
	// served (see Serving).
	serving map[string]bool
}

// NewClient returns a client of the core at address, a URL that carries
// the core's token as its user (TokenURL); hc nil means a client of its
// own.
func NewClient(address string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	base, token := splitToken(address)
	return &Client{url: strings.TrimRight(base, "/"), token: token, http: hc, serving: map[string]bool{}}
}

// TokenURL is the address of the core at base whose service token is
// token: http://TOKEN@host:port, one string that a server process is
// given (server.Options.CoreURL) and that NewClient takes apart again, as
// a database URL carries its password.
func TokenURL(base, token string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.User = url.User(token)
	return u.String()
}

// splitToken takes the token out of an address made by TokenURL.
func splitToken(address string) (base, token string) {
	u, err := url.Parse(address)
	if err != nil || u.User == nil {
		return address, ""
	}
	token = u.User.Username()
	u.User = nil
	return u.String(), token
}

// URL is the core's base URL, without its token: what may be printed.
func (c *Client) URL() string { return c.url }

// Unanswered is how many postings of a transfer the client got no whole
// answer to (the core gone, a dropped connection, the caller's timeout)
// while the customer's request that made the transfer was still being
// served (see Serving), whoever sent them and under whatever context.
// That request was answered only after the give-up, so its answer waited
// for the core: through a call of its own, or through the relay's that it
// waited for. Not counted: a posting given up once its request was
// answered (the relay doing its job, or a call the request left running
// as it returned).
func (c *Client) Unanswered() int64 { return c.unanswered.Load() }

// GivenUp is how many requests to the core, a posting alone or a batch,
// the client got no whole answer to (the core gone, a dropped
// connection, the caller's timeout), whoever sent them and whenever:
// while the core holds every posting, the calls given up on. Counted
// before the call returns to its caller, so before anything the caller
// does next.
func (c *Client) GivenUp() int64 { return c.givenUp.Load() }

// Serving returns ctx marked as a customer's request being served, and
// the function to call as its handler returns: each transfer the bank
// makes under the returned context (bank.WithMade) is one whose postings
// given up on count as unanswered (see Unanswered) until then.
func (c *Client) Serving(ctx context.Context) (context.Context, func()) {
	var made []string // guarded by c.mu
	returned := false
	ctx = bank.WithMade(ctx, func(id string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		// A transfer made from a goroutine the handler left running is
		// made after the answer: it held no one up.
		if !returned {
			made = append(made, id)
			c.serving[id] = true
		}
	})
	return ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		returned = true
		for _, id := range made {
			delete(c.serving, id)
		}
	}
}

// noteUnanswered counts a request to the core that got no answer: given
// up, and unanswered too if it carried a posting of a transfer whose
// request is still being served.
func (c *Client) noteUnanswered(transfers ...string) {
	c.givenUp.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range transfers {
		if c.serving[id] {
			c.unanswered.Add(1)
			return
		}
	}
}

// Token is the core's service token the client sends, "" for none.
func (c *Client) Token() string { return c.token }

// authorize sets the core's token on req.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// Post sends p to the core under the Idempotency-Key key and returns the
// core's receipt: of this posting, or of the one first sent with key
// (replayed is then true). It returns an error when the core did not
// answer (the posting may or may not have been applied: send it again
// with the same key to find out), and a *Refusal when it answered
// anything but success, such as 503 while it is down (not applied).
func (c *Client) Post(ctx context.Context, key string, p Posting) (rc Receipt, replayed bool, err error) {
	body, err := json.Marshal(p)
	if err != nil {
		return Receipt{}, false, err
	}
	status, replayed, raw, err := c.send(ctx, "/postings", key, body, 64<<10)
	if err != nil {
		c.noteUnanswered(p.TransferID)
		return Receipt{}, false, fmt.Errorf("core: no answer to posting %s: %w", p.TransferID, err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return Receipt{}, false, &Refusal{TransferID: p.TransferID, Status: status, Body: bytes.TrimSpace(raw)}
	}
	if err := json.Unmarshal(raw, &rc); err != nil {
		return Receipt{}, false, fmt.Errorf("core: answer to posting %s: %w", p.TransferID, err)
	}
	if c.Answered != nil {
		c.Answered()
	}
	return rc, replayed, nil
}

// send posts body to the core at path, under the Idempotency-Key key
// unless key is "", and returns the status, whether the answer was marked
// replayed, and the body, of at most limit bytes. It returns an error when
// no whole answer arrived.
func (c *Client) send(ctx context.Context, path, key string, body []byte, limit int64) (status int, replayed bool, raw []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, false, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(idemkey.Header, key)
	}
	c.authorize(req)
	// net/http resends on its own a request with an Idempotency-Key whose
	// connection broke, if it can rewind the body: one send is one send.
	req.GetBody = nil
	hc := c.http
	if c.Hurried != nil && c.Hurried() {
		hurried := *hc
		hurried.Timeout = HurriedTimeout
		hc = &hurried
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false, nil, err
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return 0, false, nil, fmt.Errorf("answer cut off: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", raw, nil
}

// Postings reads every posting the core applied, in the order applied.
func (c *Client) Postings(ctx context.Context) ([]Receipt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/postings", nil)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
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

// ArmPoisonNext has the core reject for good the transfers of the next n
// postings it receives (POST /faults/poison-next; 0 disarms) and returns
// how many it now will. It returns an error if the core did not say so.
func (c *Client) ArmPoisonNext(ctx context.Context, n int64) (int64, error) {
	return c.poisonNext(ctx, http.MethodPost, fmt.Sprintf(`{"count":%d}`, n))
}

// PoisonNextLeft is how many of the next postings the core will still
// reject for good (GET /faults/poison-next). It returns an error if the
// core did not say.
func (c *Client) PoisonNextLeft(ctx context.Context) (int64, error) {
	return c.poisonNext(ctx, http.MethodGet, "")
}

func (c *Client) poisonNext(ctx context.Context, method, body string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+"/faults/poison-next", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("core: poison-next: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("core: poison-next: %s %s", resp.Status, bytes.TrimSpace(raw))
	}
	var out struct {
		Left *int64 `json:"left"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Left == nil {
		return 0, fmt.Errorf("core: poison-next: answer %q is not {\"left\": n}", raw)
	}
	return *out.Left, nil
}

// Refusal is the core's answer to a posting it did not apply: its status
// and its problem body, as they came. Post returns it as a *Refusal, for
// errors.As. Whole says the core refused, as one, the batch request of
// PostAll the posting went in, and not the posting itself.
type Refusal struct {
	TransferID string
	Status     int
	Body       []byte
	Whole      bool
}

func (r *Refusal) Error() string {
	if r.Whole {
		return fmt.Sprintf("core: the batch with posting %s refused: %d %s", r.TransferID, r.Status, r.Body)
	}
	return fmt.Sprintf("core: posting %s refused: %d %s", r.TransferID, r.Status, r.Body)
}

// Final reports whether the refusal is for good: the core refused the
// posting itself, and will refuse it however often it is sent under its
// key. That is a 422 (a transfer it does not know, a posting that is not
// the bank's, the key first used with another posting, a posting it
// rejects), a 400 (a posting or a key it cannot parse) and a 413 (a
// posting too large to send). Every other refusal says "not now", and the
// same posting may go through later: a 5xx, 408 (too slow), 409 (the same
// key still in progress), 429 (too many); and those of the request rather
// than of the posting, which someone mends and after which every posting
// goes through as it is: 401 and 403 (the caller's token), 404 and 405
// (the core's address), 415 (how the request was sent), and a batch
// refused whole (Whole: cut short on the way, say), which says nothing of
// its postings. Taken for good, each of those would make a dead letter of
// every posting sent while it lasted.
func (r *Refusal) Final() bool {
	if r.Whole {
		return false
	}
	switch r.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// Final reports whether err, from Post, is a refusal for good (see
// Refusal.Final). Every other error says "retry later": no answer at all
// (the posting may have been applied, and only the same key finds out), a
// cut answer, or a refusal for now.
func Final(err error) bool {
	var r *Refusal
	return errors.As(err, &r) && r.Final()
}

// Send is one posting of a batch for PostAll: the key it is posted under,
// the posting, and, once PostAll has returned, what became of it.
type Send struct {
	Key     string
	Posting Posting
	// Err is nil once the core acknowledged the posting; else the
	// core's *Refusal of it (of it alone, or of its whole request), an
	// error that says no answer came, or ErrNotSent.
	Err error
}

// ErrNotSent is the error of a posting PostAll did not send, because the
// requests before it were refused for now or got no answer: a core that
// is down would refuse them all. Send it again later.
var ErrNotSent = errors.New("core: not sent: the postings before it were refused for now")

// PostAll sends the postings of batch to the core's POST /postings/batch,
// each under its own key, in batch's order and in as few requests as the
// core takes (request.MaxBatch postings, request.MaxBatchBody bytes), up
// to parallel requests at once, and records in each what became of it:
// what the core answered for that posting, or, if it refused the whole
// request or did not answer, that refusal or error. It starts no more
// requests once parallel of them in a row have failed in a way that is
// not final (see Final) and acknowledged nothing: the core looks down,
// not flapping. The postings of those not started get ErrNotSent. A core
// that acknowledged some postings and refused others for now (a 503
// beside 201s) flaps: the refused ones are sent once more, under the same
// keys, before PostAll returns, rather than a pass later; those it
// refuses again keep the refusal. Answered is called once per request
// the core acknowledged a posting of. A panic in a send (a lab server's
// simulated crash, see Answered) is raised again in the caller's
// goroutine once the requests under way have ended.
func (c *Client) PostAll(ctx context.Context, batch []Send, parallel int) {
	sends := make([]*Send, len(batch))
	for i := range batch {
		sends[i] = &batch[i]
	}
	acked, stopped := c.postRound(ctx, sends, parallel)
	if acked == 0 || stopped {
		return
	}
	var again []*Send
	for _, s := range sends {
		var r *Refusal
		if errors.As(s.Err, &r) && !r.Final() {
			again = append(again, s)
		}
	}
	if len(again) > 0 {
		c.postRound(ctx, again, parallel)
	}
}

// postRound is one round of PostAll over sends. It reports how many the
// core acknowledged, and whether it stopped starting requests.
func (c *Client) postRound(ctx context.Context, sends []*Send, parallel int) (acked int, stopped bool) {
	parallel = max(parallel, 1)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failing  int
		stop     bool
		panicked any
	)
	slots := make(chan struct{}, parallel)
	chunks := chunk(sends)
	for i, ch := range chunks {
		slots <- struct{}{}
		mu.Lock()
		stopped = stop
		mu.Unlock()
		if stopped {
			<-slots
			for _, rest := range chunks[i:] {
				for _, s := range rest.sends {
					s.Err = ErrNotSent
				}
			}
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer func() {
				if v := recover(); v != nil {
					mu.Lock()
					panicked, stop = v, true
					mu.Unlock()
				}
			}()
			n, err := c.postBatch(ctx, ch)
			mu.Lock()
			defer mu.Unlock()
			acked += n
			switch {
			case n > 0:
				failing = 0
			case err != nil && !Final(err):
				failing++
				stop = stop || failing >= parallel
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	mu.Lock()
	defer mu.Unlock()
	return acked, stopped || stop
}

// chunkOf is the postings of one request of PostAll, and its body.
type chunkOf struct {
	sends []*Send
	body  []byte
}

// chunk cuts sends into requests the core takes: at most
// request.MaxBatch postings and request.MaxBatchBody bytes each, in
// order. A posting too large for any batch goes alone, for the core to
// refuse.
func chunk(sends []*Send) []chunkOf {
	var out []chunkOf
	var cur chunkOf
	flush := func() {
		if len(cur.sends) > 0 {
			cur.body = append(cur.body, ']')
			out = append(out, cur)
		}
		cur = chunkOf{}
	}
	for _, s := range sends {
		// Strings and a number: marshalling them cannot fail.
		m, _ := json.Marshal(Member{Key: s.Key, Posting: s.Posting})
		if len(cur.sends) == request.MaxBatch || len(cur.body)+len(m)+2 > request.MaxBatchBody {
			flush()
		}
		if len(cur.sends) == 0 {
			cur.body = append(cur.body, '[')
		} else {
			cur.body = append(cur.body, ',')
		}
		cur.body = append(cur.body, m...)
		cur.sends = append(cur.sends, s)
	}
	flush()
	return out
}

// postBatch sends one chunk's request and records in each of its sends
// what became of it. It returns how many postings the core acknowledged,
// and the error of the whole request: the core's *Refusal of it, or that
// no usable answer came; nil when the core answered posting by posting.
func (c *Client) postBatch(ctx context.Context, ch chunkOf) (acked int, err error) {
	first := ch.sends[0].Posting.TransferID
	status, _, raw, err := c.send(ctx, "/postings/batch", "", ch.body, int64(request.MaxBatchBody))
	if err != nil {
		ids := make([]string, len(ch.sends))
		for i, s := range ch.sends {
			ids[i] = s.Posting.TransferID
		}
		c.noteUnanswered(ids...)
		err = fmt.Errorf("core: no answer to the batch of %d postings from %s: %w", len(ch.sends), first, err)
		return 0, failAll(ch.sends, err)
	}
	if status != http.StatusOK {
		// Refused whole: each posting was refused as the request was, and
		// the refusal says nothing of any one of them (a batch cut short
		// on the way is invalid-batch whatever it held), but for a
		// posting too large for any batch, which goes alone: its 413 is
		// its own.
		body := bytes.TrimSpace(raw)
		own := status == http.StatusRequestEntityTooLarge && len(ch.sends) == 1
		for _, s := range ch.sends {
			s.Err = &Refusal{TransferID: s.Posting.TransferID, Status: status, Body: body, Whole: !own}
		}
		return 0, ch.sends[0].Err
	}
	var results []Result
	if err := json.Unmarshal(raw, &results); err != nil || len(results) != len(ch.sends) {
		err = fmt.Errorf("core: the answer to the batch of %d postings from %s is no list of as many results (%d read): %v", len(ch.sends), first, len(results), err)
		return 0, failAll(ch.sends, err)
	}
	for i, s := range ch.sends {
		switch res := results[i]; res.Status {
		case http.StatusCreated, http.StatusOK:
			s.Err = nil
			acked++
		default:
			s.Err = &Refusal{TransferID: s.Posting.TransferID, Status: res.Status, Body: res.Body}
		}
	}
	if acked > 0 && c.Answered != nil {
		c.Answered()
	}
	return acked, nil
}

// failAll gives each of sends err, what became of their whole request,
// and returns it.
func failAll(sends []*Send, err error) error {
	for _, s := range sends {
		s.Err = err
	}
	return err
}
