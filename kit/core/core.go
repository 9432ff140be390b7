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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
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
	// Failed, BadGateway, GatewayTimeout, TooMany, TooSlow, RouteMissing,
	// PostNotAllowed and MediaTypeLost are the other answers that say "not
	// now", by which a flapping core (or a deploy or a proxy before it)
	// refuses a posting besides Down (Faults.Flap).
	Failed = &problem.Type{Name: "core-failed", Status: http.StatusInternalServerError, Title: "Core ledger failed",
		Explain: "The core ledger failed while it handled the posting. Nothing was posted: send the same posting again, with the same Idempotency-Key."}
	BadGateway = &problem.Type{Name: "core-bad-gateway", Status: http.StatusBadGateway, Title: "Bad gateway",
		Explain: "The proxy before the core ledger got no usable answer from it. Nothing was posted: send the same posting again, with the same Idempotency-Key."}
	GatewayTimeout = &problem.Type{Name: "core-gateway-timeout", Status: http.StatusGatewayTimeout, Title: "Gateway timeout",
		Explain: "The proxy before the core ledger gave up waiting for it. Nothing was posted: send the same posting again, with the same Idempotency-Key."}
	TooMany = &problem.Type{Name: "core-too-many-requests", Status: http.StatusTooManyRequests, Title: "Too many requests",
		Explain:    "The core ledger takes no more postings from this caller for a while. Nothing was posted: send the same posting again, with the same Idempotency-Key, after Retry-After.",
		RetryAfter: time.Second}
	TooSlow = &problem.Type{Name: "core-request-timeout", Status: http.StatusRequestTimeout, Title: "Request timeout",
		Explain: "The core ledger stopped waiting for the request. Nothing was posted: send the same posting again, with the same Idempotency-Key."}
	// RouteMissing, PostNotAllowed and MediaTypeLost refuse the request,
	// not the posting: the core's address, or how the request reached it,
	// wrong for a while, after which the same posting goes through as it
	// is.
	RouteMissing = &problem.Type{Name: "core-not-found", Status: http.StatusNotFound, Title: "Not found",
		Explain: "Nothing answers at the core ledger's address for a while: a deploy under way, or a proxy route missing. Nothing was posted: send the same posting again, with the same Idempotency-Key, once the route is back."}
	PostNotAllowed = &problem.Type{Name: "core-method-not-allowed", Status: http.StatusMethodNotAllowed, Title: "Method not allowed",
		Explain: "The core ledger's address takes no POST for a while: a deploy under way, or a proxy route sent to another service. Nothing was posted: send the same posting again, with the same Idempotency-Key, once the route is back."}
	MediaTypeLost = &problem.Type{Name: "core-unsupported-media-type", Status: http.StatusUnsupportedMediaType, Title: "Unsupported media type",
		Explain: "The request reached the core ledger without the Content-Type it was sent with: a proxy before it rewrote the header for a while. Nothing was posted: send the same posting again, with the same Idempotency-Key, once the proxy is mended."}
	// Rejected is the answer to a posting the core will never apply
	// (Faults.Poison): sent again, under any key, it is refused again.
	Rejected = &problem.Type{Name: "posting-rejected", Status: http.StatusUnprocessableEntity, Title: "Posting rejected",
		Explain: "The core ledger will never apply this posting. Nothing was posted, and sending it again changes nothing: set it aside for a person to look at."}
	// InvalidPosting is the answer to a body that is not a posting.
	InvalidPosting = &problem.Type{Name: "invalid-posting", Status: http.StatusBadRequest, Title: "Invalid posting",
		Explain: `The body must be one JSON object {"transfer_id","from","to","amount"}, valid UTF-8, each member once and no other: a transfer id (tr_…), two different account ids (acc_…) and an amount of 1 to 1,000,000,000 won, or less where the core ledger sets a limit of its own. The detail names the member, and the limit when it is the core's. Nothing was posted.`}
	// InvalidBatch is the answer to a body of POST /postings/batch that is
	// not a batch; a member's posting that is not one is answered
	// InvalidPosting in its place, and the others are posted.
	InvalidBatch = &problem.Type{Name: "invalid-batch", Status: http.StatusBadRequest, Title: "Invalid batch",
		Explain: fmt.Sprintf(`The body must be one JSON array of 1 to %d members, each an object {"key","posting"}, with each member once and no other, and nothing after the array: the Idempotency-Key the posting is posted under, and the posting as POST /postings takes it. The detail says what is wrong. Nothing was posted.`, request.MaxBatch)}
	// UnknownTransfer is the answer to a posting for a transfer the bank
	// never executed.
	UnknownTransfer = &problem.Type{Name: "unknown-transfer", Status: http.StatusUnprocessableEntity, Title: "Unknown transfer",
		Explain: "The bank has no transfer with this id: the core posts only transfers the bank executed and committed. Nothing was posted."}
	// PostingMismatch is the answer to a posting that says other accounts
	// or another amount than the transfer it names.
	PostingMismatch = &problem.Type{Name: "posting-mismatch", Status: http.StatusUnprocessableEntity, Title: "Posting does not match its transfer",
		Explain: "The posting names a transfer the bank executed, but with other accounts or another amount than the bank recorded. Post what the bank's transfer says. Nothing was posted."}
)

// Books is the bank's record a posting is checked against, read only
// (bank.Books, on the lab's database).
type Books interface {
	// AccountExists reports whether the bank has the account.
	AccountExists(ctx context.Context, id string) (bool, error)
	// Transfers returns the accounts and amount of each transfer the bank
	// executed among ids, by id; an id it executed no transfer under is
	// not in the map.
	Transfers(ctx context.Context, ids []string) (map[string]bank.TransferRecord, error)
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

// Handler serves POST /postings (one posting; an Idempotency-Key is
// required), POST /postings/batch (up to request.MaxBatch postings, each
// with its key), GET /postings (every posting, in the order applied),
// GET and POST /faults/poison-next (how many of the next postings the core
// refuses for good, as Faults.ArmPoisonNext sets it: the lab server's
// poison-posting fault, for a core in a process of its own) and GET
// /healthz, each only to a request that carries the core's token.
func (c *Core) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /postings", c.post)
	mux.HandleFunc("POST /postings/batch", c.postBatch)
	mux.HandleFunc("GET /faults/poison-next", c.poisonNext)
	mux.HandleFunc("POST /faults/poison-next", c.poisonNext)
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

// MaxPoisonNext is the most postings POST /faults/poison-next arms.
const MaxPoisonNext = 1_000_000

// poisonNext serves GET /faults/poison-next, and POST with {"count": n},
// 0 to MaxPoisonNext, which arms n (Faults.ArmPoisonNext); both answer
// {"left": n}, how many of the next postings the core still refuses for
// good.
func (c *Core) poisonNext(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var in struct {
			Count *int `json:"count"`
		}
		// One object, nothing after it, no member twice (request.Object):
		// {"count":1}{"count":5} or {"count":1,"count":5} is no count.
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		if err == nil {
			err = request.Object(raw)
		}
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			err = dec.Decode(&in)
		}
		if err != nil || in.Count == nil || *in.Count < 0 || *in.Count > MaxPoisonNext {
			problem.Write(w, problem.New(problem.InvalidRequest, `the body must be {"count": n}, n from 0 to %d`, MaxPoisonNext))
			return
		}
		c.Faults.ArmPoisonNext(*in.Count)
	}
	respond.JSON(w, http.StatusOK, map[string]int{"left": c.Faults.PoisonNextLeft()})
}

// entry is one posting of a request on its way through the core: its key
// and posting as read, then its refusal or its receipt.
type entry struct {
	key      string
	posting  Posting
	err      error
	receipt  Receipt
	replayed bool
}

// acked reports whether the core acknowledged the entry.
func (e *entry) acked() bool { return e.err == nil }

func (c *Core) post(w http.ResponseWriter, r *http.Request) {
	down, ok, done := c.Faults.wait(r.Context())
	defer done()
	if !ok || c.refuseToken(w) {
		return
	}
	if c.Faults.silences() {
		silent(r)
	}
	if c.Faults.drops() {
		// Nothing applied, and no answer.
		panic(http.ErrAbortHandler)
	}
	if c.Faults.refuseDown(down, 1) {
		problem.Write(w, problem.New(Down, "the core ledger is down; nothing was posted"))
		return
	}
	if not := c.Faults.flaps(); not != nil {
		problem.Write(w, problem.New(not, "not now; nothing was posted"))
		return
	}
	var e entry
	e.key, e.err = idemkey.FromRequest(r)
	if e.err == nil {
		req, err := request.Posting(r)
		e.posting, e.err = Posting(req), postingProblem(err)
	}
	if err := c.settle(r.Context(), []*entry{&e}); err != nil {
		problem.Write(w, err)
		return
	}
	if e.err != nil {
		problem.Write(w, e.err)
		return
	}
	if c.Faults.losesAnswer(1) {
		// Applied, and the answer never arrives: the caller cannot tell
		// this from a posting that was not applied.
		panic(http.ErrAbortHandler)
	}
	status := http.StatusCreated
	if e.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	respond.JSON(w, status, e.receipt)
}

// postingProblem is err, request.Posting's, as the core names it: a body
// that is no posting is an invalid posting.
func postingProblem(err error) error {
	if errors.Is(err, problem.InvalidRequest) {
		return problem.New(InvalidPosting, "%s; nothing was posted", problem.From(err).Detail)
	}
	return err
}

// settle checks each entry not yet refused against the books, refuses
// those the core rejects for good, and applies the others in one
// transaction, in the order of their keys. It returns a problem error,
// with nothing applied, if the books cannot be read or the postings cannot
// be written.
func (c *Core) settle(ctx context.Context, entries []*entry) error {
	if err := c.check(ctx, entries); err != nil {
		return err
	}
	var apply []*entry
	for _, e := range entries {
		if e.err == nil {
			e.err = c.Faults.refusesForGood(e.posting)
		}
		if e.err == nil && c.Faults.inProgress(e.posting.TransferID) {
			e.err = problem.New(problem.RequestInProgress, "a request under this key is still in progress at the core ledger; nothing was posted: send it again later")
		}
		if e.err == nil {
			apply = append(apply, e)
		}
	}
	if len(apply) == 0 {
		return nil
	}
	// A key's row is held from its insert to the commit. Two batches that
	// hold some of the same keys (one row re-sent by two relays) must take
	// them in one order: each in its batch's order, on PostgreSQL, one
	// would hold a key the other waits for while it waits for one the
	// other holds, and PostgreSQL would abort it (40P01). SQLite runs one
	// writer at a time, so there one batch is done before the next starts.
	// Stable: the same key twice in a batch keeps its order, the first
	// posted and the second its replay or its refusal, as if sent one
	// after the other; the answers keep the batch's order whatever this.
	slices.SortStableFunc(apply, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return problem.Wrap(problem.Internal, err, "post")
	}
	defer tx.Rollback()
	for _, e := range apply {
		if err := c.apply(ctx, tx, e); err != nil {
			return problem.Wrap(problem.Internal, err, "post")
		}
	}
	if err := tx.Commit(); err != nil {
		return problem.Wrap(problem.Internal, err, "post")
	}
	return nil
}

// check refuses each entry not yet refused whose posting is not what the
// bank's books say, reading every transfer the entries name at once. It
// returns a problem error if the books cannot be read.
func (c *Core) check(ctx context.Context, entries []*entry) error {
	if c.books == nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.err == nil {
			ids = append(ids, e.posting.TransferID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	transfers, err := c.books.Transfers(ctx, ids)
	if err != nil {
		return problem.Wrap(problem.Internal, err, "read the bank's books")
	}
	for _, e := range entries {
		if e.err != nil {
			continue
		}
		t, ok := transfers[e.posting.TransferID]
		if ok && t.From == e.posting.From && t.To == e.posting.To && t.Amount == e.posting.Amount {
			// The transfer as the bank recorded it: its accounts exist.
			// Only a posting the relay gets wrong costs more reads.
			continue
		}
		if e.err, err = c.wrong(ctx, e.posting, t, ok); err != nil {
			return problem.Wrap(problem.Internal, err, "read the bank's books")
		}
	}
	return nil
}

// wrong says why p is not the bank's transfer t (ok false: the bank has
// no transfer of that id): an account the bank does not have, a transfer
// it never executed, or one it recorded otherwise. It returns an error if
// the books cannot be read.
func (c *Core) wrong(ctx context.Context, p Posting, t bank.TransferRecord, ok bool) (refusal, err error) {
	for _, acc := range []string{p.From, p.To} {
		exists, err := c.books.AccountExists(ctx, acc)
		if err != nil {
			return nil, err
		}
		if !exists {
			return problem.New(problem.UnknownAccount, "the bank has no account %s; nothing was posted", acc), nil
		}
	}
	if !ok {
		return problem.New(UnknownTransfer, "the bank executed no transfer %s; nothing was posted", p.TransferID), nil
	}
	return problem.New(PostingMismatch, "transfer %s moved %d won from %s to %s, not %d from %s to %s; nothing was posted",
		p.TransferID, t.Amount, t.From, t.To, p.Amount, p.From, p.To), nil
}

// apply posts e's posting under its key once, in tx: a second posting with
// the key, in this transaction or before it, gets the first's receipt
// (replayed), or 422 if it says something else. It returns the database's
// error, which ends tx.
func (c *Core) apply(ctx context.Context, tx *sql.Tx, e *entry) error {
	raw, _ := json.Marshal(e.posting)
	sum := sha256.Sum256(raw)
	fp := hex.EncodeToString(sum[:])
	p := e.posting
	// ON CONFLICT DO NOTHING rather than an INSERT that fails in a
	// savepoint: a batch is up to request.MaxBatch postings in one
	// transaction, and on PostgreSQL each savepoint that writes takes a
	// subtransaction of its own, past 64 of which every other session's
	// snapshots read slower while the transaction is open.
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO core_postings (idempotency_key, fingerprint, transfer_id, from_account, to_account, amount)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
		e.key, fp, p.TransferID, p.From, p.To, p.Amount).Scan(&id)
	if err == nil {
		e.receipt = Receipt{ID: id, TransferID: p.TransferID, From: p.From, To: p.To, Amount: p.Amount, Key: e.key}
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	// The key was taken, by an earlier request or earlier in this one.
	rc := Receipt{Key: e.key}
	var stored string
	err = tx.QueryRowContext(ctx, `SELECT id, fingerprint, transfer_id, from_account, to_account, amount FROM core_postings
		WHERE idempotency_key = ?`, e.key).Scan(&rc.ID, &stored, &rc.TransferID, &rc.From, &rc.To, &rc.Amount)
	if err != nil {
		return fmt.Errorf("read the posting: %w", err)
	}
	if stored != fp {
		e.err = problem.New(problem.IdempotencyKeyReused, "Idempotency-Key %q was first used for another posting", e.key)
		return nil
	}
	e.receipt, e.replayed = rc, true
	return nil
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
	mu   sync.Mutex
	down bool
	lose int
	// drop is how many of the next posting requests lose their
	// connection before anything is applied.
	drop int
	// silent is how many of the next posting requests get no answer and
	// have nothing applied, until their caller gives up.
	silent  int
	refused int
	// poisoned are the transfers whose postings are rejected for good;
	// poisonNext is how many of the next postings join them.
	poisoned   map[string]bool
	poisonNext int
	// poisonedSends counts the postings refused for good received: those
	// of poisoned transfers, and those over maxAmount.
	poisonedSends int
	// maxAmount, when not 0, is the most a posting may move: the core's
	// own rule, stricter than the bank's.
	maxAmount int64
	// answers are the core's answers to the postings it refused for good,
	// by transfer.
	answers map[string]Result
	// flap is how many of the next postings still alternate down and up;
	// flapDown says whether the last of them was refused. The refused
	// are answered flapAnswers in turn, from flapNext.
	flap        int
	flapDown    bool
	flapAnswers []*problem.Type
	flapNext    int
	// held, while not nil, keeps every posting waiting until Release;
	// arrivals counts the requests that came to wait on it, and left
	// those of them the core is done with.
	held     *hold
	arrivals int
	left     int
	// tokenRefused refuses the caller's token, as after a rotation the
	// caller has not caught up with; tokenRefusals counts the requests
	// refused since, answered 401 and 403 in turn.
	tokenRefused  bool
	tokenRefusals int
	// batchesCut cuts every batch request's body short on the way in.
	batchesCut bool
	// stuck is the transfer whose postings are answered 409, in
	// progress, if any; stuckNext says the next posting's transfer
	// becomes it.
	stuck     string
	stuckNext bool
}

// InProgressNext makes the core answer every posting of the transfer of
// the next posting it receives 409 request-in-progress, and apply none,
// as if a request under its key (another sender's, or one the core is
// still working on) had not finished, until EndInProgress: a refusal for
// now of one posting, pass after pass, while the others go through. Each
// such answer counts one in Refused.
func (f *Faults) InProgressNext() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stuck, f.stuckNext = "", true
}

// EndInProgress lets the transfer InProgressNext took through: its next
// posting is applied as any other.
func (f *Faults) EndInProgress() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stuck, f.stuckNext = "", false
}

// InProgress is the transfer InProgressNext took, if it has taken one
// and EndInProgress has not let it through.
func (f *Faults) InProgress() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stuck
}

// inProgress says whether a posting of transferID is answered 409 in
// progress, and counts it refused if it is.
func (f *Faults) inProgress(transferID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stuckNext {
		f.stuck, f.stuckNext = transferID, false
	}
	if f.stuck == "" || f.stuck != transferID {
		return false
	}
	f.refused++
	return true
}

// CutBatches makes the core read every batch request with its body cut
// short, the first half only, as from a proxy on the way that drops the
// rest, until it is called with false. The core refuses each such
// request whole (400 invalid-batch) and posts none of it: a refusal of
// the request, not of any posting in it, and the same postings go
// through once the bodies arrive whole. A posting sent alone is not cut.
// Each request cut counts one in Refused.
func (f *Faults) CutBatches(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batchesCut = cut
}

// cutsBatch cuts the body of r, a batch request, to its first half while
// CutBatches holds, and counts the request refused if it does.
func (f *Faults) cutsBatch(r *http.Request) {
	f.mu.Lock()
	cut := f.batchesCut
	if cut {
		f.refused++
	}
	f.mu.Unlock()
	if !cut {
		return
	}
	// At most one byte more than the core reads of a batch: cut, even a
	// body too large is one it cannot parse.
	raw, _ := io.ReadAll(io.LimitReader(r.Body, int64(request.MaxBatchBody)+1))
	half := raw[:len(raw)/2]
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(half)), int64(len(half))
}

// RefuseToken makes the core refuse the caller's token on every posting
// request, as in a rotation rolled out to some of the core's instances
// and not yet to others, until it is called with false: the first request
// gets 401 unauthorized (an instance that no longer knows the token the
// caller sends), the next 403 forbidden (one that knows it and does not
// yet let it post), and so on in turn. Either is a refusal of the caller,
// not of any posting. Each request refused counts one in Refused.
func (f *Faults) RefuseToken(refuse bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenRefused, f.tokenRefusals = refuse, 0
}

// refusesToken says whether the core refuses the token of a posting
// request now, with the status to answer it, and counts the request
// refused if it does.
func (f *Faults) refusesToken() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.tokenRefused {
		return 0, false
	}
	f.refused++
	f.tokenRefusals++
	if f.tokenRefusals%2 == 0 {
		return http.StatusForbidden, true
	}
	return http.StatusUnauthorized, true
}

// refuseToken answers a posting request 401 or 403 while RefuseToken
// holds, and reports whether it did.
func (c *Core) refuseToken(w http.ResponseWriter) bool {
	status, refused := c.Faults.refusesToken()
	switch {
	case !refused:
		return false
	case status == http.StatusForbidden:
		problem.Write(w, problem.New(problem.Forbidden, "the core ledger knows this token and does not let it post yet (a rotation under way): nothing was posted"))
	default:
		problem.Write(w, problem.New(problem.Unauthorized, "the core ledger does not know this token (rotated): send the current core token"))
	}
	return true
}

// SetDown takes the core down (every posting gets 503 core-down and is not
// applied; a batch is refused whole, each of its postings counted
// refused) or brings it back.
func (f *Faults) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// LoseAnswers makes the core apply the next n postings and then drop the
// connection instead of answering: a batch that carries one of them is
// applied whole and its answer lost.
func (f *Faults) LoseAnswers(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose = n
}

// DropUnapplied makes the core drop the connection of its next n posting
// requests, alone or in a batch, before it applies anything: no answer,
// and nothing posted. The caller cannot tell this from an answer lost
// after the posting was applied (LoseAnswers): only sending again, under
// the same key, finds out.
func (f *Faults) DropUnapplied(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop = n
}

// Silence makes the core take its next n posting requests, alone or in
// a batch, and answer nothing and apply nothing until their caller gives
// up waiting (a timeout, the kit client's or the caller's own): a core
// slower than its caller's patience, which never got as far as the
// posting. Only sending again, under the same key, posts it.
func (f *Faults) Silence(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silent = n
}

// Unanswering is how many of the posting requests Silence and
// DropUnapplied named the core has yet to leave unanswered.
func (f *Faults) Unanswering() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.silent + f.drop
}

// silences says whether the core keeps silent for this posting request,
// and uses up one of the requests Silence named if it does.
func (f *Faults) silences() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.silent == 0 {
		return false
	}
	f.silent--
	return true
}

// silent answers nothing to r and applies nothing until its caller gives
// up. It reads the body first: the server sees the caller hang up (and
// ends r's context) only once the body has been read.
func silent(r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
	panic(http.ErrAbortHandler)
}

// drops says whether the core drops the connection of this posting
// request before it applies anything, and uses up one of the requests
// DropUnapplied named if it does.
func (f *Faults) drops() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop == 0 {
		return false
	}
	f.drop--
	return true
}

// Flap makes the core flap for its next n postings: down for the first
// (not applied), up for the second, down for the third, and so on; then it
// is as before. In a batch, the postings take their turns in order, each
// refused or applied alone. The refused are answered with answers in
// turn, each a refusal for now; with none, 503 core-down.
func (f *Faults) Flap(n int, answers ...*problem.Type) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(answers) == 0 {
		answers = []*problem.Type{Down}
	}
	f.flap, f.flapDown, f.flapAnswers, f.flapNext = n, false, answers, 0
}

// Refused is how many postings the core has refused while down or in
// progress, and requests while it refused their token or cut their
// bodies: a check waits for the relay's first tries before it brings the
// core back.
func (f *Faults) Refused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// refuseDown counts the n postings of a request refused while the core
// was down (wait said so), if it was, and reports whether it was.
func (f *Faults) refuseDown(down bool, n int) bool {
	if !down {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused += n
	return true
}

// flaps says how the core, flapping, refuses the next posting, nil if it
// does not, and counts it refused if it does.
func (f *Faults) flaps() *problem.Type {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flap == 0 {
		return nil
	}
	f.flap--
	f.flapDown = !f.flapDown
	if !f.flapDown {
		return nil
	}
	f.refused++
	not := f.flapAnswers[f.flapNext%len(f.flapAnswers)]
	f.flapNext++
	return not
}

// losesAnswer says whether the answer to a request whose acked postings
// were applied is lost, and counts them among the lost.
func (f *Faults) losesAnswer(acked int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose == 0 || acked == 0 {
		return false
	}
	f.lose -= min(f.lose, acked)
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

// ArmPoisonNext makes the core reject the transfers of the next n
// postings it receives as PoisonNext does, in place of those armed before;
// 0 disarms it. The transfers already poisoned stay so.
func (f *Faults) ArmPoisonNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.poisonNext = n
}

// PoisonNextLeft is how many of the next postings the core will still
// reject as PoisonNext does.
func (f *Faults) PoisonNextLeft() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.poisonNext
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

// LimitAmount makes the core refuse for good every posting of more than
// max won, with 400 invalid-posting naming its amount, until it is called
// with 0: a rule of the core's own, stricter than the bank's, which a
// posting the bank executed breaks however often it is sent. A posting
// over the limit is not one PoisonNext takes.
func (f *Faults) LimitAmount(max int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxAmount = max
}

// refusesForGood returns the core's refusal of p if its faults refuse p
// for good (over the limit of LimitAmount, or poisoned), and nil if they
// do not; it counts each refusal in PoisonedSends and keeps its answer
// for Answer.
func (f *Faults) refusesForGood(p Posting) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	switch {
	case f.maxAmount > 0 && p.Amount > f.maxAmount:
		err = problem.New(InvalidPosting, "amount: the core ledger posts at most %d won at once, and the posting of %s moves %d; nothing was posted", f.maxAmount, p.TransferID, p.Amount)
	case f.poisonNext > 0 && !f.poisoned[p.TransferID]:
		f.poisonNext--
		f.poison(p.TransferID)
		fallthrough
	case f.poisoned[p.TransferID]:
		err = problem.New(Rejected, "the core ledger rejects the posting of %s for good", p.TransferID)
	default:
		return nil
	}
	f.poisonedSends++
	status, body := problem.Marshal(err)
	if f.answers == nil {
		f.answers = map[string]Result{}
	}
	f.answers[p.TransferID] = Result{Status: status, Body: trimNewline(body)}
	return err
}

// Answer is the core's last answer to a posting of transferID that it
// refused for good (Poison, PoisonNext, LimitAmount): its status and
// body as it sent them, without the line break that ends a body sent
// alone. It reports false if the core has refused none.
func (f *Faults) Answer(transferID string) (Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.answers[transferID]
	return a, ok
}

// PoisonedSends is how many postings the core has received and refused
// for good, those of the poisoned transfers and those over the limit of
// LimitAmount: a relay that set one aside sends it no more.
func (f *Faults) PoisonedSends() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.poisonedSends
}

// hold is one Hold, from Hold to Release: the requests that came during
// it wait for released to close, and then go on as the core was at the
// Release, down or not.
type hold struct {
	released chan struct{}
	// down is whether the core was down at the Release; written before
	// released closes.
	down bool
}

// Hold makes the core slow beyond measure: every posting waits,
// unanswered and not applied, until Release (or until its caller gives
// up).
func (f *Faults) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = &hold{released: make(chan struct{})}
	}
}

// Release lets the postings Hold kept waiting go on, and the next ones
// through at once. Whether the core is down for the postings it lets go
// is decided now: a core that goes down or comes back after the Release
// changes nothing for them.
func (f *Faults) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != nil {
		f.letGo()
		f.held = nil
	}
}

// letGo lets the postings the hold now in force keeps waiting go on, as
// the core is now, down or not. f.mu is held.
func (f *Faults) letGo() {
	f.held.down = f.down
	close(f.held.released)
}

// LetThrough lets the postings Hold kept waiting go on, as Release does,
// and keeps holding every posting that comes after: one step of a held
// core, so that a check can change the core between the requests it let
// through and the next (the next one comes while the core still holds).
// Without a Hold it does nothing.
func (f *Faults) LetThrough() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held != nil {
		f.letGo()
		f.held = &hold{released: make(chan struct{})}
	}
}

// Held is how many posting requests, alone or batches, have come to the
// core while Hold kept them waiting, since it started: those its caller
// has not given up on (core.Client.GivenUp, counted where the caller
// gives up) are the calls still waiting now. A request counts as it
// arrives; the core does not see its caller give up, since it reads
// nothing of a held request.
func (f *Faults) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.arrivals
}

// Left is how many of the requests counted in Held the core is done
// with: answered (or refused, or dropped) once let go, whether or not
// their caller still waits for the answer (the core reads nothing of a
// held request, so it does not see a caller give up). Once it reaches
// the count Held gave before a Release, what the core did with every
// posting that Release let go is there to read (Postings, Answer).
func (f *Faults) Left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.left
}

// wait waits while the core is held, then says whether the core is down
// for the request: decided as it arrives, or as the hold it waited for is
// released, before its body is read. A request that came while the core
// was down is refused whole even if the core comes back while its body
// is still arriving, so that a check that brings the core back while it
// holds every request sees each relay pass either refused or held, and
// none applied unheld. It reports ok false if ctx ended first. The
// handler calls done as it returns: a request that waited then counts in
// Left.
func (f *Faults) wait(ctx context.Context) (down, ok bool, done func()) {
	f.mu.Lock()
	h := f.held
	if h == nil {
		defer f.mu.Unlock()
		return f.down, true, func() {}
	}
	f.arrivals++
	f.mu.Unlock()
	done = func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.left++
	}
	select {
	case <-h.released:
		return h.down, true, done
	case <-ctx.Done():
		return false, false, done
	}
}
