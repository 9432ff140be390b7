package labctl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/events"
	"idemlab/kit/fault"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
)

// Controller serves /lab for one lab server.
type Controller struct {
	DB       *labdb.DB
	Bank     *bank.Bank
	Clock    *clock.Clock
	Hub      *events.Hub
	Settings *Settings
	Faults   *Faults
	// Purge removes expired keys; nil when the stage keeps keys forever.
	Purge func(ctx context.Context) (int64, error)
	// Restage has the stage create its tables again, after a reset dropped
	// them.
	Restage func(ctx context.Context) error
	// CoreUnanswered counts the postings the server's core client gave up
	// on without an answer while the customer's request that made their
	// transfer was still being served (core.Client.Unanswered); nil reads
	// 0.
	CoreUnanswered func() int64
	// CoreGivenUp counts every request the server's core client gave up
	// on without an answer (core.Client.GivenUp); nil reads 0.
	CoreGivenUp func() int64
	// KeyRowsPublished waits until every change to a key row committed
	// before it was called has been published as a "key" event, or ctx
	// ends; nil when key events go out as their commits happen. A move of
	// the clock waits for it before it publishes its own event, so that a
	// reader who moves the clock by nothing and waits for that event (a
	// fence) has heard every key event before it.
	KeyRowsPublished func(ctx context.Context) error
	// RelayPasses counts the passes of the stage's outbox relay the
	// server ran since it started, and the rows they said they settled
	// (the sum of the counts they returned); nil reads 0.
	RelayPasses func() (passes, settled int64)
	// RandomTokens has a reset draw the customers' tokens from crypto/rand
	// (bank.DrawTokens); their ids and accounts stay the seed's. A server
	// other people reach needs it: anyone can draw a seed's tokens, and
	// act as its customers.
	RandomTokens bool
	// Replica keeps the server in step with the other server processes
	// on its database; nil when it has the database to itself (Alone).
	Replica *Replica

	// resetting is held for writing by a reset and for reading by every
	// request and lab read (see Shared): between a reset's drop of the
	// stage's tables and their re-creation, nobody looks for them.
	resetting sync.RWMutex
}

// Shared runs fn while no reset is under way (many may run at once).
func (c *Controller) Shared(fn func()) {
	c.resetting.RLock()
	defer c.resetting.RUnlock()
	fn()
}

// UnlessResetting runs fn if no reset is under way or waiting, and
// reports whether it did. It never waits: the goroutine that publishes key
// events uses it, because the requests a reset waits for may be waiting
// for that goroutine, and whatever a reset interrupts it also erases.
func (c *Controller) UnlessResetting(fn func()) bool {
	if !c.resetting.TryRLock() {
		return false
	}
	defer c.resetting.RUnlock()
	fn()
	return true
}

// Quiesced is middleware that serves each request while no reset is under
// way, so that a request never meets the lab half reset. A request must
// not wait on its client while it holds the lab: a reset waits for it, and
// every request after the reset waits for the reset. The lab server reads
// each body before the request gets here (kit/server).
func (c *Controller) Quiesced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.Shared(func() { next.ServeHTTP(w, r) })
	})
}

// Routes mounts the control endpoints on r (already behind admin auth).
func (c *Controller) Routes(r chi.Router) {
	r.Post("/reset", c.handleReset)
	r.Get("/events", c.Hub.ServeHTTP)
	r.Group(func(r chi.Router) {
		r.Use(c.Quiesced)
		r.Get("/state", c.handleState)
		r.Get("/clock", c.handleGetClock)
		r.Get("/transfers", c.handleTransfers)
		r.Get("/deposits", c.handleDeposits)
		r.Get("/outbox", c.handleOutbox)
		r.Post("/outbox/redrive", c.handleRedrive)
		r.Post("/clock", c.handleClock)
		r.Get("/config", c.handleGetConfig)
		r.Post("/config", c.handleConfig)
		r.Get("/faults", c.handleGetFaults)
		r.Post("/faults", c.handleFaults)
		r.Post("/purge", c.handlePurge)
	})
}

// Reset gives the lab a fresh database: it empties the kit's tables, drops
// the stage's (its key table, whatever its design) and has the stage
// create them again, so that a student who changed the key table's columns
// gets the new ones without deleting the database file. Then it populates
// the bank from p (with random tokens if RandomTokens is set), puts the
// clock back on real time and disarms every fault. The config stays. The
// other replicas, if any, disarm theirs and forget their core calls at
// their next request (Replica.Sync). A core ledger that could not be told
// to disarm its fault does not stop the reset: the note says so.
func (c *Controller) Reset(ctx context.Context, p bank.Params) ([]bank.Customer, string, error) {
	if err := p.Validate(); err != nil {
		return nil, "", problem.New(problem.InvalidRequest, "%v", err)
	}
	c.resetting.Lock()
	defer c.resetting.Unlock()
	// A core ledger that does not answer (restarting under lab serve, or
	// gone) keeps no reset from happening: the reset says so in its note.
	var note string
	if err := c.Faults.DisarmAll(); err != nil {
		note = fmt.Sprintf("the core ledger could not be told to disarm %s, and may still reject postings: %v", PoisonPosting, err)
	}
	tx, err := c.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", fmt.Errorf("reset: %w", err)
	}
	defer tx.Rollback()
	stageTables, err := stageTables(ctx, tx, c.DB.Engine())
	if err != nil {
		return nil, "", err
	}
	for _, t := range stageTables {
		if _, err := tx.ExecContext(ctx, `DROP TABLE "`+t+`"`); err != nil {
			return nil, "", fmt.Errorf("reset: drop %s: %w", t, err)
		}
	}
	for _, t := range bank.Tables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM "`+t+`"`); err != nil {
			return nil, "", fmt.Errorf("reset %s: %w", t, err)
		}
	}
	customers := bank.Population(p)
	if c.RandomTokens {
		bank.DrawTokens(customers)
	}
	if err := bank.Insert(ctx, tx, customers, p.OpeningBalance); err != nil {
		return nil, "", err
	}
	var resets int64
	if c.Replica != nil {
		if resets, err = c.Replica.countReset(ctx, tx); err != nil {
			return nil, "", err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, "", fmt.Errorf("reset: %w", err)
	}
	// Every change to the old key table was committed before this, and
	// every change to the new one is committed after: the stage creates it
	// below. The event says so on the clock a key event's "at" is read
	// on; the event itself goes out at the end, and a reader hears it
	// later still, perhaps after the first claims of the new table.
	committed := time.Now().UTC()
	if c.Replica != nil {
		c.Replica.caughtUp(resets)
	}
	c.Bank.ForgetCoreCalls()
	if c.Restage != nil {
		if err := c.Restage(ctx); err != nil {
			return nil, "", fmt.Errorf("reset: the stage could not create its tables: %w", err)
		}
	}
	if err := c.DB.WatchKeyTable(ctx); err != nil {
		return nil, "", fmt.Errorf("reset: %w", err)
	}
	if err := c.Clock.Reset(ctx); err != nil {
		return nil, "", err
	}
	// On a replica, adopt what the replicas share now that this process
	// changed it: whatever a Sync that read before the change published,
	// the requests after it see the change.
	if err := c.Replica.Sync(ctx); err != nil {
		return nil, "", err
	}
	c.Hub.Publish(events.KindReset, map[string]any{"seed": p.Seed, "customers": customers, "at": committed})
	return customers, note, nil
}

// stageTables lists the tables that are neither the bank's, nor the
// clock's, nor the replicas' (SharedTable): the stage's own.
func stageTables(ctx context.Context, tx *sql.Tx, engine labdb.Engine) ([]string, error) {
	names, err := tables(ctx, tx, engine)
	if err != nil {
		return nil, err
	}
	kit := map[string]bool{clock.Table: true, SharedTable: true}
	for _, t := range bank.Tables {
		kit[t] = true
	}
	var out []string
	for _, n := range names {
		if !kit[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// tables lists the tables of the database q reads, by name.
func tables(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, engine labdb.Engine) ([]string, error) {
	rows, err := q.QueryContext(ctx, tablesQuery(engine)+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func (c *Controller) handleReset(w http.ResponseWriter, r *http.Request) {
	p := bank.DefaultParams()
	if err := decodeOptional(r, &p); err != nil {
		problem.Write(w, err)
		return
	}
	customers, note, err := c.Reset(r.Context(), p)
	if err != nil {
		problem.Write(w, err)
		return
	}
	answer := map[string]any{"customers": customers}
	if note != "" {
		answer["note"] = note
	}
	respond.JSON(w, http.StatusOK, answer)
}

// State is GET /lab/state.
type State struct {
	Now string `json:"now"`
	// Engine is the database engine the server runs on: "sqlite" or
	// "postgres" (labdb.Engine).
	Engine     labdb.Engine     `json:"engine"`
	Accounts   []bank.Balance   `json:"accounts"`
	Executions map[string]int64 `json:"executions"`
	Keys       []map[string]any `json:"keys"`
	Config     ConfigJSON       `json:"config"`
	Faults     []ArmedFault     `json:"faults"`
	// Outbox counts the transfers still to tell the core ledger, those
	// told, and those set aside as dead letters (stage 9 on; all 0 before).
	Outbox bank.OutboxCounts `json:"outbox"`
	// DeadLetters are the postings the core refused for good, with its
	// answers, oldest first (at most MaxStateDeadLetters).
	DeadLetters []bank.DeadLetter `json:"dead_letters"`
	// CoreCalls counts, by op, the requests that called the core since
	// this server process started or the lab was last reset: in memory,
	// where a takeover that two retries both won shows as two calls.
	CoreCalls map[string]int64 `json:"core_calls"`
	// LockWaits is how many sessions on the server's database wait now
	// for a lock another transaction holds (labdb.DB.LockWaits): on
	// PostgreSQL, what pg_stat_activity shows; on SQLite, always 0.
	LockWaits int64 `json:"lock_waits"`
}

// MaxStateDeadLetters is how many dead letters GET /lab/state shows.
const MaxStateDeadLetters = 100

// MaxStateKeys is how many key rows GET /lab/state shows, newest first.
const MaxStateKeys = 1000

// State reads the lab's state.
func (c *Controller) State(ctx context.Context) (State, error) {
	accounts, err := c.Bank.Balances(ctx)
	if err != nil {
		return State{}, err
	}
	execs, err := c.Bank.Executions(ctx)
	if err != nil {
		return State{}, err
	}
	keys, err := KeyRows(ctx, c.DB.DB, "1 = 1 ORDER BY rowid DESC LIMIT ?", MaxStateKeys)
	if err != nil {
		return State{}, err
	}
	outbox, err := c.Outbox(ctx)
	if err != nil {
		return State{}, err
	}
	waits, err := c.DB.LockWaits(ctx)
	if err != nil {
		return State{}, err
	}
	return State{
		Now: clock.Format(c.Clock.Now()), Accounts: accounts, Executions: execs,
		Keys: keys, Config: Wire(c.Settings.Get()), Faults: c.Faults.Armed(), Outbox: outbox.Counts, DeadLetters: outbox.DeadLetters,
		CoreCalls: c.Bank.CoreCalls(), Engine: c.DB.Engine(), LockWaits: waits,
	}, nil
}

// Outbox is GET /lab/outbox: the outbox's part of State alone, which a
// reader waiting for the relay to drain can poll without the rest (a
// day's state lists an execution count for every operation of the day).
type Outbox struct {
	Counts      bank.OutboxCounts `json:"outbox"`
	DeadLetters []bank.DeadLetter `json:"dead_letters"`
	// Commits is how many transactions the server's database has
	// committed since the server started (fault.Store.Commits), and
	// OutboxCommits how many of them changed outbox rows
	// (fault.Store.OutboxCommits): read before and after the relay drains
	// a backlog, it says how many disk syncs the relay spent on the rows,
	// whatever empty transactions its idle passes committed meanwhile.
	Commits       int64 `json:"commits"`
	OutboxCommits int64 `json:"outbox_commits"`
	// CoreUnanswered is how many postings the server has sent the core
	// and given up waiting for while the customer's request that made
	// their transfer was still being served, since it started
	// (core.Client.Unanswered; whoever sent them, the request or the
	// relay it waited for; not a posting given up after the answer):
	// read before and after a transfer while the core holds every
	// posting, it says whether the transfer's answer waited for the core.
	CoreUnanswered int64 `json:"core_unanswered"`
	// CoreGivenUp is how many requests to the core the server has given
	// up waiting for, whoever sent them and whenever, since it started
	// (core.Client.GivenUp): read before and after a transfer while the
	// core holds every posting and the relay waits inside its call, it
	// says whether the transfer was answered only after that call was
	// given up.
	CoreGivenUp int64 `json:"core_given_up"`
	// RelayPasses is how many passes of the stage's outbox relay the
	// server has run since it started, and RelaySettled how many rows
	// they said they settled, the sum of the counts they returned (a
	// pass that failed after settling rows says so too): read before and
	// after a while in which the outbox's sent and dead counts did not
	// move, a RelaySettled that grew says a pass counted rows it did not
	// settle.
	RelayPasses  int64 `json:"relay_passes"`
	RelaySettled int64 `json:"relay_settled"`
}

// Outbox reads the outbox's counts and its dead letters (at most
// MaxStateDeadLetters, oldest first).
func (c *Controller) Outbox(ctx context.Context) (Outbox, error) {
	counts, err := c.Bank.Outbox(ctx)
	if err != nil {
		return Outbox{}, err
	}
	dead := []bank.DeadLetter{}
	if counts.Dead > 0 {
		if dead, err = c.Bank.DeadLetters(ctx, MaxStateDeadLetters); err != nil {
			return Outbox{}, err
		}
	}
	out := Outbox{Counts: counts, DeadLetters: dead, Commits: c.DB.Commits(), OutboxCommits: c.DB.OutboxCommits()}
	if c.CoreUnanswered != nil {
		out.CoreUnanswered = c.CoreUnanswered()
	}
	if c.CoreGivenUp != nil {
		out.CoreGivenUp = c.CoreGivenUp()
	}
	if c.RelayPasses != nil {
		out.RelayPasses, out.RelaySettled = c.RelayPasses()
	}
	return out, nil
}

// KeyRows reads rows of the stage's idempotency_keys table, whatever its
// columns, as column name → value, with the rowid as "rowid". Text and
// UTF-8 blobs are strings; other blobs are shown as hex. A stage without
// the table (stage 0) has no rows.
func KeyRows(ctx context.Context, db *sql.DB, where string, args ...any) ([]map[string]any, error) {
	ctx = fault.LabRead(ctx)
	engine := labdb.EngineOf(db)
	var tables int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM (`+tablesQuery(engine)+`) AS t WHERE name = 'idempotency_keys'`).Scan(&tables); err != nil {
		return nil, fmt.Errorf("look for idempotency_keys: %w", err)
	}
	if tables == 0 {
		return []map[string]any{}, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT * FROM (`+keyRowsQuery(engine)+`) AS k WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read idempotency_keys: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read idempotency_keys: %w", err)
		}
		row := make(map[string]any, len(cols))
		for i, col := range cols {
			if b, ok := vals[i].([]byte); ok {
				if utf8.Valid(b) {
					vals[i] = string(b)
				} else {
					vals[i] = fmt.Sprintf("x'%x'", b)
				}
			}
			row[col] = vals[i]
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func (c *Controller) handleState(w http.ResponseWriter, r *http.Request) {
	st, err := c.State(r.Context())
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, st)
}

// handleGetClock answers the lab's time, and only that: a reader that
// needs the time does not read the whole state, nor move the clock (a
// POST with nothing to do would also run a purge and tell every watcher
// the clock moved).
func (c *Controller) handleGetClock(w http.ResponseWriter, r *http.Request) {
	respond.JSON(w, http.StatusOK, map[string]string{"now": clock.Format(c.Clock.Now())})
}

func (c *Controller) handleClock(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Advance *string `json:"advance"`
		Set     *string `json:"set"`
	}
	if err := decodeOptional(r, &in); err != nil {
		problem.Write(w, err)
		return
	}
	var now time.Time
	var err error
	// moved says whether the request moved the clock: a move by nothing
	// (how a grader fences the event stream) is published as one, so
	// that a timeline can leave it out whatever the time it shares.
	moved := false
	switch {
	case in.Advance != nil && in.Set != nil:
		err = problem.New(problem.InvalidRequest, "send advance or set, not both")
	case in.Advance != nil:
		d, perr := time.ParseDuration(*in.Advance)
		if perr != nil {
			err = problem.New(problem.InvalidRequest, "advance: %v", perr)
			break
		}
		now, err = c.Clock.Advance(r.Context(), d)
		moved = d != 0
	case in.Set != nil:
		t, perr := time.Parse(time.RFC3339Nano, *in.Set)
		if perr != nil {
			err = problem.New(problem.InvalidRequest, "set: want an RFC 3339 time: %v", perr)
			break
		}
		now, err = c.Clock.Set(r.Context(), t)
		moved = true
	default:
		now = c.Clock.Now()
	}
	if errors.Is(err, clock.ErrOutOfRange) {
		err = problem.New(problem.InvalidRequest, "%v; the clock was not moved", err)
	}
	if err == nil {
		err = c.Replica.Sync(r.Context())
	}
	if err == nil && c.KeyRowsPublished != nil {
		err = c.KeyRowsPublished(r.Context())
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	c.Hub.Publish(events.KindClock, events.Clock{Now: clock.Format(now), Moved: moved})
	if c.Purge != nil {
		if _, err := c.runPurge(r.Context()); err != nil {
			problem.Write(w, err)
			return
		}
	}
	respond.JSON(w, http.StatusOK, map[string]string{"now": clock.Format(now)})
}

func (c *Controller) handleGetConfig(w http.ResponseWriter, r *http.Request) {
	respond.JSON(w, http.StatusOK, Wire(c.Settings.Get()))
}

func (c *Controller) handleConfig(w http.ResponseWriter, r *http.Request) {
	body, err := readObject(r)
	if err != nil {
		problem.Write(w, err)
		return
	}
	cfg, err := c.Settings.Update(body)
	if err != nil {
		problem.Write(w, problem.New(problem.InvalidRequest, "%v", err))
		return
	}
	if c.Replica != nil {
		// The request's sync read the config the others stored, which the
		// body changed; store the result for them.
		if err := c.Replica.storeConfig(r.Context(), cfg); err != nil {
			problem.Write(w, err)
			return
		}
		if err := c.Replica.Sync(r.Context()); err != nil {
			problem.Write(w, err)
			return
		}
	}
	respond.JSON(w, http.StatusOK, Wire(cfg))
}

func (c *Controller) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	respond.JSON(w, http.StatusOK, map[string]any{"armed": c.Faults.Armed()})
}

func (c *Controller) handleFaults(w http.ResponseWriter, r *http.Request) {
	in := struct {
		Point string `json:"point"`
		Count *int64 `json:"count"`
	}{}
	if err := decodeOptional(r, &in); err != nil {
		problem.Write(w, err)
		return
	}
	count := int64(1)
	if in.Count != nil {
		count = *in.Count
	}
	if err := c.Faults.Arm(in.Point, count); err != nil {
		// A core ledger that did not answer is the lab's failure, not
		// the request's.
		if pe := (*problem.Error)(nil); errors.As(err, &pe) {
			problem.Write(w, pe)
			return
		}
		problem.Write(w, problem.New(problem.InvalidRequest, "%v", err))
		return
	}
	armed := c.Faults.Armed()
	c.Hub.Publish(events.KindFault, map[string]any{"point": in.Point, "count": count, "armed": armed})
	respond.JSON(w, http.StatusOK, map[string]any{"armed": armed})
}

// NoPurge is the note of POST /lab/purge on a server whose stage has no
// Purge method: before stage 5 by design, from stage 5 on a method whose
// signature is not stage.Purger's, which the lab never calls.
const NoPurge = "nothing was purged: the stage's handlers have no method Purge(ctx context.Context) (int64, error), so its keys are kept for ever (stages 0 to 4 have none; from stage 5 on, look at the method's signature)"

func (c *Controller) handlePurge(w http.ResponseWriter, r *http.Request) {
	if err := decodeOptional(r, &struct{}{}); err != nil {
		problem.Write(w, err)
		return
	}
	if c.Purge == nil {
		respond.JSON(w, http.StatusOK, map[string]any{"purged": 0, "note": NoPurge})
		return
	}
	n, err := c.runPurge(r.Context())
	if err != nil {
		problem.Write(w, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"purged": n})
}

// PurgeLimit is how long the stage's Purge may run when the lab calls it
// (after each move of the lab clock, and on POST /lab/purge): a purge that
// does not end would hold the lab's request until its client gave up,
// and the checks would read that as a lab that cannot be driven.
const PurgeLimit = 10 * time.Second

// PurgeFailed begins the detail of the lab's answer when the stage's
// Purge failed or did not return within PurgeLimit: the fault is the
// stage's, and the grader says so.
const PurgeFailed = "the stage's Purge failed"

// runPurge runs the stage's Purge for at most PurgeLimit. Its error is a
// problem whose detail begins with PurgeFailed and says why, of the
// purge's own problem type where it returned one (503 for a key store
// that failed), 500 otherwise.
func (c *Controller) runPurge(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(fault.LabRead(ctx), PurgeLimit)
	defer cancel()
	n, err := c.Purge(ctx)
	if err == nil {
		return n, nil
	}
	why := err.Error()
	if ctx.Err() != nil {
		why = fmt.Sprintf("it did not return within %v (%v)", PurgeLimit, err)
	}
	return 0, &problem.Error{Type: problem.From(err).Type, Detail: PurgeFailed + ": " + why, Err: err}
}

func readSmall(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4097))
	if err != nil {
		return nil, problem.New(problem.InvalidRequest, "read body: %v", err)
	}
	if len(body) > 4096 {
		return nil, problem.New(problem.RequestTooLarge, "lab request bodies are at most 4 KiB")
	}
	return body, nil
}

// readObject reads an optional body: nothing, or one JSON object as
// request.Object checks it (nothing after it, valid UTF-8, no member
// twice), which it returns; "{}" for nothing. A body that is not is
// refused with 400 invalid-request before anything is changed: the last of
// two members, or a second object after the first, would otherwise be
// taken or ignored without a word.
func readObject(r *http.Request) ([]byte, error) {
	body, err := readSmall(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return []byte("{}"), nil
	}
	if err := request.Object(body); err != nil {
		return nil, err
	}
	return body, nil
}

// decodeOptional reads an optional JSON body (readObject) into v, refusing
// unknown members.
func decodeOptional(r *http.Request, v any) error {
	body, err := readObject(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem.New(problem.InvalidRequest, "%v", err)
	}
	return nil
}

// tablesQuery lists the names of the tables in the database, as "name".
func tablesQuery(engine labdb.Engine) string {
	if engine == labdb.PostgreSQL {
		return `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`
	}
	return `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
}

// keyRowsQuery reads every idempotency_keys row with its row id first, as
// "rowid": SQLite's own rowid; on PostgreSQL, which has none, the row's id
// column (the one its key-row events name, see package pgdb).
func keyRowsQuery(engine labdb.Engine) string {
	if engine == labdb.PostgreSQL {
		return `SELECT (to_jsonb(k) ->> 'id')::bigint AS rowid, k.* FROM idempotency_keys AS k`
	}
	return `SELECT rowid AS rowid, * FROM idempotency_keys`
}

// CheckOwned refuses a database that holds tables the lab did not make.
// A reset drops every table that is neither the bank's nor the clock's (a
// stage's own), so a database the lab has not made its own (no lab_clock
// table) must be empty: a --db that names another application's database
// would otherwise lose that application's tables at the first reset.
func CheckOwned(ctx context.Context, db *labdb.DB) error {
	names, err := tables(ctx, db, db.Engine())
	if err != nil || len(names) == 0 || slices.Contains(names, clock.Table) {
		return err
	}
	return fmt.Errorf("refusing to start: %s holds tables the lab did not make (%s), and a lab reset drops every table that is not the bank's; give the lab a database of its own (a new file, or createdb idemlab)",
		labdb.Redacted(db.Target()), strings.Join(names, ", "))
}
