// Package core is the core ledger: a second service in the lab, which a
// server from stage 9 on must tell about every transfer it executes. It
// lives apart from the lab's database, so that a transfer reaches it only
// over HTTP, the way a bank's core system, a payment network or a
// bookkeeping service is reached at work: a call that can fail, be lost
// or be answered twice.
//
// The core serves only the lab server: every request carries the core's
// service token, which the lab server holds and students do not. It reads
// each posting as strictly as the bank reads a transfer, and, given the
// bank's books, posts only what the bank executed: a transfer that exists,
// between the accounts and for the amount the bank recorded.
//
// The core applies each posting once per Idempotency-Key (its inbox): a
// posting sent again with the same key gets the first answer back, marked
// Idempotent-Replayed. It does not deduplicate by transfer, so a relay that
// sends one transfer under two keys posts it twice; the grader counts
// postings per transfer to find out.
package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"idemlab/kit/auth"
	"idemlab/kit/bank"
	"idemlab/kit/idemkey"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
)

// Posting is what a server tells the core about one executed transfer.
type Posting struct {
	TransferID string `json:"transfer_id"`
	From       string `json:"from"`
	To         string `json:"to"`
	Amount     int64  `json:"amount"`
}

// Receipt is the core's answer to a posting it applied.
type Receipt struct {
	ID         int64  `json:"id"`
	TransferID string `json:"transfer_id"`
	From       string `json:"from"`
	To         string `json:"to"`
	Amount     int64  `json:"amount"`
	Key        string `json:"key"`
}

// The core's own problems: it is another service, with its own answers.
var (
	// Down is the answer while the core is down (Faults.Down).
	Down = &problem.Type{Name: "core-down", Status: http.StatusServiceUnavailable, Title: "Core ledger down",
		Explain:    "The core ledger is down for a while. Nothing was posted: send the same posting again, with the same Idempotency-Key, after Retry-After.",
		RetryAfter: time.Second}
	// Rejected is the answer to a posting the core will never apply
	// (Faults.Poison): sent again, under any key, it is refused again.
	Rejected = &problem.Type{Name: "posting-rejected", Status: http.StatusUnprocessableEntity, Title: "Posting rejected",
		Explain: "The core ledger will never apply this posting. Nothing was posted, and sending it again changes nothing: set it aside for a person to look at."}
	// InvalidPosting is the answer to a body that is not a posting.
	InvalidPosting = &problem.Type{Name: "invalid-posting", Status: http.StatusBadRequest, Title: "Invalid posting",
		Explain: `The body must be one JSON object {"transfer_id","from","to","amount"}, valid UTF-8, each member once and no other: a transfer id (tr_…), two different account ids (acc_…) and an amount of 1 to 1,000,000,000 won. The detail names the member. Nothing was posted.`}
	// UnknownTransfer is the answer to a posting for a transfer the bank
	// never executed.
	UnknownTransfer = &problem.Type{Name: "unknown-transfer", Status: http.StatusUnprocessableEntity, Title: "Unknown transfer",
		Explain: "The bank has no transfer with this id: the core posts only transfers the bank executed and committed. Nothing was posted."}
	// PostingMismatch is the answer to a posting that says other accounts
	// or another amount than the transfer it names.
	PostingMismatch = &problem.Type{Name: "posting-mismatch", Status: http.StatusUnprocessableEntity, Title: "Posting does not match its transfer",
		Explain: "The posting names a transfer the bank executed, but with other accounts or another amount than the bank recorded. Post what the bank's transfer says. Nothing was posted."}
)

// Problems are the problem types the core answers with, by status, beside
// the lab's own: 400 for a missing or malformed Idempotency-Key, 401 without
// the core's token, 413 and 415 for a body too large or not JSON, 422
// unknown-account and idempotency-key-reused.
var Problems = []*problem.Type{InvalidPosting, UnknownTransfer, PostingMismatch, Down}

// Books is the bank's record a posting is checked against, read only
// (bank.Books, on the lab's database).
type Books interface {
	// AccountExists reports whether the bank has the account.
	AccountExists(ctx context.Context, id string) (bool, error)
	// Transfer returns the accounts and amount of the transfer the bank
	// executed under id, and false if it executed none.
	Transfer(ctx context.Context, id string) (bank.TransferRecord, bool, error)
}

// Config is what a core is started with.
type Config struct {
	// Token is the service token every request must carry, as
	// Authorization: Bearer (NewToken draws one). It may not be empty.
	Token string
	// Books, when set, has the core post only transfers the bank
	// executed, between known accounts, as the bank recorded them. Nil
	// checks a posting's form only: for a core that cannot read the
	// lab's database (one in another process's memory).
	Books Books
}

// Core is the core ledger service. It is safe for concurrent use.
type Core struct {
	db     *sql.DB
	token  string
	books  Books
	Faults Faults
}

// NewToken draws a core service token no one can guess.
func NewToken() string { return "core_" + rand.Text() }

const schema = `CREATE TABLE IF NOT EXISTS core_postings (
	id INTEGER PRIMARY KEY,
	idempotency_key TEXT NOT NULL UNIQUE,
	fingerprint TEXT NOT NULL,
	transfer_id TEXT NOT NULL,
	from_account TEXT NOT NULL,
	to_account TEXT NOT NULL,
	amount INTEGER NOT NULL
)`

// New returns the core on db, a database of its own (never the lab's:
// a stage must not be able to post by writing a row), creating its table.
// It returns an error if cfg has no token or the table cannot be created.
func New(ctx context.Context, db *sql.DB, cfg Config) (*Core, error) {
	if cfg.Token == "" {
		return nil, errors.New("core: no service token")
	}
	if err := labdb.CreateTable(ctx, db, schema); err != nil {
		return nil, fmt.Errorf("core: create table: %w", err)
	}
	return &Core{db: db, token: cfg.Token, books: cfg.Books}, nil
}

// Handler serves POST /postings (an Idempotency-Key is required), GET
// /postings (every posting, in the order applied) and GET /healthz, each
// only to a request that carries the core's token.
func (c *Core) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /postings", c.post)
	mux.HandleFunc("GET /postings", func(w http.ResponseWriter, r *http.Request) {
		ps, err := c.Postings(r.Context())
		if err != nil {
			problem.Write(w, problem.Wrap(problem.Internal, err, "read the postings"))
			return
		}
		respond.JSON(w, http.StatusOK, ps)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := auth.BearerToken(r)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 {
			problem.Write(w, problem.New(problem.Unauthorized, "the core ledger serves the lab server only: send Authorization: Bearer <core token>"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (c *Core) post(w http.ResponseWriter, r *http.Request) {
	if !c.Faults.wait(r.Context()) {
		return
	}
	if c.Faults.isDown() {
		problem.Write(w, problem.New(Down, "the core ledger is down; nothing was posted"))
		return
	}
	key, err := idemkey.FromRequest(r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	p, err := c.read(r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	if c.Faults.rejects(p.TransferID) {
		problem.Write(w, problem.New(Rejected, "the core ledger rejects the posting of %s for good", p.TransferID))
		return
	}
	rc, replayed, err := c.apply(r.Context(), key, p)
	if err != nil {
		problem.Write(w, err)
		return
	}
	if c.Faults.takeLostAnswer() {
		// Applied, and the answer never arrives: the caller cannot tell
		// this from a posting that was not applied.
		panic(http.ErrAbortHandler)
	}
	status := http.StatusCreated
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	respond.JSON(w, status, rc)
}

// read reads the posting r carries and checks it against the books: a
// problem error if it is not one, or not the bank's.
func (c *Core) read(r *http.Request) (Posting, error) {
	req, err := request.Posting(r)
	if errors.Is(err, problem.InvalidRequest) {
		return Posting{}, problem.New(InvalidPosting, "%s; nothing was posted", problem.From(err).Detail)
	}
	if err != nil {
		return Posting{}, err
	}
	p := Posting(req)
	if c.books == nil {
		return p, nil
	}
	ctx := r.Context()
	t, ok, err := c.books.Transfer(ctx, p.TransferID)
	if err != nil {
		return Posting{}, problem.Wrap(problem.Internal, err, "read the bank's books")
	}
	if ok && t.From == p.From && t.To == p.To && t.Amount == p.Amount {
		// The transfer as the bank recorded it: its accounts exist. One
		// read for every posting a relay gets right, the accounts' only
		// for one it gets wrong.
		return p, nil
	}
	for _, acc := range []string{p.From, p.To} {
		ok, err := c.books.AccountExists(ctx, acc)
		if err != nil {
			return Posting{}, problem.Wrap(problem.Internal, err, "read the bank's books")
		}
		if !ok {
			return Posting{}, problem.New(problem.UnknownAccount, "the bank has no account %s; nothing was posted", acc)
		}
	}
	if !ok {
		return Posting{}, problem.New(UnknownTransfer, "the bank executed no transfer %s; nothing was posted", p.TransferID)
	}
	if t.From != p.From || t.To != p.To || t.Amount != p.Amount {
		return Posting{}, problem.New(PostingMismatch, "transfer %s moved %d won from %s to %s, not %d from %s to %s; nothing was posted",
			p.TransferID, t.Amount, t.From, t.To, p.Amount, p.From, p.To)
	}
	return p, nil
}

// apply posts p under key once: a second posting with the key gets the
// first's receipt (replayed), or 422 if it says something else.
func (c *Core) apply(ctx context.Context, key string, p Posting) (Receipt, bool, error) {
	raw, _ := json.Marshal(p)
	sum := sha256.Sum256(raw)
	fp := hex.EncodeToString(sum[:])
	res, err := c.db.ExecContext(ctx, `INSERT INTO core_postings (idempotency_key, fingerprint, transfer_id, from_account, to_account, amount)
		VALUES (?, ?, ?, ?, ?, ?)`, key, fp, p.TransferID, p.From, p.To, p.Amount)
	if err == nil {
		id, err := res.LastInsertId()
		if err != nil {
			return Receipt{}, false, problem.Wrap(problem.Internal, err, "post")
		}
		return Receipt{ID: id, TransferID: p.TransferID, From: p.From, To: p.To, Amount: p.Amount, Key: key}, false, nil
	}
	if !labdb.IsUniqueViolation(err) {
		return Receipt{}, false, problem.Wrap(problem.Internal, err, "post")
	}
	var rc Receipt
	var stored string
	err = c.db.QueryRowContext(ctx, `SELECT id, fingerprint, transfer_id, from_account, to_account, amount FROM core_postings
		WHERE idempotency_key = ?`, key).Scan(&rc.ID, &stored, &rc.TransferID, &rc.From, &rc.To, &rc.Amount)
	if err != nil {
		return Receipt{}, false, problem.Wrap(problem.Internal, err, "read the posting")
	}
	if stored != fp {
		return Receipt{}, false, problem.New(problem.IdempotencyKeyReused, "Idempotency-Key %q was first used for another posting", key)
	}
	rc.Key = key
	return rc, true, nil
}

// Postings returns every posting applied, in the order applied.
func (c *Core) Postings(ctx context.Context) ([]Receipt, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT id, idempotency_key, transfer_id, from_account, to_account, amount FROM core_postings ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read the postings: %w", err)
	}
	defer rows.Close()
	out := []Receipt{}
	for rows.Next() {
		var rc Receipt
		if err := rows.Scan(&rc.ID, &rc.Key, &rc.TransferID, &rc.From, &rc.To, &rc.Amount); err != nil {
			return nil, fmt.Errorf("read the postings: %w", err)
		}
		out = append(out, rc)
	}
	return out, rows.Err()
}

// Faults are the ways the core fails on purpose, for the checks. The zero
// value fails in no way.
type Faults struct {
	mu      sync.Mutex
	down    bool
	lose    int
	refused int
	// poisoned are the transfers whose postings are rejected for good;
	// poisonNext is how many of the next postings join them.
	poisoned   map[string]bool
	poisonNext int
	// flap is how many of the next postings still alternate down and up;
	// flapDown says whether the last of them was refused.
	flap     int
	flapDown bool
	// held, while not nil, keeps every posting waiting until it closes.
	held chan struct{}
}

// SetDown takes the core down (every posting gets 503 core-down and is not
// applied) or brings it back.
func (f *Faults) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// LoseAnswers makes the core apply the next n postings and then drop the
// connection instead of answering.
func (f *Faults) LoseAnswers(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose = n
}

// Flap makes the core flap for its next n postings: down for the first
// (503 core-down, not applied), up for the second, down for the third, and
// so on; then it is as before.
func (f *Faults) Flap(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flap, f.flapDown = n, false
}

// Refused is how many postings the core has refused while down: a check
// waits for the relay's first try before it brings the core back.
func (f *Faults) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// isDown says whether the core is down, and counts a posting refused.
func (f *Faults) isDown() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	down := f.down
	if f.flap > 0 {
		f.flap--
		f.flapDown = !f.flapDown
		down = down || f.flapDown
	}
	if down {
		f.refused++
	}
	return down
}

func (f *Faults) takeLostAnswer() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose == 0 {
		return false
	}
	f.lose--
	return true
}

// Poison makes the core reject every posting of the transfer with
// transferID, now and for good, with 422 posting-rejected: a poison
// message, which no retry gets through.
func (f *Faults) Poison(transferID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.poison(transferID)
}

// PoisonNext makes the core reject the transfer of the next posting it
// receives as Poison does, whichever transfer that is.
func (f *Faults) PoisonNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.poisonNext++
}

// Poisoned lists the transfers whose postings the core rejects for good,
// sorted.
func (f *Faults) Poisoned() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, 0, len(f.poisoned))
	for id := range f.poisoned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (f *Faults) poison(transferID string) {
	if f.poisoned == nil {
		f.poisoned = map[string]bool{}
	}
	f.poisoned[transferID] = true
}

// rejects says whether a posting of transferID is rejected for good.
func (f *Faults) rejects(transferID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.poisonNext > 0 && !f.poisoned[transferID] {
		f.poisonNext--
		f.poison(transferID)
	}
	return f.poisoned[transferID]
}

// Hold makes the core slow beyond measure: every posting waits,
// unanswered and not applied, until Release (or until its caller gives
// up).
func (f *Faults) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = make(chan struct{})
	}
}

// Release lets the postings Hold kept waiting go on, and the next ones
// through at once.
func (f *Faults) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != nil {
		close(f.held)
		f.held = nil
	}
}

// wait waits while the core is held; it reports false if ctx ended first.
func (f *Faults) wait(ctx context.Context) bool {
	f.mu.Lock()
	held := f.held
	f.mu.Unlock()
	if held == nil {
		return true
	}
	select {
	case <-held:
		return true
	case <-ctx.Done():
		return false
	}
}
