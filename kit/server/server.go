// Package server assembles one lab server: the kit's database, bank, clock
// and event hub, a stage's handlers, the kit's read endpoints and, in lab
// mode, the /lab control endpoints. It keeps no global state: two servers
// (the naive one and a safe one, say) can run side by side in one process.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"idemlab/kit/accesslog"
	"idemlab/kit/auth"
	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
	"idemlab/kit/events"
	"idemlab/kit/fault"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
	"idemlab/kit/problem"
	"idemlab/kit/sqlitedb"
	"idemlab/kit/stage"
)

// Options configure a server.
type Options struct {
	// DB is the database: a SQLite file, ":memory:", or a postgres:// URL.
	DB string
	// OwnDB gives the server a database no one else uses, dropped when it
	// closes: on PostgreSQL, a new database on the cluster DB names (see
	// labdb.OpenOwn); ":memory:" is one already.
	OwnDB bool
	// Stage builds the handlers of POST /transfers and POST /deposits.
	Stage stage.Factory
	// Lab turns on lab mode: the /lab endpoints, behind AdminToken.
	Lab bool
	// AdminToken guards /lab; empty means draw one (see Server.AdminToken).
	AdminToken string
	// Config is the starting config; the zero value means stage.DefaultConfig.
	Config *stage.Config
	// AccessLog, when set, receives one JSON line per request (accesslog.Record).
	AccessLog io.Writer
	// Log, when set, receives one line for every 5xx answer, with the cause
	// the client is not shown.
	Log *slog.Logger
	// Crash is called by the crash faults. If it returns, the request is
	// aborted as if the process had died under it. The default ends the
	// process at once (exit status 137, as after kill -9).
	Crash func(point string)
	// BodyTimeout is how long a client has, after its headers, to send its
	// body; zero means DefaultBodyTimeout. A client that has not finished
	// by then is answered 400 and loses its connection.
	BodyTimeout time.Duration
	// RandomTokens has a reset draw the customers' tokens from crypto/rand
	// instead of the seed (see labctl.Controller.RandomTokens): for a server
	// other people reach, since anyone can draw a seed's tokens.
	RandomTokens bool
	// CoreURL is the core ledger's base URL (core.Core's handler), which a
	// stage from 9 on posts every executed transfer to. Empty means a core
	// of the server's own, if the stage relays an outbox: on a loopback
	// port, its postings in memory for as long as the server runs.
	CoreURL string
	// RelayInterval is how long the stage's outbox relay waits after a
	// pass that settled nothing; zero means RelayInterval. A server's
	// own, so that a test that changes it changes no other server.
	RelayInterval time.Duration
	// OpenAhead has a server on a database whose pool is bounded
	// (PostgreSQL's) open, before it serves, a connection for each of its
	// request slots and one for the relay, rather than one at a time as
	// they are asked: for a server many clients reach at once, a start
	// or a restart under load (lab serve's servers, the delivery check's:
	// targets.EnvOpenAhead).
	// A connection it cannot open is logged, and opened later as asked.
	OpenAhead bool
	// Replica is what the server is among the server processes that
	// share its database (lab serve --replicas): Alone, the zero value,
	// keeps its clock's offset and its config in memory and reads neither
	// before a request; Lead and Join read them, with the count of the
	// lab's resets, before each request and each pass of the relay or the
	// purge, so that a change answered by any replica holds on all of
	// them at once (labctl.Replica).
	Replica labctl.Role
}

// RelayInterval is how often the kit runs a pass of a stage's outbox relay
// (stage.Relayer), unless Options.RelayInterval says otherwise.
const RelayInterval = 20 * time.Millisecond

// Server is one lab server.
type Server struct {
	db       *labdb.DB
	bank     *bank.Bank
	clock    *clock.Clock
	hub      *events.Hub
	ctl      *labctl.Controller
	faults   *labctl.Faults
	settings *labctl.Settings
	handlers stage.Handlers
	// core is the stage's client of the core ledger, through which the
	// server watches what its customers' requests wait for.
	core   *core.Client
	router chi.Router
	admin  string
	crash  func(point string)
	log    *slog.Logger

	accessLog   *accesslog.Writer
	bodyTimeout time.Duration
	// slots bound the customer requests served at once (requestSlots).
	slots slots

	keyRows chan keyRowsChanged
	// heard is the last commit heard to change each key row whose report
	// the publisher has not yet read (publishKeyRows).
	heard heardCommits
	// listening carries what the database says of its key-row reports:
	// stopped (an error) or resumed (nil).
	listening chan error
	// relayPasses counts the relay passes the stage ran since the server
	// started, and relaySettled the rows they said they settled (the
	// count each returned, with an error or not).
	relayPasses, relaySettled atomic.Int64
	stop                      chan struct{}
	wg                        sync.WaitGroup
}

// ExitCrash is the default crash: the process ends at once.
func ExitCrash(point string) {
	fmt.Fprintf(os.Stderr, "lab: fault %s fired: the process ends now, as in a crash\n", point)
	os.Exit(137)
}

// New opens the database, migrates the kit's tables, builds the stage and
// wires the routes. It returns an error if the config is refused (a
// retention not longer than the retry horizon) or the stage fails to start.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Stage == nil {
		return nil, errors.New("server: no stage")
	}
	cfg := stage.DefaultConfig()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	settings, err := labctl.NewSettings(cfg)
	if err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	open := labdb.Open
	if opts.OwnDB {
		open = labdb.OpenOwn
	}
	db, err := open(ctx, opts.DB)
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, settings: settings, hub: events.NewHub(), log: opts.Log,
		crash: opts.Crash, admin: opts.AdminToken, stop: make(chan struct{}), keyRows: make(chan keyRowsChanged, 1024),
		listening: make(chan error, 16)}
	if s.crash == nil {
		s.crash = ExitCrash
	}
	s.bodyTimeout = opts.BodyTimeout
	if s.bodyTimeout == 0 {
		s.bodyTimeout = DefaultBodyTimeout
	}
	if opts.AccessLog != nil {
		s.accessLog = accesslog.NewWriter(opts.AccessLog)
	}
	s.slots = requestSlots(db.DB)
	if err := s.start(ctx, opts); err != nil {
		// End what start had started (the server's own core ledger).
		close(s.stop)
		s.wg.Wait()
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, opts Options) error {
	var err error
	if err = labctl.CheckOwned(ctx, s.db); err != nil {
		return err
	}
	// The clock's table first: it marks the database as the lab's.
	if s.clock, err = clock.Open(ctx, s.db.DB); err != nil {
		return err
	}
	if err = bank.Migrate(ctx, s.db.DB); err != nil {
		return err
	}
	s.faults = labctl.NewFaults(s.db.Store, s.crash)
	s.bank = bank.New(s.db.DB, s.clock, s.faults.Bank, func() time.Duration { return s.settings.Get().CoreLatency })
	env := stage.Env{DB: s.db.DB, Bank: s.bank, Clock: s.clock, Config: s.settings.Get}
	// The stage keeps the core's client from here on, so its address is
	// fixed before the stage starts; the core itself only if it relays.
	coreURL, coreToken := opts.CoreURL, ""
	var ownCore net.Listener
	if coreURL == "" {
		if ownCore, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("listen for the core ledger: %w", err)
		}
		coreToken = core.NewToken()
		coreURL = core.TokenURL("http://"+ownCore.Addr().String(), coreToken)
	}
	env.Core = core.NewClient(coreURL, &http.Client{Timeout: 5 * time.Second})
	env.Core.Answered = s.faults.AfterPost
	env.Core.Hurried = s.faults.HurryCore
	s.core = env.Core
	if s.handlers, err = opts.Stage(ctx, env); err != nil {
		if ownCore != nil {
			ownCore.Close()
		}
		return fmt.Errorf("start stage: %w", err)
	}
	relayer, relays := s.handlers.(stage.Relayer)
	if ownCore != nil {
		if !relays {
			ownCore.Close()
		} else if err := s.serveCore(ctx, ownCore, coreToken); err != nil {
			return err
		}
	}
	if relays || opts.CoreURL != "" {
		// The core is there to arm: the server's own, or the one it was
		// given (lab serve's process, the grader's).
		s.faults.Core = s.core
	}
	if err := s.db.WatchKeyTable(ctx); err != nil {
		return err
	}
	// After a reset has dropped the stage's tables, building the stage
	// again creates them; its handlers keep serving (they hold only env).
	restage := func(ctx context.Context) error {
		_, err := opts.Stage(ctx, env)
		return err
	}
	s.ctl = &labctl.Controller{DB: s.db, Bank: s.bank, Clock: s.clock, Hub: s.hub, Settings: s.settings,
		Faults: s.faults, Restage: restage, RandomTokens: opts.RandomTokens, CoreUnanswered: s.core.Unanswered,
		CoreGivenUp: s.core.GivenUp, KeyRowsPublished: s.keyRowsPublished, RelayPasses: s.relayCounts}
	if opts.Replica != labctl.Alone {
		if s.ctl.Replica, err = labctl.OpenReplica(ctx, s.db.DB, opts.Replica, s.clock, s.settings, s.bank, s.faults); err != nil {
			return err
		}
	}
	if p, ok := s.handlers.(stage.Purger); ok {
		s.ctl.Purge = p.Purge
		s.every(30*time.Second, func() {
			s.ctl.Shared(func() {
				ctx := fault.LabRead(context.Background())
				if err := s.ctl.Replica.Sync(ctx); err != nil {
					s.hub.Publish(events.KindPurge, map[string]string{"error": err.Error()})
					return
				}
				if _, err := p.Purge(ctx); err != nil {
					s.hub.Publish(events.KindPurge, map[string]string{"error": err.Error()})
				}
			})
		})
	}
	if opts.Lab && s.admin == "" {
		s.admin = NewAdminToken()
	}
	s.db.OnKeyRowsChanged(func(rows []int64) {
		// With nobody subscribed, a report would only wake the publisher
		// to find nobody to tell: two or three a request on a replayed
		// day, each a goroutine readied. One subscribed later is told of
		// the commits after it subscribed, as it would be anyway of the
		// rows it reads then.
		if !s.hub.Listening() {
			return
		}
		at := time.Now()
		s.heard.note(rows, at)
		select {
		case s.keyRows <- keyRowsChanged{rowids: rows, at: at}:
		case <-s.stop:
		}
	})
	s.db.OnKeyRowsListening(func(err error) {
		select {
		case s.listening <- err:
		case <-s.stop:
		}
	})
	s.wg.Add(1)
	go s.publishKeyRows()
	if s.slots != nil && opts.OpenAhead {
		// Open now what the requests and the relay will hold at once, so
		// that none of them waits under load for PostgreSQL to start a
		// backend: 64 clients that come at once, or retry at once after
		// a restart, opened 40 in the same second, and the relay's pass
		// that came then waited its turn for one.
		if err := warm(ctx, s.db.DB, cap(s.slots)+1); err != nil && s.log != nil {
			s.log.Warn("open the database's connections ahead", "error", err)
		}
	}
	if relays {
		s.wg.Add(1)
		interval := opts.RelayInterval
		if interval == 0 {
			interval = RelayInterval
		}
		go s.relay(relayer, interval)
	}
	s.router = s.routes(opts.Lab)
	return nil
}

// serveCore runs a core ledger of the server's own on ln, in memory,
// until the server closes. It reads the server's books, so it posts only
// the transfers the server executed.
func (s *Server) serveCore(ctx context.Context, ln net.Listener, token string) error {
	_, stop, err := ServeCore(ctx, ln, ":memory:", core.Config{Token: token, Books: bank.NewBooks(s.db.DB)})
	if err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-s.stop
		stop()
	}()
	return nil
}

// relay runs the stage's outbox relay a pass at a time until the server
// stops: the first at once (a server started again after a crash owes
// what the one before it left, and its first pass takes the connection
// that opening the database left idle, before the clients' retries queue
// for the others), again at once after a pass that settled rows, even one
// that then failed (there may be more behind them: under load the outbox
// fills faster than one pass a tick empties it, and a core that flaps
// takes some postings of each pass), and otherwise interval
// (RelayInterval) after the last. A pass never waits for a reset: it
// skips its turn.
func (s *Server) relay(r stage.Relayer, interval time.Duration) {
	defer s.wg.Done()
	// A pass waiting on the core ends with the server. Its statements
	// are the relay's, which the fail-outbox-settle fault refuses.
	ctx, cancel := context.WithCancel(fault.Relaying(context.Background()))
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	var last string
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		settled := 0
		s.ctl.UnlessResetting(func() {
			msg := ""
			n, err := 0, s.ctl.Replica.Sync(ctx)
			if err == nil {
				n, err = relayPass(ctx, r)
				s.relaySettled.Add(int64(n))
				s.relayPasses.Add(1)
			}
			if err != nil {
				msg = err.Error()
			}
			settled = n
			// A pass that fails fails again the next time, 50 times a
			// second, while the core is down: say so once.
			if msg != "" && msg != last && s.log != nil {
				s.log.Warn("outbox relay", "error", msg)
			}
			last = msg
		})
		if settled > 0 {
			t.Reset(0)
		} else {
			t.Reset(interval)
		}
	}
}

// relayCounts is how many relay passes the stage ran since the server
// started, and how many rows they said they settled, the sum of the
// counts they returned.
func (s *Server) relayCounts() (passes, settled int64) {
	return s.relayPasses.Load(), s.relaySettled.Load()
}

// relayPass runs one pass of r. A crash point fired in the pass
// (crash-after-post) ends it, as the process's death would, when the
// server only simulates its crashes.
func relayPass(ctx context.Context, r stage.Relayer) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			err = errors.New("crashed")
		}
	}()
	return r.Relay(ctx)
}

// every runs fn every d until the server closes.
func (s *Server) every(d time.Duration, fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fn()
			case <-s.stop:
				return
			}
		}
	}()
}

// keyRowsChanged is one commit's report of the key rows it changed, and
// when it was heard: right after the commit, before anyone reads a row.
type keyRowsChanged struct {
	rowids []int64
	at     time.Time
	// published, when set, is closed by the publisher once every change
	// queued before this one has been published (keyRowsPublished).
	published chan struct{}
}

// heardCommits keeps, for each key row, when the last commit that changed
// it was heard, until that commit's own report is read. A report waits in
// line, and by the time its row is read a later commit may have changed
// it again (a claim's report read once the key is completed): the row
// read is the later commit's, and is placed there, not at the claim's.
type heardCommits struct {
	mu   sync.Mutex
	last map[int64]time.Time
}

// note records that a commit heard at changed rowids.
func (h *heardCommits) note(rowids []int64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[int64]time.Time{}
	}
	for _, id := range rowids {
		h.last[id] = at
	}
}

// of returns when the last commit that changed row id was heard, for a
// row read after report's commit: report's own time unless a later commit
// was heard since. It forgets the row once its last commit's report is
// the one read, so that only rows with a report still in line are kept.
func (h *heardCommits) of(id int64, report time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.last[id]
	if !ok || !at.After(report) {
		delete(h.last, id)
		return report
	}
	return at
}

// publishKeyRows turns committed changes to key rows into "key" events.
// It runs on its own goroutine so that no request waits for it. It reads a
// row only while someone is subscribed: with nobody to tell (a replay, a
// benchmark), the read would be two statements per request for nothing.
func (s *Server) publishKeyRows() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case err := <-s.listening:
			s.keyRowsListening(err)
		case changed := <-s.keyRows:
			if changed.published != nil {
				close(changed.published)
				continue
			}
			if !s.hub.Listening() {
				for _, id := range changed.rowids {
					s.heard.of(id, changed.at)
				}
				continue
			}
			for _, id := range changed.rowids {
				var rows []map[string]any
				var err error
				read := s.ctl.UnlessResetting(func() {
					rows, err = labctl.KeyRows(context.Background(), s.db.DB, "rowid = ?", id)
				})
				// After the read: a commit heard before it is in the row.
				at := s.heard.of(id, changed.at)
				if !read {
					continue
				}
				switch {
				case err != nil:
					s.hub.Publish(events.KindKey, map[string]any{"rowid": id, "error": err.Error()})
				case len(rows) == 0:
					s.hub.Publish(events.KindKey, events.Key{RowID: id, Deleted: true, At: at})
				default:
					s.hub.Publish(events.KindKey, events.Key{RowID: id, Row: rows[0], At: at})
				}
			}
		}
	}
}

// keyRowsPublished waits until the key row changes queued before it have
// been published (labctl.Controller.KeyRowsPublished): the publisher
// reads each changed row on its own goroutine, so a key event can
// otherwise come out after an event published later, a fence's clock
// event among them.
func (s *Server) keyRowsPublished(ctx context.Context) error {
	published := make(chan struct{})
	select {
	case s.keyRows <- keyRowsChanged{published: published}:
	case <-s.stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-published:
	case <-s.stop:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (s *Server) routes(lab bool) chi.Router {
	r := chi.NewRouter()
	r.Use(readBody(s.bodyTimeout), s.markEngine)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, problem.New(problem.NotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, problem.New(problem.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
	})
	r.Get("/problems/{name}", problem.Handler)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	r.Group(func(r chi.Router) {
		r.Use(s.observe, s.synced, auth.Customers(s.bank.CustomerByToken), noteCustomer, s.servingCustomer, sessionCookie, textPathOnly)
		r.Post("/transfers", s.handlers.Transfer)
		r.Post("/deposits", s.handlers.Deposit)
		r.Get("/accounts/{id}", s.getAccount)
		r.Get("/accounts/{id}/entries", s.getEntries)
		r.Get("/transfers/{id}", s.getTransfer)
		r.Get("/deposits/{id}", s.getDeposit)
		if st, ok := s.handlers.(stage.Settings); ok {
			r.Get("/accounts/{id}/settings", st.GetSettings)
			r.Put("/accounts/{id}/settings", st.PutSettings)
		}
	})
	if lab {
		r.Route("/lab", func(r chi.Router) {
			r.Use(auth.Admin(s.admin), s.synced)
			s.ctl.Routes(r)
		})
	}
	return r
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// AdminToken is the token that opens /lab.
func (s *Server) AdminToken() string { return s.admin }

// NewAdminToken draws an admin token no one can guess: the one a lab
// server makes for itself when its options name none.
func NewAdminToken() string {
	var b [16]byte
	rand.Read(b[:])
	return "adm_" + hex.EncodeToString(b[:])
}

// Events is the server's event hub.
func (s *Server) Events() *events.Hub { return s.hub }

// Lab is the server's lab controller: reset, state, clock, config, faults.
func (s *Server) Lab() *labctl.Controller { return s.ctl }

// Commits reports how many transactions have committed on the server's
// database (see fault.Store.Commits).
func (s *Server) Commits() int64 { return s.db.Commits() }

// GateUse reports what the write gate of the server's database has seen
// (sqlitedb.GateUse); nothing on PostgreSQL.
func (s *Server) GateUse() sqlitedb.GateUse { return s.db.GateUse() }

// Close stops the server's background work and closes its database.
func (s *Server) Close() error {
	close(s.stop)
	s.db.OnKeyRowsChanged(nil)
	s.db.OnKeyRowsListening(nil)
	s.wg.Wait()
	return s.db.Close()
}

// synced is middleware that, on a replica, has each request see the lab
// clock, config and resets that the replicas share, as they are when it
// comes; on a server alone it adds nothing.
func (s *Server) synced(next http.Handler) http.Handler {
	if s.ctl.Replica == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.ctl.Replica.Sync(r.Context()); err != nil {
			problem.Write(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// markEngine marks each request's context with the engine the server's
// database runs on, for labdb.Savepoint.
func (s *Server) markEngine(next http.Handler) http.Handler {
	engine := s.db.Engine()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(labdb.WithEngine(r.Context(), engine)))
	})
}

// textPathOnly answers 404 for a path that holds U+0000 (%00), or that is
// not UTF-8 (%FF), which names nothing: PostgreSQL refuses to compare a
// text holding either, so a read of /transfers/tr_%00 or /transfers/tr_%FF,
// or a stage's own handler given such an id, would fail with 500 on that
// engine, and 404 on SQLite.
func textPathOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.ContainsRune(r.URL.Path, 0) {
			problem.Write(w, problem.New(problem.NotFound, "no resource at a path holding U+0000 (NUL)"))
			return
		}
		if !utf8.ValidString(r.URL.Path) {
			problem.Write(w, problem.New(problem.NotFound, "no resource at a path that is not UTF-8"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
