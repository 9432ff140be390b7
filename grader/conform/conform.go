// Package conform runs the course's attacks against any HTTP API that
// takes an Idempotency-Key, through its public API only: the operation a
// profile names and, if the profile has one, a witness that reads the
// operation's effect. It never calls a lab endpoint.
//
// Each scenario gives two verdicts, kept apart as the grader keeps them:
// the money (read from the witness before and after, never from a status
// or a header the server chose) and the contract, a requirement of the
// IETF draft draft-ietf-httpapi-idempotency-key-header-07, cited by
// section with its own level (MUST, SHOULD).
package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"idemlab/grader/dayplan"
	"idemlab/grader/faultnet"
	"idemlab/grader/history"
	"idemlab/kit/canonical"
)

// Draft is the document the contract verdicts cite.
const Draft = "draft-ietf-httpapi-idempotency-key-header-07"

// Money verdicts.
const (
	MoneyClean      = "clean"
	MoneyHarmed     = "harmed"
	MoneyUnobserved = "could not observe"
)

// Contract verdicts.
const (
	ContractMet   = "met"
	ContractUnmet = "unmet"
	// ContractUnobserved: no request the requirement is about got an
	// answer (each a transport error or a timeout), so what the API
	// chose to answer was never seen.
	ContractUnobserved = "could not observe"
)

// Requirement is a second requirement of the draft that a scenario's
// answers are judged by, apart from its first, with its own citation and
// verdict: concurrent-duplicates' §2.7 SHOULD (409), beside §2.6's MUST
// (a resource conflict error), so that a 423 meets the one and misses
// the other.
type Requirement struct {
	Section  string `json:"section"`
	Level    string `json:"level"`
	Claim    string `json:"claim"`
	Contract string `json:"contract,omitempty"`
	Expected string `json:"expected,omitempty"`
}

// Result is what one scenario found.
type Result struct {
	ID    string `json:"id"`
	Claim string `json:"claim"`
	// ClaimMoney and ClaimContract are the Claim's two halves, each the
	// one its verdict judges: what the money must show, and what the
	// draft requires (empty for a money scenario).
	ClaimMoney    string `json:"claim_money"`
	ClaimContract string `json:"claim_contract,omitempty"`
	// Section and Level cite the draft ("2.6", "MUST"); empty for the
	// course's money scenarios, which the draft does not state.
	Section string `json:"section,omitempty"`
	Level   string `json:"level,omitempty"`
	// Money is MoneyClean, MoneyHarmed or MoneyUnobserved; Contract is
	// ContractMet, ContractUnmet, ContractUnobserved or empty when the scenario states no
	// requirement of the draft.
	Money    string `json:"money,omitempty"`
	Contract string `json:"contract,omitempty"`
	// Also is the second requirement, if the scenario states one: its
	// claim, citation and verdict, reported apart from the first.
	Also *Requirement `json:"also,omitempty"`
	// NotTried says why the scenario did not run; its verdicts are empty.
	NotTried string `json:"not_tried,omitempty"`
	// Saw is what the witness read; Sent and Got what the API was sent
	// and answered; Expected what the draft or the money required.
	Saw      string `json:"saw,omitempty"`
	Sent     string `json:"sent,omitempty"`
	Got      string `json:"got,omitempty"`
	Expected string `json:"expected,omitempty"`
	// Note qualifies a verdict with what the run could not see: a race
	// whose copies all came as one answer, none seen while the original
	// ran, may never have been reached.
	Note string `json:"note,omitempty"`
}

// Options are a conform run's settings.
type Options struct {
	// URL is the API's base URL, without a trailing slash.
	URL     string
	Profile *Profile
	// Seed draws the amounts and unique values; the keys are fresh for
	// every run (see runner.run).
	Seed uint64
	// MaxOperations bounds how many requests the run sends to the
	// operation, each of which could create something on a server that
	// ignores keys; a scenario that could go over it is not tried, and
	// the operation that settles a list left short (see settle) is sent
	// only while it leaves one.
	MaxOperations int
	// Timeout bounds each request.
	Timeout time.Duration
}

// runner holds a run's clients and draws.
type runner struct {
	Options
	rng    *rand.Rand
	mu     sync.Mutex
	client *http.Client
	budget int
	keys   int
	// run is drawn fresh for every run, never from the seed: it sets
	// the run's keys apart from every earlier run's, which the server
	// may still keep. A key repeated from a run with the same seed
	// would be a retry, answered with the old result and never executed.
	run uint32
	// first is the answer to the run's first request to the operation,
	// firstBy the principal who sent it, and answered whether there has
	// been one (see reached).
	first    answer
	firstBy  int
	answered bool
	// other is first once its scenario is over: an answer to an
	// operation of no later scenario (see handedOver).
	other answer
}

// Run runs every scenario against the API and returns their results, in
// the order of scenarios. It returns an error, before it sends anything,
// if a principal's placeholders cannot be filled in (a var or an
// environment variable missing) or its witness cannot be read; and
// during the run if a witness stops answering, or if the run's first
// request to the operation met no API (see reached). An API that stops
// answering later is a finding, not an error.
func Run(ctx context.Context, o Options) ([]Result, error) {
	r := newRunner(o)
	var sends []http.Header
	for i, p := range o.Profile.Principals {
		if _, err := o.Profile.newOp(rand.New(rand.NewPCG(0, 0)), i); err != nil {
			return nil, fmt.Errorf("principal %s: body: %w", p.Name, err)
		}
		if _, err := o.Profile.expand(o.Profile.Operation.Path, i, 0, ""); err != nil {
			return nil, fmt.Errorf("principal %s: path: %w", p.Name, err)
		}
		h := http.Header{}
		if err := o.Profile.headers(h, i); err != nil {
			return nil, fmt.Errorf("principal %s: headers: %w", p.Name, err)
		}
		// Two principals the API cannot tell apart are one caller: its
		// right answers to one would be reported as a leak between two.
		for j, other := range sends {
			if maps.EqualFunc(h, other, slices.Equal) {
				return nil, fmt.Errorf("principals: %s and %s send the same headers, so the API cannot tell them apart: give each its own credentials", o.Profile.Principals[j].Name, p.Name)
			}
		}
		sends = append(sends, h)
		if o.Profile.Witness != nil {
			if _, err := r.witness(ctx, i); err != nil {
				return nil, fmt.Errorf("principal %s: the witness cannot be read: %w", p.Name, err)
			}
		}
	}
	var out []Result
	for _, s := range scenarios {
		res := s.result()
		switch {
		case s.Principals > len(o.Profile.Principals):
			res.NotTried = fmt.Sprintf("needs %d principals; the profile has %d", s.Principals, len(o.Profile.Principals))
		case s.Edit && len(o.Profile.Edit) == 0:
			res.NotTried = "needs the profile's edit member"
		case s.Expiry && o.Profile.Expiry == nil:
			res.NotTried = `the profile publishes no expiry: give "expiry": {"after": "24h"} as the API's documentation states it (the draft asks that it publish one)`
		case s.Restart && o.Profile.Restart == "":
			res.NotTried = "could not observe: the profile gives no restart command, and conform cannot restart a server it does not run"
		case s.sends(o.Profile) > r.budget:
			res.NotTried = fmt.Sprintf("sends the operation up to %d times; --max-operations leaves %d", s.sends(o.Profile), r.budget)
		default:
			r.budget -= s.sends(o.Profile)
			if err := s.Run(ctx, r, &res); err != nil {
				return out, fmt.Errorf("%s: %w", s.ID, err)
			}
			if err := r.reached(); err != nil {
				return out, err
			}
			r.other = r.first
		}
		out = append(out, res)
	}
	return out, nil
}

// newRunner makes a run's clients and draws from o.
func newRunner(o Options) *runner {
	r := &runner{Options: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), budget: o.MaxOperations, run: rand.Uint32()}
	base := http.DefaultTransport.(*http.Transport).Clone()
	r.client = &http.Client{Transport: base, Timeout: o.Timeout}
	return r
}

// answer is what one request got: a status and body, or a transport
// error.
type answer struct {
	status int
	body   []byte
	header http.Header
	// url is the request's, which a relative Location is read against.
	url *url.URL
	err error
}

func (a answer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	if len(bytes.TrimSpace(a.body)) == 0 {
		return fmt.Sprintf("%d with an empty body", a.status)
	}
	return fmt.Sprintf("%d %s", a.status, clip(a.body))
}

func (a answer) ok() bool { return a.err == nil && a.status >= 200 && a.status < 300 }

// readable reports whether a's body can carry the operation's answer: a
// JSON value, or nothing at all under 204 No Content, which says so.
func (a answer) readable() bool {
	if a.status == http.StatusNoContent {
		return true
	}
	return json.Valid(a.body)
}

// conflict reports whether a is a resource conflict error, what §2.6
// requires for a request that meets the original still running: 409
// Conflict, the status §2.7 asks for, or 423 Locked (RFC 4918 §11.3: the
// resource is locked), each saying the resource is busy. Not 429 (a rate
// limit: the client sent too much, not the resource busy) nor 425 Too
// Early (RFC 8470: early data the server will not risk replaying): they
// say nothing of the resource, and a copy that got one is no conflict
// seen.
func (a answer) conflict() bool {
	return a.err == nil && (a.status == http.StatusConflict || a.status == http.StatusLocked)
}

// refused reports whether a is a 4xx: the request was turned away.
func (a answer) refused() bool { return a.err == nil && a.status >= 400 && a.status < 500 }

// same reports whether a and b are the same answer: status and body.
// It compares two operations' answers (a result handed over) and groups
// answers for a report; a retry's answer to its original's is compared
// by replays, which asks for more.
func (a answer) same(b answer) bool {
	return a.err == nil && b.err == nil && a.status == b.status && bytes.Equal(a.body, b.body)
}

// says reports whether a tells its client what b does: the same status,
// and the same body or, both being JSON, the same JSON value (their RFC
// 8785 forms alike, canonical.Form: members in another order, or numbers
// spelled otherwise, are other bytes of the same result).
func (a answer) says(b answer) bool {
	return a.err == nil && b.err == nil && a.status == b.status && bytes.Equal(canonical.Form(a.body), canonical.Form(b.body))
}

// replayHeaders are the headers that are part of an operation's result,
// which a retry answered with that result (§2.6) must carry as the
// original did: Content-Type says how to read the body (the same bytes
// under another media type are another answer), Location and
// Content-Location name the resource the operation made or the body is
// (another one points the client at another resource). The headers about
// the exchange rather than the result may differ and are not compared:
// Date, a request id, rate limits, a replay marker such as
// Idempotent-Replayed, Retry-After, the key's expiry (expiry-as-published
// reads that itself), ETag and Last-Modified (the resource as it is now,
// which may have moved on), Content-Length and Content-Encoding (the body
// itself is compared, as received).
var replayHeaders = []string{"Content-Type", "Location", "Content-Location"}

// replays reports whether a is orig's answer again, as a retry must get
// it: the same status and body, and the same replayHeaders.
func (a answer) replays(orig answer) bool { return a.same(orig) && a.headersDiffer(orig, "") == "" }

// headersDiffer says which of the replayHeaders a carries other than orig
// did, each with both values, orig's named by whose ("Location
// \"/p/2\" (the original's \"/p/1\")"), or "" when a keeps them all.
func (a answer) headersDiffer(orig answer, whose string) string {
	var out []string
	for _, h := range replayHeaders {
		mine, theirs := a.header.Values(h), orig.header.Values(h)
		if sameField(h, a, mine, orig, theirs) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%s %s)", h, quoteField(mine), whose, quoteField(theirs)))
	}
	return strings.Join(out, " and ")
}

// sameField reports whether header h says the same in a (its values
// mine) as in b (theirs): a media type as RFC 9110 §8.3.1 compares them
// (type, subtype and parameter names without case, a charset's value
// too; for JSON, a charset of UTF-8 as none), a Location or Content-Location as the URL it names, read against
// its request's URL; anything else as written.
func sameField(h string, a answer, mine []string, b answer, theirs []string) bool {
	if len(mine) != 1 || len(theirs) != 1 {
		return slices.Equal(mine, theirs)
	}
	x, y := mine[0], theirs[0]
	switch h {
	case "Content-Type":
		tx, px, errx := mime.ParseMediaType(x)
		ty, py, erry := mime.ParseMediaType(y)
		if errx != nil || erry != nil {
			return x == y
		}
		for _, p := range []map[string]string{px, py} {
			if cs, ok := p["charset"]; ok {
				p["charset"] = strings.ToLower(cs)
			}
			if json := tx == "application/json" || strings.HasSuffix(tx, "+json"); json && p["charset"] == "utf-8" {
				// JSON is UTF-8 and defines no charset (RFC 8259 §11):
				// one written on one path and not on another says the
				// same.
				delete(p, "charset")
			}
		}
		return tx == ty && maps.Equal(px, py)
	case "Location", "Content-Location":
		return resolve(a.url, x) == resolve(b.url, y)
	}
	return x == y
}

// resolve is the URL ref names, read against base; ref as written if
// either cannot be read.
func resolve(base *url.URL, ref string) string {
	u, err := url.Parse(ref)
	if base == nil || err != nil {
		return ref
	}
	return base.ResolveReference(u).String()
}

// quoteField writes a header's values as a report shows them: quoted,
// or "none".
func quoteField(values []string) string {
	if len(values) == 0 {
		return "none"
	}
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, " and ")
}

// hiddenDiff says where a's body differs from orig's when the report
// prints the two alike (clip trims white space and cuts a long body), with
// a few bytes of each around the first that differs, orig's named by
// whose; "" when they are the same answer, or print differently.
func (a answer) hiddenDiff(orig answer, whose string) string {
	if a.err != nil || orig.err != nil || a.status != orig.status || bytes.Equal(a.body, orig.body) || clip(a.body) != clip(orig.body) {
		return ""
	}
	i := 0
	for i < len(a.body) && i < len(orig.body) && a.body[i] == orig.body[i] {
		i++
	}
	return fmt.Sprintf("a body that prints alike but differs at byte %d: %s (%s %s)", i, around(a.body, i), whose, around(orig.body, i))
}

// around is b's bytes near i, quoted, "…" where it goes on.
func around(b []byte, i int) string {
	lo, hi := max(0, i-12), min(len(b), i+12)
	s := strconv.Quote(string(b[lo:hi]))
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(b) {
		s += "…"
	}
	return s
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// key makes a fresh idempotency key: the run's, then a count.
func (r *runner) key() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys++
	return fmt.Sprintf("conform-%08x-%d", r.run, r.keys)
}

// newOp draws a fresh operation for principal i.
func (r *runner) newOp(i int) (op, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Profile.newOp(r.rng, i)
}

// send sends o with the key field value (as written: quoted or not; ""
// for none), through client c, in ctx.
func (r *runner) send(ctx context.Context, c *http.Client, o op, key string) answer {
	var fields []string
	if key != "" {
		fields = []string{key}
	}
	return r.sendFields(ctx, c, o, fields)
}

// sendFields sends o with one Idempotency-Key field line for each of
// fields, each as written, through client c, in ctx.
func (r *runner) sendFields(ctx context.Context, c *http.Client, o op, fields []string) answer {
	p := r.Profile
	path, err := p.expand(p.Operation.Path, o.principal, o.amount, "")
	if err != nil {
		return answer{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, p.Operation.Method, r.URL+path, bytes.NewReader(o.body))
	if err != nil {
		return answer{err: err}
	}
	ct := p.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	if err := p.headers(req.Header, o.principal); err != nil {
		return answer{err: err}
	}
	if len(fields) > 0 {
		req.Header["Idempotency-Key"] = fields
	}
	a := do(c, req)
	r.mu.Lock()
	if !r.answered {
		r.first, r.firstBy, r.answered = a, o.principal, true
	}
	r.mu.Unlock()
	return a
}

// handedOver reports whether a and c, the answers to two operations,
// show that one client was handed the other's result: both 2xx and the
// same. Not when an earlier scenario's operation, under another key, was
// answered the same too: an API that answers every operation alike, an
// acknowledgement such as {"status":"accepted"} or 204 No Content,
// answers two alike without handing either the other's result, and only
// the witness tells.
func (r *runner) handedOver(a, c answer) bool {
	return a.ok() && a.same(c) && !a.same(r.other)
}

// do sends req through c and reads its answer.
func do(c *http.Client, req *http.Request) answer {
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: body, header: resp.Header, url: req.URL, err: err}
}

// reached returns an error when the run's first request to the operation
// met no API, or not as the profile's caller: no answer at all, a web
// page (a proxy's or a web server's, at a wrong base URL or path), no
// such operation (404, 405) or the principal's credentials refused (401,
// 403). What follows would judge an API that was never reached, a MUST
// unmet and money harmed on no evidence; a witness, read before anything
// is sent, finds most of these first.
func (r *runner) reached() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, what := r.first, r.Profile.Operation.Method+" "+r.Profile.Operation.Path
	const check = "is --url the API's base URL and operation.path its path?"
	switch {
	case !r.answered:
		return nil
	case a.err != nil:
		return fmt.Errorf("the API does not answer %s: %w", what, a.err)
	case strings.HasPrefix(a.header.Get("Content-Type"), "text/html"):
		return fmt.Errorf("%s answers a web page (text/html), not the API's JSON: %s It answered %s", what, check, a)
	case a.status == http.StatusNotFound || a.status == http.StatusMethodNotAllowed:
		return fmt.Errorf("%s is not there (%d): %s It answered %s", what, a.status, check, a)
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		return fmt.Errorf("%s refuses %s's credentials (%d): check the principal's headers. It answered %s", what, r.Profile.Principals[r.firstBy].Name, a.status, a)
	}
	return nil
}

// sf is key written as an RFC 8941 sf-string, the draft's form.
func sf(key string) string { return strconv.Quote(key) }

// retries is how many times untilFinal sends at most.
const retries = 5

// untilFinal sends o with key until the answer is neither "in
// progress" (409) nor no answer at all, up to retries times, waiting as
// a Retry-After asks (at most a second) or a tenth of a second; it
// returns the last answer.
func (r *runner) untilFinal(ctx context.Context, o op, key string) answer {
	return r.untilFinalVia(ctx, r.client, o, key)
}

// untilFinalVia is untilFinal through client c.
func (r *runner) untilFinalVia(ctx context.Context, c *http.Client, o op, key string) answer {
	var a answer
	for range retries {
		a = r.send(ctx, c, o, key)
		if a.err == nil && a.status != http.StatusConflict {
			return a
		}
		wait := 100 * time.Millisecond
		if s, err := strconv.Atoi(a.header.Get("Retry-After")); a.err == nil && err == nil && s >= 0 {
			wait = min(time.Duration(s)*time.Second, time.Second)
		}
		select {
		case <-ctx.Done():
			return a
		case <-time.After(wait):
		}
	}
	return a
}

// restartWait bounds how long the restart command may take, and then how
// long the API may take to answer again.
const restartWait = time.Minute

// restart runs the profile's restart command and waits until the first
// principal's witness answers again. It returns an error saying which of
// the two failed.
func (r *runner) restart(ctx context.Context) error {
	cmd, err := expandEnv(r.Profile.Restart)
	if err != nil {
		return fmt.Errorf("the restart command: %w", err)
	}
	run, cancel := context.WithTimeout(ctx, restartWait)
	defer cancel()
	c := exec.CommandContext(run, "sh", "-c", cmd)
	// A command that starts the server in the background may leave it
	// holding the output: the command is done when the shell is.
	c.WaitDelay = time.Second
	out, err := c.CombinedOutput()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("the restart command failed (%v): %s", err, clip(out))
	}
	for {
		_, err := r.witness(run, 0)
		if err == nil {
			return nil
		}
		select {
		case <-run.Done():
			return fmt.Errorf("the API did not answer within %s of its restart: %w", restartWait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// warmed returns n clients, each with a connection of its own to the API
// already open when there is a witness to read through it (the first
// principal's): requests sent through them together leave together, none
// of them held back by a dial or a TLS handshake the others skip. close
// closes their connections.
func (r *runner) warmed(ctx context.Context, n int) (clients []*http.Client, close func()) {
	var closes []func()
	for range n {
		c, cl := r.fresh(nil)
		if r.Profile.Witness != nil {
			r.witnessVia(ctx, c, 0) // an error shows again, where a scenario reads the witness
		}
		closes = append(closes, cl)
		clients = append(clients, c)
	}
	return clients, func() {
		for _, cl := range closes {
			cl()
		}
	}
}

// fresh returns a client with a connection pool of its own, empty: its
// first request dials a new connection to the API. wrap, if not nil,
// wraps the pool's transport. close closes the pool's connections.
func (r *runner) fresh(wrap func(http.RoundTripper) http.RoundTripper) (c *http.Client, close func()) {
	t := r.client.Transport.(*http.Transport).Clone()
	var rt http.RoundTripper = t
	if wrap != nil {
		rt = wrap(t)
	}
	return &http.Client{Transport: rt, Timeout: r.Timeout}, t.CloseIdleConnections
}

// lose sends o with key through the fault transport at point p (the
// server processes the request; the client never sees the answer).
// It returns what the client saw and, as held, the answer the API gave
// that the client never saw (a transport error if it gave none).
//
// The request goes over a connection of its own, closed after it: the
// connection a response was lost on is dead (reset, or given up on), and
// a client's retry opens another, from another address and port. A
// retry sent over the same connection would hide an API that scopes its
// keys by the connection or the client's address.
func (r *runner) lose(ctx context.Context, o op, key string, p dayplan.Point) (lost, held answer) {
	held = answer{err: errors.New("no answer from the API")}
	c, close := r.fresh(func(t http.RoundTripper) http.RoundTripper {
		return &faultnet.Transport{Base: keeper{t}}
	})
	defer close()
	lost = r.send(context.WithValue(faultnet.WithFault(ctx, p), withheldKey{}, &held), c, o, key)
	return lost, held
}

// retryLost sends o with key again after its answer was lost (see
// lose), until an answer, over a new connection, as a client does whose
// connection died with the answer.
func (r *runner) retryLost(ctx context.Context, o op, key string) answer {
	c, close := r.fresh(nil)
	defer close()
	return r.untilFinalVia(ctx, c, o, key)
}

// withheldKey is the context key of the answer keeper keeps.
type withheldKey struct{}

// keeper is the transport under the fault transport: it keeps the answer
// the API gave a request whose context holds a place for it (see lose),
// which the fault transport then throws away.
type keeper struct{ base http.RoundTripper }

func (k keeper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := k.base.RoundTrip(req)
	held, ok := req.Context().Value(withheldKey{}).(*answer)
	if !ok || err != nil {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	*held = answer{status: resp.StatusCode, body: body, header: resp.Header, url: req.URL, err: rerr}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// reading is one read of a witness: its number (a count or a value)
// and, when it counts a list, the list's items, each as JSON.
type reading struct {
	n     float64
	items []string
}

// witness reads principal i's witness: the count of its list (or the
// number that counts them) or its value.
func (r *runner) witness(ctx context.Context, i int) (reading, error) {
	return r.witnessVia(ctx, r.client, i)
}

// witnessVia reads principal i's witness through client c.
func (r *runner) witnessVia(ctx context.Context, c *http.Client, i int) (reading, error) {
	w := r.Profile.Witness
	path, err := r.Profile.expand(w.Path, i, 0, "")
	if err != nil {
		return reading{}, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", r.URL+path, nil)
	if err != nil {
		return reading{}, err
	}
	if err := r.Profile.headers(req.Header, i); err != nil {
		return reading{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return reading{}, fmt.Errorf("GET %s: no answer from %s: is the API running at --url? %w", path, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reading{}, fmt.Errorf("GET %s: %w", path, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return reading{}, fmt.Errorf("GET %s: %d %s: %s's credentials refused: check the principal's headers", path, resp.StatusCode, clip(body), r.Profile.Principals[i].Name)
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		// The witness is read first: a wrong --url meets it before the
		// operation, and the URL asked shows one that repeats the path.
		return reading{}, fmt.Errorf("GET %s: %d %s: nothing at %s: is --url the API's base URL and witness.path its path?", path, resp.StatusCode, clip(body), req.URL)
	default:
		return reading{}, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, clip(body))
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return reading{}, fmt.Errorf("GET %s: the answer is not JSON (%w; Content-Type %q): %s", path, err, resp.Header.Get("Content-Type"), clip(body))
	}
	pointer := w.Value
	if w.Count != "" {
		pointer = w.Count
	}
	v, err := lookup(doc, pointer)
	if err != nil {
		return reading{}, fmt.Errorf("GET %s: %w", path, err)
	}
	if list, ok := v.([]any); ok && w.Count != "" {
		items := make([]string, len(list))
		for k, item := range list {
			b, _ := json.Marshal(item) // decoded JSON: it encodes again
			items[k] = string(b)
		}
		return reading{n: float64(len(list)), items: items}, nil
	}
	n, ok := v.(float64)
	switch {
	case !ok && w.Count != "":
		return reading{}, fmt.Errorf("GET %s: %s is neither a list nor a number", path, pointer)
	case !ok:
		return reading{}, fmt.Errorf("GET %s: %s is not a number", path, pointer)
	}
	return reading{n: n}, nil
}

// effect is how far one execution of o moves the witness.
func (r *runner) effect(o op) float64 {
	switch r.Profile.Witness.PerOperation {
	case "amount":
		return float64(o.amount)
	case "-amount":
		return -float64(o.amount)
	}
	return 1
}

// lookup follows an RFC 6901 JSON pointer ("" is the whole document).
func lookup(doc any, pointer string) (any, error) {
	if pointer == "" {
		return doc, nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", pointer)
	}
	v := doc
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = unescapeToken(tok)
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q at %s (the members there: %s)", tok, pointer, strings.Join(slices.Sorted(maps.Keys(x)), ", "))
			}
			v = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fmt.Errorf("no item %q at %s", tok, pointer)
			}
			v = x[n]
		default:
			return nil, fmt.Errorf("nothing at %s", pointer)
		}
	}
	return v, nil
}

// unescapeToken reads one token of a JSON pointer: "~1" is '/', "~0" is '~'.
func unescapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// books is a witness reading taken before a scenario, to judge its money
// after.
type books struct {
	r      *runner
	before []reading
}

// open reads every principal's witness, or nil without a witness.
func (r *runner) open(ctx context.Context) (*books, error) {
	if r.Profile.Witness == nil {
		return nil, nil
	}
	b := &books{r: r}
	for i := range r.Profile.Principals {
		v, err := r.witness(ctx, i)
		if err != nil {
			return nil, err
		}
		b.before = append(b.before, v)
	}
	return b, nil
}

// moved is how far principal i's witness has moved since b was read.
func (b *books) moved(ctx context.Context, i int) (float64, error) {
	after, err := b.r.witness(ctx, i)
	if err != nil {
		return 0, err
	}
	return after.n - b.before[i].n, nil
}

// expect is an operation and how many times it must have executed.
type expect struct {
	op    op
	times int
	what  string
}

// judge reads the witnesses again and sets res.Money and res.Saw: clean
// if every principal's witness moved by exactly what the expected
// executions explain, else harmed, or not observed when a list left
// short could not be told from a full page. A list that is a full page
// stops the run: judge returns the error that says so (see settle).
func (b *books) judge(ctx context.Context, res *Result, want ...expect) error {
	if b == nil {
		res.Money = MoneyUnobserved
		res.Saw = "no witness in the profile: whether anything executed twice, or not at all, cannot be seen"
		return nil
	}
	afters := make([]reading, len(b.before))
	for i := range b.before {
		after, err := b.r.witness(ctx, i)
		if err != nil {
			return err
		}
		afters[i] = after
	}
	harmed, unseen := false, false
	var saw []string
	for i, after := range afters {
		moved := after.n - b.before[i].n
		expected, due := 0.0, 0
		units := map[float64]bool{}
		var whats []string
		for _, w := range want {
			if w.op.principal != i {
				continue
			}
			e := b.r.effect(w.op)
			expected += float64(w.times) * e
			due += w.times
			units[e] = true
			whats = append(whats, w.what+" "+history.Times(int64(w.times)))
		}
		if len(whats) == 0 {
			continue
		}
		line := fmt.Sprintf("%s: due %s, a move of %s; the witness moved by %s", b.r.Profile.Principals[i].Name, andList(whats), num(expected), num(moved))
		if moved != expected {
			// A move by exactly what was due, the other way, is the
			// profile's sign, not the API's money. Else executions can be
			// counted when every operation moves the witness alike: a
			// count, or one amount.
			if b.r.Profile.Witness.Value != "" && expected != 0 && moved == -expected {
				line += ` (the move due, the other way: is per_operation's sign right? "amount" moves the witness up by each operation's amount, "-amount" down)`
			} else if len(units) == 1 {
				for unit := range units {
					if unit != 0 {
						line += " (" + executionsSaid(moved/unit, due) + ")"
					}
				}
			} else if d := differenceSaid(moved-expected, b.r, want, i); d != "" {
				line += " (" + d + ")"
			}
			cannot := false
			if moved < expected {
				// A list left short may be a full page: settled here,
				// the run stopped if it is one.
				why, c, err := b.r.settle(ctx, i, b.before[i], after, expected)
				if err != nil {
					return err
				}
				if why != "" {
					line += ", " + why
				}
				cannot = c
			}
			harmed = harmed || !cannot
			unseen = unseen || cannot
		}
		saw = append(saw, line)
	}
	res.Saw = strings.Join(saw, "; ")
	switch {
	case harmed:
		res.Money = MoneyHarmed
	case unseen:
		res.Money = MoneyUnobserved
		res.Saw = "could not observe: " + res.Saw
	default:
		res.Money = MoneyClean
	}
	return nil
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// executionsSaid says how many executions of one operation a witness's
// move of n of them makes, where due were due. A move that no whole,
// non-negative number of executions explains is said in words: a third
// of a payment tells the user nothing, and what it likely means is that
// something else moves the witness.
func executionsSaid(n float64, due int) string {
	whole := math.Round(n)
	if whole < 0 || math.Abs(n-whole) > 1e-9*max(1, math.Abs(n)) {
		return fmt.Sprintf("a move no whole number of executions explains, where %s: does something else move this witness, another principal paying into it or a client outside this run?", dueSaid(due))
	}
	if whole == 0 {
		whole = 0 // not -0, the quotient of nothing moved by a negative effect
	}
	return fmt.Sprintf("%s executions where %s", num(whole), dueSaid(due))
}

// differenceSaid says which of principal i's expected operations a
// witness's move beyond what was due, diff, is a whole number of moves
// of: operations of different amounts cannot be counted in executions of
// one, but a retry run again shows as its own amount. It is "" unless
// exactly one operation explains diff.
func differenceSaid(diff float64, r *runner, want []expect, i int) string {
	said := ""
	for _, w := range want {
		if w.op.principal != i {
			continue
		}
		e := r.effect(w.op)
		if e == 0 {
			continue
		}
		k := math.Round(diff / e)
		if k == 0 || math.Abs(diff/e-k) > 1e-9*max(1, math.Abs(diff/e)) || float64(w.times)+k < 0 {
			continue
		}
		if said != "" {
			return ""
		}
		moves := "1 move"
		if math.Abs(k) != 1 {
			moves = num(math.Abs(k)) + " moves"
		}
		of := "of " + w.what
		if k < 0 {
			of += " missing"
		}
		said = fmt.Sprintf("the difference, %s, is %s %s: %s executed %s where %s", num(diff), moves, of, w.what, executedTimes(float64(w.times)+k), dueSaid(w.times))
	}
	return said
}

// executedTimes is "once" or "n times".
func executedTimes(n float64) string {
	if n == 1 {
		return "once"
	}
	return num(n) + " times"
}

// dueSaid is "1 was due" or "n were due".
func dueSaid(n int) string {
	if n == 1 {
		return "1 was due"
	}
	return fmt.Sprintf("%d were due", n)
}

// andList joins items as a sentence does: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// contract sets res.Contract from ok, with what was expected.
func contract(res *Result, ok bool, expected string) {
	res.Contract = ContractUnmet
	if ok {
		res.Contract = ContractMet
	}
	res.Expected = expected
}
