// Package walletd is a second small API for lab conform, written apart
// from payserver so that its profile could be written from
// docs/conform.md alone: wallets pay out with PUT, the amount sits deep
// in the body, callers show a bearer token, and the effect is seen in a
// balance.
//
//	PUT /v2/wallets/{wallet}/payouts   Idempotency-Key: "…"
//	    {"payout":{"amount":{"value":1200,"currency":"EUR"},"beneficiary":"…"},"reference":"…"}
//	    → 201 {"payout_id":"po-1","wallet":"…","value":1200,"balance":98800}
//	GET /v2/wallets/{wallet}
//	    → 200 {"wallet":{"id":"…","balance":{"value":98800,"currency":"EUR"}}}
//
// A payout's key belongs to its wallet; the same key again with the same
// body is answered as the first time, with another body 422, while the
// first still runs 409. Keys are kept 48 hours, as its documentation
// would say.
package walletd

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/dunglas/httpsfv"
)

// Opening is every wallet's balance when the server starts.
const Opening = 1_000_000

// Wallets maps each bearer token to the wallet it may use.
var Wallets = map[string]string{"ana-secret": "w-ana", "ben-secret": "w-ben"}

// Server is the API.
type Server struct {
	mu       sync.Mutex
	balances map[string]int64
	keys     map[string]*payout // wallet + " " + key
	made     int
	// IgnoreKeys pays out every request, key or not.
	IgnoreKeys bool
}

// payout is what a key has done: the body's digest, and the answer once
// it is done.
type payout struct {
	digest [32]byte
	done   bool
	answer []byte
}

// New returns a server whose wallets hold Opening each.
func New() *Server {
	s := &Server{balances: map[string]int64{}, keys: map[string]*payout{}}
	for _, w := range Wallets {
		s.balances[w] = Opening
	}
	return s
}

// ServeHTTP serves the two routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wallet, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/wallets/"), "/")
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !strings.HasPrefix(r.URL.Path, "/v2/wallets/"):
		problem(w, http.StatusNotFound, "no such route")
	case Wallets[token] != wallet:
		problem(w, http.StatusForbidden, "this token does not open that wallet")
	case r.Method == http.MethodGet && rest == "":
		s.mu.Lock()
		balance := s.balances[wallet]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"wallet":{"id":%q,"balance":{"value":%d,"currency":"EUR"}}}`, wallet, balance)
	case r.Method == http.MethodPut && rest == "payouts":
		s.payOut(w, r, wallet)
	default:
		problem(w, http.StatusMethodNotAllowed, "GET a wallet, PUT its payouts")
	}
}

type request struct {
	Payout struct {
		Amount struct {
			Value    int64  `json:"value"`
			Currency string `json:"currency"`
		} `json:"amount"`
		Beneficiary string `json:"beneficiary"`
	} `json:"payout"`
	Reference string `json:"reference"`
}

func (s *Server) payOut(w http.ResponseWriter, r *http.Request, wallet string) {
	var req request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8192))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Payout.Amount.Value < 1 || req.Payout.Amount.Currency != "EUR" {
		problem(w, http.StatusBadRequest, "a payout of a positive value in EUR is wanted")
		return
	}
	canonical, _ := json.Marshal(req)
	if s.IgnoreKeys {
		s.answer(w, s.execute(wallet, req.Payout.Amount.Value))
		return
	}
	key, ok := idempotencyKey(r.Header.Values("Idempotency-Key"))
	if !ok {
		problem(w, http.StatusBadRequest, `send one Idempotency-Key, a quoted string: Idempotency-Key: "…"`)
		return
	}
	s.mu.Lock()
	p, seen := s.keys[wallet+" "+key]
	if !seen {
		p = &payout{digest: sha256.Sum256(canonical)}
		s.keys[wallet+" "+key] = p
	}
	done, answer := p.done, p.answer
	s.mu.Unlock()
	switch {
	case seen && p.digest != sha256.Sum256(canonical):
		problem(w, http.StatusUnprocessableEntity, "this key was used for another payout")
	case seen && !done:
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusConflict, "the payout with this key is still being made")
	case seen:
		s.answer(w, answer)
	default:
		answer := s.execute(wallet, req.Payout.Amount.Value)
		s.mu.Lock()
		p.done, p.answer = true, answer
		s.mu.Unlock()
		s.answer(w, answer)
	}
}

// idempotencyKey reads one field holding an RFC 8941 String.
func idempotencyKey(fields []string) (string, bool) {
	if len(fields) != 1 {
		return "", false
	}
	item, err := httpsfv.UnmarshalItem(fields)
	key, isString := item.Value.(string)
	return key, err == nil && isString && key != "" && len(key) <= 200
}

// execute takes value from wallet and returns the answer's body.
func (s *Server) execute(wallet string, value int64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made++
	s.balances[wallet] -= value
	return fmt.Appendf(nil, `{"payout_id":"po-%d","wallet":%q,"value":%d,"balance":%d}`, s.made, wallet, value, s.balances[wallet])
}

func (s *Server) answer(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d,"detail":%q}`, status, detail)
}
