// Package final is an audit adapter for the lab's final design written as
// a middleware: it knows nothing of transfers, only of requests, keys and
// answers. A key is claimed with one INSERT under a UNIQUE constraint that
// spans the customer, the method, the path and the key; the claim carries
// the fingerprint of the body's RFC 8785 canonical form and a lease; the
// answer is recorded whole and replayed byte for byte, marked
// Idempotent-Replayed; an answer that is no outcome (a refusal before
// execution, a 5xx) frees the key; keys expire on the lab clock; an
// expired lease is taken over by one conditional UPDATE.
//
// And the key completes in the transaction that moves the money: the
// middleware opens it for the handler (audit.Env.Share), the handler's
// commit hands it back, and the middleware stores the answer and commits
// both, or rolls both back if a retry took its key over meanwhile. A
// middleware that completes its key after the handler's own commit cannot
// be made safe, however careful the rest: see ../aftercommit.
package final

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"idemlab/audit"
	"idemlab/kit/canonical"
	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
)

// New is the adapter: it builds the middleware on the lab's database,
// clock and settings, and tells it which refusals are outcomes to keep. It
// returns an error if the key table cannot be created.
func New(env audit.Env) (audit.Middleware, error) {
	return NewKeeping(env, problem.InsufficientFunds.URI())
}

// NewKeeping builds the middleware as New does, keeping as outcomes the
// refusals of the problem types outcomes names and no other: the examples
// that keep fewer build on it. It returns New's error.
func NewKeeping(env audit.Env, outcomes ...string) (audit.Middleware, error) {
	s, err := openStore(context.Background(), env)
	if err != nil {
		return audit.Middleware{}, err
	}
	m := &middleware{store: s, customer: env.Customer, share: env.Share, outcomes: outcomes}
	return audit.Middleware{Wrap: m.wrap, Purge: s.purge}, nil
}

// NewWithin builds the middleware as New does, with outer around it (see
// audit.Middleware.Within): the examples that add a layer of their own to
// this design build on it. It returns New's error.
func NewWithin(env audit.Env, outer func(http.Handler) http.Handler) (audit.Middleware, error) {
	mw, err := New(env)
	if err != nil {
		return audit.Middleware{}, err
	}
	return mw.Within(outer), nil
}

// middleware is the library: its settings and its store.
type middleware struct {
	store *store
	// customer names whose key a request's is: keys chosen by two
	// customers alike are two keys.
	customer func(r *http.Request) string
	// share opens the transaction the handler's business write joins, so
	// that the key completes in the commit that moves the money; nil, the
	// handler commits on its own, and the key completes after.
	share func(r *http.Request) (*http.Request, *audit.Unit)
	// outcomes are the problem types that answer a request for good, as a
	// success does (a refusal for insufficient funds): they are kept and
	// replayed. Every other problem, and every 5xx, frees the key.
	outcomes []string
}

func (m *middleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := idemkey.FromRequest(r)
		if err != nil {
			problem.Write(w, err)
			return
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			// A body cut short: the handler refuses it, and nothing is claimed.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), failingReader{err}))
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		fp, ok := fingerprint(raw)
		if !ok {
			// Not JSON: the handler refuses it, and nothing is claimed.
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		sc := scope{customer: m.customer(r), method: r.Method, path: r.URL.Path, key: key}
		held, stored, err := m.store.claim(ctx, sc, fp)
		switch {
		case err != nil:
			problem.Write(w, err)
			return
		case stored != nil:
			stored.write(w, true)
			return
		}
		var unit *audit.Unit
		if m.share != nil {
			r, unit = m.share(r)
			defer unit.Abandon()
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		res := rec.answer()
		// The client may have gone; the key must still be settled.
		ctx = context.WithoutCancel(ctx)
		if err := m.settle(ctx, unit, held, res); err != nil {
			problem.Write(w, err)
			return
		}
		res.write(w, false)
	})
}

// settle completes or releases the held key once the handler has
// answered res. If the handler committed money, it waits in the unit's
// transaction: the key completes with the answer in that transaction, and
// the money moves with it or not at all. It returns the error to answer
// instead of res when the money did not move after all: the key was taken
// over by a retry (409), or the store failed (503).
func (m *middleware) settle(ctx context.Context, unit *audit.Unit, held lease, res answer) error {
	if tx := unit.Handed(); tx != nil {
		err := m.store.complete(ctx, tx, held, res)
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			tx.Rollback()
			m.store.release(ctx, held)
			return unavailable(err)
		}
		return nil
	}
	// Nothing was handed: the handler refused the request or failed before
	// its money moved or, without a shared transaction, committed on its
	// own. A success, or a refusal for good, is kept (the second commit
	// that aftercommit pays for); anything else frees the key for a retry.
	if !m.keeps(res) {
		m.store.release(ctx, held)
		return nil
	}
	for range completeTries {
		if err := m.store.complete(ctx, m.store.env.DB, held, res); err == nil {
			break
		}
	}
	return nil
}

// completeTries is how many times a refusal for good is stored: a store
// that fails once must not leave it in progress.
const completeTries = 3

// keeps reports whether res answers its request for good: a 2xx, or a
// problem of one of the outcome types.
func (m *middleware) keeps(res answer) bool {
	if res.status >= 200 && res.status < 300 {
		return true
	}
	if !strings.HasPrefix(res.header.Get("Content-Type"), problem.ContentType) {
		return false
	}
	var p struct {
		Type string `json:"type"`
	}
	json.Unmarshal(res.body, &p)
	for _, t := range m.outcomes {
		if p.Type == t {
			return true
		}
	}
	return false
}

// fingerprint is the hex SHA-256 of raw's RFC 8785 canonical form, so that
// a retry respelled by another JSON encoder matches its original; ok is
// false if raw is not JSON.
func fingerprint(raw []byte) (fp string, ok bool) {
	canon, err := canonical.Transform(raw)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), true
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }
