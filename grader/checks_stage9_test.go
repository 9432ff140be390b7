package grader_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/kit/clock"
	"idemlab/kit/core"
	"idemlab/kit/fault"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/stage"
	"idemlab/solutions/stage8"
	"idemlab/solutions/stage9"
)

// TestStage9_AServerStartedElsewhereIsNotFailed: lab grade --url points
// at a server that posts to a core ledger of its own, which the check
// cannot read. Stage 9's checks must say they could not observe it, not
// fail a correct server for postings they never saw.
func TestStage9_AServerStartedElsewhereIsNotFailed(t *testing.T) {
	srv, err := server.New(t.Context(), server.Options{DB: ":memory:", Stage: stage9.New, Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := server.NewHTTPServer(srv.Handler())
	go hs.Serve(ln)
	defer hs.Close()
	subject := grader.Subject{Stage: 9, Name: "solutions/stage9", New: stage9.New}
	for _, id := range []string{"S9.posted-once", "S9.core-down"} {
		c, ok := grader.Lookup(id)
		if !ok {
			t.Fatalf("no check %s", id)
		}
		r := grader.RunCheck(context.Background(), subject, c, 1, targets.Running("http://"+ln.Addr().String(), srv.AdminToken()))
		var u *judging.Unobserved
		if r.Caught() || !errors.As(r.Err, &u) {
			t.Errorf("%s against a server started elsewhere: %v, want could not observe", id, r.Err)
		}
	}
}

// idleCommits is solution 9 with a relay that, before each pass, commits
// transactions that change nothing: one that only reads, and one whose
// UPDATE of the outbox matches no row, many of each, as a relay would that
// commits on every pass whether or not it has rows to settle.
type idleCommits struct {
	*stage9.Server
	db *sql.DB
}

// idleCommitsPerPass is how many empty transactions of each kind the relay
// commits before each pass: more, in one pass, than the check allows for
// all its postings.
const idleCommitsPerPass = 40

func (s idleCommits) Relay(ctx context.Context) (int, error) {
	for range idleCommitsPerPass {
		for _, q := range []string{`SELECT count(*) FROM outbox`, `UPDATE outbox SET sent_at = sent_at WHERE id < 0`} {
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				return 0, err
			}
			if _, err := tx.ExecContext(ctx, q); err != nil {
				tx.Rollback()
				return 0, err
			}
			if err := tx.Commit(); err != nil {
				return 0, err
			}
		}
	}
	return s.Server.Relay(ctx)
}

// TestCommitsPerPosting_EmptyCommitsDoNotCount: a relay that commits
// empty transactions on every pass, however many, settles its rows in one
// commit a batch, and S9.commits-per-posting passes it; the relay that
// marks each row in a commit of its own is the mutant mark-row-by-row,
// which the ladder holds the check to catch. It catches a check that
// counts every commit, which a relay's idle passes on a slow machine
// would fail.
func TestCommitsPerPosting_EmptyCommitsDoNotCount(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return idleCommits{Server: h.(*stage9.Server), db: env.DB}, nil
	}
	if err := errorOf(t, "S9.commits-per-posting", grader.Subject{Stage: 9, Name: "idle commits", New: factory}); err != nil {
		t.Errorf("a relay that commits empty transactions on every pass: %v", err)
	}
}

// asideOnceSent is solution 9 with a relay that, after each pass, sets
// aside as a dead letter every row the core acknowledged, unmarking it
// sent: the false dead letters of a relay that sets a whole batch aside
// for the poison in it (poison-sets-the-batch-aside), made on every
// batch.
type asideOnceSent struct {
	*stage9.Server
	db *sql.DB
}

func (s asideOnceSent) Relay(ctx context.Context) (int, error) {
	n, err := s.Server.Relay(ctx)
	if err != nil {
		return n, err
	}
	_, err = s.db.ExecContext(ctx, `UPDATE outbox SET dead_at = sent_at, dead_status = 422, dead_answer = '{"detail":"set aside"}', sent_at = NULL WHERE sent_at IS NOT NULL`)
	return n, err
}

// TestDelivered_ADeadLetterTheCoreHoldsIsNotNotPosted: a dead letter for
// a posting the core holds once is a false dead letter, not a posting
// the core never heard of: the books agree, so the finding names no harm
// to money, and it says the core holds the posting. It catches a finding
// that calls it not posted, as delivered once did.
func TestDelivered_ADeadLetterTheCoreHoldsIsNotNotPosted(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return asideOnceSent{Server: h.(*stage9.Server), db: env.DB}, nil
	}
	f := failureOf(t, "S9.posted-once", grader.Subject{Stage: 9, Name: "a relay that sets aside what the core took", New: factory})
	if f.Harm != "" || !strings.Contains(f.Got, "though the core holds each one's posting") {
		t.Errorf("harm %q, got %s; want no harm to money and the core's posting named", f.Harm, f.Got)
	}
}

// TestRedrive_ARefusedRowTheCoreHoldsIsNotNotPosted: S9.redrive's core
// takes one posting and loses its answer, then refuses it for good when
// sent again; a relay that keeps every refused row owed, with no dead
// letter, leaves that row and the one over the core's limit owed. The
// finding names both, but only the second never reached the core: the
// first is posted, and the timeline marked it "executed, never posted to
// the core ledger" while the failure said the core held its posting.
func TestRedrive_ARefusedRowTheCoreHoldsIsNotNotPosted(t *testing.T) {
	f := failureOf(t, "S9.redrive", grader.Subject{Stage: 9, Name: "a relay that keeps refused rows owed", New: keptOwed})
	taken := regexp.MustCompile(`takes the posting of (tr_\w+) and its answer is lost`).FindStringSubmatch(f.Sent)
	if taken == nil || !strings.Contains(f.Got, taken[1]) {
		t.Fatalf("the story has the core take a posting, and the finding names it:\nsent %s\ngot %s", f.Sent, f.Got)
	}
	if f.Harm != judging.NotPosted || len(f.Refs) != 1 || f.Refs[0] == taken[1] {
		t.Errorf("harm %q, refs %v; want not posted, about the row over the core's limit alone, not %s, which the core holds\ngot %s", f.Harm, f.Refs, taken[1], f.Got)
	}
}

// keptOwed is solution 9 with a relay whose dead letters never stay: a
// trigger makes each row set aside owed again, its answer gone, in the
// statement that set it aside, so no reader ever sees it set aside.
func keptOwed(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	h, err := stage9.New(ctx, env)
	if err != nil {
		return nil, err
	}
	trigger := []string{`CREATE TRIGGER IF NOT EXISTS kept_owed AFTER UPDATE OF dead_at ON outbox WHEN NEW.dead_at IS NOT NULL
		BEGIN UPDATE outbox SET dead_at = NULL, dead_status = NULL, dead_answer = NULL WHERE id = NEW.id; END`}
	if labdb.EngineOf(env.DB) == labdb.PostgreSQL {
		trigger = []string{`CREATE OR REPLACE FUNCTION kept_owed() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN NEW.dead_at := NULL; NEW.dead_status := NULL; NEW.dead_answer := NULL; RETURN NEW; END $$`,
			`CREATE OR REPLACE TRIGGER kept_owed BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION kept_owed()`}
	}
	for _, q := range trigger {
		if _, err := env.DB.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// unansweredSettled is solution 9 with a relay that settles a row whose
// send got no answer rather than keep it owed: it marks it sent, or, with
// aside, sets it aside as a dead letter, as if no answer were an
// acknowledgement, or a refusal for good.
type unansweredSettled struct {
	*stage9.Server
	env   stage.Env
	aside bool
}

func (s unansweredSettled) Relay(ctx context.Context) (int, error) {
	n, err := s.Server.Relay(ctx)
	if err == nil {
		return n, nil
	}
	settle := `UPDATE outbox SET sent_at = ? WHERE sent_at IS NULL AND dead_at IS NULL`
	if s.aside {
		settle = `UPDATE outbox SET dead_at = ?, dead_status = 502, dead_answer = '{"detail":"no answer"}' WHERE sent_at IS NULL AND dead_at IS NULL`
	}
	_, err = s.env.DB.ExecContext(ctx, settle, clock.Format(s.env.Clock.Now()))
	return n, err
}

// TestRedrive_ARowNotSentAgainAfterItsAnswerWasLost: S9.redrive has the
// core take a posting and lose its answer before it refuses the send
// again. A relay that never sends it again, having marked its row sent or
// set it aside on no answer, must be told so: the core holds the posting
// once, so no money is harmed, and the finding says the relay sent it no
// more. It catches a check that goes on as if the row had been refused,
// and fails the relay for a posting "not posted" that the core "never
// received".
func TestRedrive_ARowNotSentAgainAfterItsAnswerWasLost(t *testing.T) {
	c, ok := grader.Lookup("S9.redrive")
	if !ok {
		t.Fatal("no check S9.redrive")
	}
	for _, aside := range []bool{false, true} {
		factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
			h, err := stage9.New(ctx, env)
			if err != nil {
				return nil, err
			}
			return unansweredSettled{Server: h.(*stage9.Server), env: env, aside: aside}, nil
		}
		r := grader.RunCheck(context.Background(), grader.Subject{Stage: 9, Name: "unanswered settled", New: factory}, c, 1, targets.InProcess)
		var f *judging.Failure
		if !errors.As(r.Err, &f) {
			t.Fatalf("aside %v: a relay that settles a row on no answer: %v, want a failure", aside, r.Err)
		}
		if f.Harm != "" || !strings.Contains(f.Got, "no more") || strings.Contains(f.Got, "never received") {
			t.Errorf("aside %v: harm %q, got %s; want no harm to money, and the row the relay sent no more named", aside, f.Harm, f.Got)
		}
	}
}

// firstRowAlone is solution 9 on a busy machine: the relay's pass that
// reads the first transfer's row alone reaches the core only once the
// second transfer's row is written, and firstRowStall after (the check
// has brought the core back by then, holding every request). The second
// transfer waits for that pass to read the first row alone. With
// deadAtPassBegan, each row a pass sets aside reads as set aside when the
// pass began (the mutant dead-at-when-the-pass-began).
type firstRowAlone struct {
	*stage9.Server
	env             stage.Env
	deadAtPassBegan bool
	*stall
}

// stall is the state firstRowAlone keeps across the stages the kit
// builds again (after a reset).
type stall struct {
	// readAlone is closed once a pass has read the first row alone.
	readAlone chan struct{}
	stalled   atomic.Bool
}

// firstRowStall is how long the stalled pass waits once the second row
// is written: far longer than the check takes to bring the core back
// holding every request, a few calls to the lab.
const firstRowStall = 300 * time.Millisecond

func newFirstRowAlone(deadAtPassBegan bool) stage.Factory {
	st := &stall{readAlone: make(chan struct{})}
	return func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		s := &firstRowAlone{Server: h.(*stage9.Server), env: env, deadAtPassBegan: deadAtPassBegan, stall: st}
		env.Core.Hurried = s.hold
		return s, nil
	}
}

// rows counts the outbox's rows.
func (s *firstRowAlone) rows() int {
	var n int
	if err := s.env.DB.QueryRow(`SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// hold, called as each request to the core starts, holds the first one
// sent while the outbox has one row until it has two, and firstRowStall
// more.
func (s *firstRowAlone) hold() bool {
	if s.rows() != 1 || !s.stalled.CompareAndSwap(false, true) {
		return false
	}
	close(s.readAlone)
	for s.rows() == 1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(firstRowStall)
	return false
}

func (s *firstRowAlone) Transfer(w http.ResponseWriter, r *http.Request) {
	if s.rows() == 1 {
		select {
		case <-s.readAlone:
		case <-time.After(2 * time.Second):
		}
	}
	s.Server.Transfer(w, r)
}

func (s *firstRowAlone) Relay(ctx context.Context) (int, error) {
	began := clock.Format(s.env.Clock.Now())
	dead := func() (map[int64]bool, error) {
		rows, err := s.env.DB.QueryContext(ctx, `SELECT id FROM outbox WHERE dead_at IS NOT NULL`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		ids := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids[id] = true
		}
		return ids, rows.Err()
	}
	before, err := dead()
	if err != nil {
		return 0, err
	}
	n, err := s.Server.Relay(ctx)
	if !s.deadAtPassBegan || err != nil {
		return n, err
	}
	after, err := dead()
	if err != nil {
		return n, err
	}
	for id := range after {
		if !before[id] {
			if _, err := s.env.DB.ExecContext(ctx, `UPDATE outbox SET dead_at = ? WHERE id = ?`, began, id); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// TestOutboxTimes_APassThatSentTheFirstRowAlone: on a busy machine the
// relay's pass held while the lab clock moved on may be one that read the
// first transfer's row alone, before the second's was written; the pass
// that refuses the second then begins after the move. S9.outbox-times
// must still catch a dead_at read when the pass began (it holds the next
// pass as well), and must still pass solution 9, whose rows were answered
// in different rounds. It catches a check that judges every row against
// the first round alone, as it once did: the mutant passed.
func TestOutboxTimes_APassThatSentTheFirstRowAlone(t *testing.T) {
	c, ok := grader.Lookup("S9.outbox-times")
	if !ok {
		t.Fatal("no check S9.outbox-times")
	}
	for _, mutant := range []bool{false, true} {
		r := grader.RunCheck(context.Background(), grader.Subject{Stage: 9, Name: "first row alone", New: newFirstRowAlone(mutant)}, c, 1, targets.InProcess)
		var f *judging.Failure
		switch {
		case mutant && !errors.As(r.Err, &f):
			t.Errorf("dead_at read when the pass began, the first row sent alone: %v, want a failure", r.Err)
		case mutant && !strings.Contains(f.Got, "dead letter"):
			t.Errorf("dead_at read when the pass began, the first row sent alone: got %s, want the dead letter's time named", f.Got)
		case !mutant && r.Err != nil:
			t.Errorf("solution 9, the first row sent alone: %v, want a pass", r.Err)
		}
	}
}

// rowByRow is solution 9 with a relay that sends each owed row it reads,
// oldest first, in a request of its own (env.Core.Post, which the lesson
// allows beside PostAll), stops at the first the core does not take, and
// marks those it took in one statement.
type rowByRow struct {
	*stage9.Server
	env stage.Env
}

func (s rowByRow) Relay(ctx context.Context) (int, error) {
	rows, err := s.env.DB.QueryContext(ctx,
		`SELECT id, core_key, transfer_id, from_account, to_account, amount FROM outbox
		 WHERE sent_at IS NULL AND dead_at IS NULL ORDER BY id LIMIT 200`)
	if err != nil {
		return 0, err
	}
	type row struct {
		id  int64
		key string
		p   core.Posting
	}
	var owed []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.key, &r.p.TransferID, &r.p.From, &r.p.To, &r.p.Amount); err != nil {
			rows.Close()
			return 0, err
		}
		owed = append(owed, r)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	var sent []any
	var later error
	for _, r := range owed {
		if _, _, later = s.env.Core.Post(ctx, r.key, r.p); later != nil {
			break
		}
		sent = append(sent, r.id)
	}
	if len(sent) == 0 {
		return 0, later
	}
	marks := strings.Repeat(", ?", len(sent))[2:]
	_, err = s.env.DB.ExecContext(ctx, `UPDATE outbox SET sent_at = ? WHERE id IN (`+marks+`)`,
		append([]any{clock.Format(s.env.Clock.Now())}, sent...)...)
	return len(sent), cmp.Or(err, later)
}

// TestCommitOrder_ARelayThatSendsRowByRow: a relay that reads the oldest
// owed rows first and sends each in a request of its own posts one row
// for every request the core lets through, so that the round's
// transfers are not all in the core two requests after the round; it
// never posts a later transfer before them, and must pass. It catches a
// check that counts requests, as S9.commit-order once did: it failed
// this relay on both engines.
func TestCommitOrder_ARelayThatSendsRowByRow(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return rowByRow{Server: h.(*stage9.Server), env: env}, nil
	}
	if err := errorOf(t, "S9.commit-order", grader.Subject{Stage: 9, Name: "a relay that sends row by row", New: factory}); err != nil {
		t.Errorf("a relay that sends each row in a request of its own: %v", err)
	}
}

// backsOff is solution 9 with a relay that waits settleBackOff before it
// returns a write its database refused, as a relay does that backs off a
// failing database rather than try it again 50 times a second.
type backsOff struct{ *stage9.Server }

// settleBackOff is how long backsOff waits after a refused write: long
// enough that S9.settle-fails' 64 refusals take longer than the 10 s the
// check gives the relay to spend the next one.
const settleBackOff = 200 * time.Millisecond

func (s backsOff) Relay(ctx context.Context) (int, error) {
	n, err := s.Server.Relay(ctx)
	if errors.Is(err, fault.ErrOutboxSettleRefused) {
		select {
		case <-time.After(settleBackOff):
		case <-ctx.Done():
		}
	}
	return n, err
}

// TestSettleFails_ARelayThatBacksOff: a relay that waits a while after
// each write its database refused, and rolls its transaction back, spends
// the armed refusals slowly but settles every row once they are spent,
// and S9.settle-fails passes it. It catches a check that gives all 64
// refusals the time it gives one, and calls a relay that is still
// settling one that wrote no more.
func TestSettleFails_ARelayThatBacksOff(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return backsOff{Server: h.(*stage9.Server)}, nil
	}
	if err := errorOf(t, "S9.settle-fails", grader.Subject{Stage: 9, Name: "backs off", New: factory}); err != nil {
		t.Errorf("a relay that backs off %v after each refused write: %v", settleBackOff, err)
	}
}

// TestSettleFails_AServerThatWritesNoOutboxRowsFails: solution 8 writes
// no outbox row, so no write of a relay's is ever refused, and its
// transfers never reach the core. S9.settle-fails fails it for that, as
// every stage-9 check does, where it said it could not observe a refused
// write because the outbox held nothing owed.
func TestSettleFails_AServerThatWritesNoOutboxRowsFails(t *testing.T) {
	failureOf(t, "S9.settle-fails", grader.Subject{Stage: 9, Name: "solutions/stage8", New: stage8.New})
}

// freshContext is solution 9 with a relay that runs its pass with a
// context of its own, context.Background(), rather than the one the kit
// passes it, which the fail-outbox-settle fault knows the relay's
// statements by.
type freshContext struct{ *stage9.Server }

func (s freshContext) Relay(context.Context) (int, error) {
	return s.Server.Relay(context.Background())
}

// TestSettleFails_ARelayOnAContextOfItsOwnIsToldWhichToUse: no write of a
// relay that drops the kit's context is refused, so S9.settle-fails
// cannot observe what it does when one is, and says so; and, since the
// student cannot guess how the fault knows the relay, it says which
// context to run the statements with. It catches a report that explains
// the could-not-observe and leaves the student nothing to do about it.
func TestSettleFails_ARelayOnAContextOfItsOwnIsToldWhichToUse(t *testing.T) {
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return freshContext{Server: h.(*stage9.Server)}, nil
	}
	err := errorOf(t, "S9.settle-fails", grader.Subject{Stage: 9, Name: "a relay on a context of its own", New: factory})
	var u *judging.Unobserved
	if !errors.As(err, &u) {
		t.Fatalf("a relay on context.Background(): %v, want could not observe", err)
	}
	if !strings.Contains(u.What, "run every statement of Relay with the ctx the kit passes it") {
		t.Errorf("could not observe %s: it does not say which context to run the relay's statements with", u.What)
	}
}

// heldAfterDraining is freshContext holding the database once the outbox
// has drained after the check's last transfer: its relay, once a pass
// finds nothing owed after one that settled rows, and once waiting is set,
// begins a transaction and leaves it open until the server stops (the
// kit's context ends), which on SQLite keeps the write lock and holds the
// lab's reads; rolled back then, so that the relay's next pass, which
// waits for the database with a context of its own, ends with the
// server. Held before waiting is set, at a pass that drained the outbox
// between two of the check's transfers, it would keep the next transfer
// from executing, and the check would fail the server for it, rightly.
type heldAfterDraining struct {
	freshContext
	db      *sql.DB
	waiting *atomic.Bool
	// holding is set once the relay has begun the transaction it leaves
	// open, for the test to tell that it did.
	holding *atomic.Bool
	settled atomic.Bool
	held    atomic.Pointer[sql.Tx]
}

func (s *heldAfterDraining) Relay(ctx context.Context) (int, error) {
	n, err := s.freshContext.Relay(ctx)
	if n > 0 {
		s.settled.Store(true)
	}
	if err != nil || n > 0 || !s.waiting.Load() || !s.settled.Load() || s.held.Load() != nil {
		return n, err
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	s.held.Store(tx)
	s.holding.Store(true)
	context.AfterFunc(ctx, func() { tx.Rollback() })
	return 0, nil
}

// askingArmed is a target started in this process whose client sets
// asked at the check's first GET /lab/faults: in S9.settle-fails, when
// every transfer of the check has executed and the check begins to wait
// for the relay.
func askingArmed(asked *atomic.Bool) targets.Start {
	return func(ctx context.Context, subject targets.Subject) (*targets.Target, func(), error) {
		target, stop, err := targets.InProcess(ctx, subject)
		if err != nil {
			return nil, nil, err
		}
		sent, client := target.Client.Transport, *target.Client
		client.Transport = roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Path == "/lab/faults" {
				asked.Store(true)
			}
			return sent.RoundTrip(r)
		})
		target.Client = &client
		return target, stop, nil
	}
}

// roundTrip is an http.RoundTripper made of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSettleFails_NoRefusalAndNoOutboxIsNotAFailure: no write of the
// relay's is refused, and the lab cannot read the outbox (on SQLite the
// relay's open transaction holds the read; on PostgreSQL the read goes
// through and finds the outbox drained): the check cannot tell a relay
// that settled every row with a context of its own from one that settled
// none, and says it could not observe, as it would of a correct relay on
// a machine too busy to read the outbox in time. It catches a check that
// fails the server for a stopped relay it never saw stop.
func TestSettleFails_NoRefusalAndNoOutboxIsNotAFailure(t *testing.T) {
	var waiting, holding atomic.Bool
	factory := func(ctx context.Context, env stage.Env) (stage.Handlers, error) {
		h, err := stage9.New(ctx, env)
		if err != nil {
			return nil, err
		}
		return &heldAfterDraining{freshContext: freshContext{Server: h.(*stage9.Server)}, db: env.DB, waiting: &waiting, holding: &holding}, nil
	}
	c, ok := grader.Lookup("S9.settle-fails")
	if !ok {
		t.Fatal("no check S9.settle-fails")
	}
	subject := grader.Subject{Stage: 9, Name: "a relay on a context of its own that holds the database", New: factory}
	err := grader.RunCheck(context.Background(), subject, c, 1, askingArmed(&waiting)).Err
	var u *judging.Unobserved
	if !errors.As(err, &u) {
		t.Fatalf("no refused write, and an outbox the lab may not read: %v, want could not observe", err)
	}
	// A relay that drained the outbox and never held the database says
	// the same (the outbox read and found empty): the test would pass
	// without the case it is about.
	if !holding.Load() {
		t.Fatal("the relay never held the database once the check asked what was left of the fault")
	}
}
