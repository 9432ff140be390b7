// Package payserver is a small payments API that lab conform's tests and
// examples attack: plain net/http, nothing of the lab's. A caller (the
// X-Api-Key header) creates payments with POST /v1/payments, body
// {"payee":"…","cents":N,"note":"…"}, under an Idempotency-Key (one
// field, an RFC 8941 String of 1 to 255 characters), and lists its own
// with GET /v1/payments. Keys live in a map, per caller; a key in use
// answers 409, a key with another payload 422, a completed key its stored
// answer. Its fields break one rule at a time, for lab conform's tests.
package payserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dunglas/httpsfv"
)

// Payment is one payment made.
type Payment struct {
	ID    string `json:"id"`
	Payee string `json:"payee"`
	Cents int64  `json:"cents"`
	Note  string `json:"note,omitempty"`
}

type entry struct {
	at     time.Time
	body   []byte
	done   bool
	status int
	answer []byte
}

// Server is the API's state.
type Server struct {
	mu       sync.Mutex
	keys     map[string]*entry // caller + "\x00" + key
	payments map[string][]Payment
	next     int
	// file, if set, keeps the payments (see Open).
	file string
	// Naive turns the key off: every request makes a payment.
	Naive bool
	// Keys is how the Idempotency-Key field is read: StrictKeys, the
	// draft's, unless a test breaks it.
	Keys KeyRule
	// Unscoped keys its keys without the caller: one caller's key is
	// every caller's.
	Unscoped bool
	// Fingerprint, if set, names the only members of a body its key's
	// payload is compared by: a retry that changes another member is
	// answered with the stored answer, as if it were the same request.
	Fingerprint []string
	// KeyOnly compares no payload: a key's retry is answered with its
	// stored answer whatever its body, as a middleware that caches
	// answers by the key alone does.
	KeyOnly bool
	// KeyWithBody keys its keys by the key and the body together, as a
	// middleware whose cache key is a hash of both does: a key sent with
	// an edited body is a new key, and the edit executes.
	KeyWithBody bool
	// MismatchStatus, if set, is the status a key used with another
	// payload is answered instead of 422 (400, as some payment APIs
	// answer it, or 409).
	MismatchStatus int
	// ForgetOnMismatch answers a key used with another payload 422 and
	// forgets the key, as a server that deletes a key's record on every
	// error it answers does: the original's retry executes again.
	ForgetOnMismatch bool
	// TakeOnMismatch answers a key used with another payload 422 and
	// keeps that payload as the key's, as a server that upserts a key's
	// record does: the original's retry is refused.
	TakeOnMismatch bool
	// Recompute renders every answer with payments, how many the caller
	// has made, and answers a completed key's retry by rendering its
	// payment again as the books are now, not with the answer it gave:
	// a retry after another payment is told a count that was never the
	// operation's.
	Recompute bool
	// Respell encodes every replay again from its stored answer decoded,
	// indented, as another encoder might: the same result in other bytes,
	// to the retry made at once too.
	Respell bool
	// Retention is how long a key is kept after its first use (24h from
	// New); every answer to a keyed request tells when its key expires,
	// in an Idempotency-Expires header (an HTTP-date).
	Retention time.Duration
	// Told, if set, is the period that header tells instead of
	// Retention, as a server does whose store is given its period in
	// another unit than its documentation (24 nanoseconds for 24 hours).
	Told time.Duration
}

// KeyRule is how the server reads the Idempotency-Key field.
type KeyRule int

const (
	// StrictKeys takes one field whose value is an RFC 8941 String of 1
	// to 255 characters, and answers anything else 400.
	StrictKeys KeyRule = iota
	// RawKeys takes the field's value as it was sent, whatever it is:
	// "k" and k are two keys, and a malformed value is a key like any
	// other.
	RawKeys
	// IgnoreMalformed executes a request whose key does not parse as if
	// it had none: unprotected, every retry pays again.
	IgnoreMalformed
	// CutKeys keeps the first 64 characters of a String, however long:
	// two long keys that share them are one key.
	CutKeys
	// FoldKeys takes a String as StrictKeys does, then lower-cases it, as
	// a key column with a case-insensitive collation compares it: two
	// keys that differ only in case are one key.
	FoldKeys
	// EmptyKeys takes a String as StrictKeys does, the empty String
	// included, as a server that checks only that the field is there
	// does: every caller that sends "" shares one key.
	EmptyKeys
)

// maxKey is the longest key StrictKeys takes.
const maxKey = 255

// New returns an empty server.
func New() *Server {
	return &Server{keys: make(map[string]*entry), payments: make(map[string][]Payment), Retention: 24 * time.Hour}
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller := r.Header.Get("X-Api-Key")
	if caller == "" {
		http.Error(w, `{"error":"X-Api-Key missing"}`, http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/v1/payments":
		s.mu.Lock()
		list := append([]Payment{}, s.payments[caller]...)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"items": list})
	case r.Method == "POST" && r.URL.Path == "/v1/payments":
		s.create(w, r, caller)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, caller string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		http.Error(w, `{"error":"unreadable body"}`, http.StatusBadRequest)
		return
	}
	var p Payment
	if err := json.Unmarshal(body, &p); err != nil || p.Payee == "" || p.Cents < 1 {
		http.Error(w, `{"error":"want {\"payee\":\"…\",\"cents\":N}"}`, http.StatusBadRequest)
		return
	}
	if s.Naive {
		status, answer := s.pay(caller, p)
		reply(w, status, answer)
		return
	}
	fields := r.Header.Values("Idempotency-Key")
	if len(fields) == 0 {
		http.Error(w, `{"error":"an Idempotency-Key is required"}`, http.StatusBadRequest)
		return
	}
	key, ok := s.key(fields)
	switch {
	case !ok && s.Keys == IgnoreMalformed:
		status, answer := s.pay(caller, p)
		reply(w, status, answer)
		return
	case !ok:
		http.Error(w, `{"error":"Idempotency-Key must be one field, a quoted string of 1 to 255 printable characters"}`, http.StatusBadRequest)
		return
	}
	id := caller + "\x00" + key
	if s.Unscoped {
		id = key
	}
	if s.KeyWithBody {
		id += "\x00" + string(body)
	}
	now := time.Now()
	s.mu.Lock()
	e, seen := s.keys[id]
	if seen && now.Sub(e.at) >= s.Retention {
		seen = false
	}
	if !seen {
		e = &entry{at: now, body: body}
		s.keys[id] = e
	}
	s.mu.Unlock()
	told := s.Retention
	if s.Told != 0 {
		told = s.Told
	}
	w.Header().Set("Idempotency-Expires", e.at.Add(told).UTC().Format(http.TimeFormat))
	if seen {
		s.mu.Lock()
		same, done, status, answer := s.samePayload(e.body, body), e.done, e.status, e.answer
		s.mu.Unlock()
		switch {
		case !same:
			if s.ForgetOnMismatch {
				s.mu.Lock()
				delete(s.keys, id)
				s.mu.Unlock()
			}
			if s.TakeOnMismatch {
				s.mu.Lock()
				e.body = body
				s.mu.Unlock()
			}
			status := http.StatusUnprocessableEntity
			if s.MismatchStatus != 0 {
				status = s.MismatchStatus
			}
			http.Error(w, `{"error":"this key was used with another payload"}`, status)
		case !done:
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"the first request with this key is still running"}`, http.StatusConflict)
		default:
			if s.Recompute {
				s.mu.Lock()
				answer = s.recount(caller, answer)
				s.mu.Unlock()
			}
			if s.Respell {
				var doc map[string]any
				if json.Unmarshal(answer, &doc) == nil {
					answer, _ = json.MarshalIndent(doc, "", "  ")
				}
			}
			reply(w, status, answer)
		}
		return
	}
	status, answer := s.pay(caller, p)
	s.mu.Lock()
	e.done, e.status, e.answer = true, status, answer
	s.mu.Unlock()
	reply(w, status, answer)
}

// samePayload reports whether a request's body is the payload a key was
// first used with: byte for byte, by s.Fingerprint's members only, or
// always under s.KeyOnly.
func (s *Server) samePayload(first, body []byte) bool {
	if s.KeyOnly {
		return true
	}
	if len(s.Fingerprint) == 0 {
		return bytes.Equal(first, body)
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal(first, &a) != nil || json.Unmarshal(body, &b) != nil {
		return false
	}
	for _, m := range s.Fingerprint {
		if !bytes.Equal(a[m], b[m]) {
			return false
		}
	}
	return true
}

// key reads the key from the Idempotency-Key fields as s.Keys says; ok
// is false if they hold none.
func (s *Server) key(fields []string) (key string, ok bool) {
	if s.Keys == RawKeys {
		return fields[0], true
	}
	if len(fields) != 1 {
		return "", false
	}
	item, err := httpsfv.UnmarshalItem(fields)
	if err != nil || len(item.Params.Names()) > 0 {
		return "", false
	}
	key, ok = item.Value.(string)
	if s.Keys == CutKeys && len(key) > 64 {
		return key[:64], ok
	}
	if s.Keys == FoldKeys {
		key = strings.ToLower(key)
	}
	return key, ok && (key != "" || s.Keys == EmptyKeys) && len(key) <= maxKey
}

// record is one line of the payments file.
type record struct {
	Caller  string  `json:"caller"`
	Payment Payment `json:"payment"`
}

// Open returns a server whose payments are kept in the file at path, one
// JSON line each, and read back from it: a server opened again on the
// file after a restart has every payment made before, and none of its
// keys, which live in memory only. It returns the error of reading the
// file.
func Open(path string) (*Server, error) {
	s := New()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read payments: %w", err)
	}
	for line := range bytes.Lines(data) {
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("read payments: %w", err)
		}
		s.payments[rec.Caller] = append(s.payments[rec.Caller], rec.Payment)
		s.next++
	}
	s.file = path
	return s, nil
}

// pay makes the payment and returns the answer to give: 500 if the
// payments file cannot be written, and then no payment is made.
func (s *Server) pay(caller string, p Payment) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.ID = fmt.Sprintf("pay_%d", s.next+1)
	if s.file != "" {
		if err := appendLine(s.file, record{Caller: caller, Payment: p}); err != nil {
			return http.StatusInternalServerError, []byte(`{"error":"the payment could not be recorded"}`)
		}
	}
	s.next++
	s.payments[caller] = append(s.payments[caller], p)
	answer, _ := json.Marshal(p)
	if s.Recompute {
		answer = s.recount(caller, answer)
	}
	return http.StatusCreated, answer
}

// recount is answer with its payments member set to how many payments
// caller has made now; s.mu is held.
func (s *Server) recount(caller string, answer []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(answer, &doc) != nil {
		return answer
	}
	doc["payments"] = len(s.payments[caller])
	out, _ := json.Marshal(doc)
	return out
}

// appendLine appends v to the file at path as one JSON line.
func appendLine(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func reply(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
