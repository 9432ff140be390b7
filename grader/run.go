package grader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"idemlab/grader/history"
	"idemlab/grader/judging"
	"idemlab/grader/targets"
	"idemlab/grader/timeline"
	"idemlab/kit/core"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
)

// Result is the outcome of one check.
type Result struct {
	Check    Check
	Seed     uint64
	Err      error
	Duration time.Duration
	// History is what the check's clients sent and what the lab observed,
	// kept when the check failed, for its timeline, and whatever it found
	// when it ran by RunCheckRecorded.
	History *timeline.History
	// TimelinePath is where its HTML timeline was written, if it was
	// (WriteTimeline).
	TimelinePath string
}

// Lesson is the lesson section to read for r: the finding's own
// (judging.Failure.Lesson) if it has one, else the check's.
func (r Result) Lesson() string {
	var f *judging.Failure
	if errors.As(r.Err, &f) && f.Lesson != "" {
		return f.Lesson
	}
	return r.Check.Lesson
}

// Passed reports whether the check held.
func (r Result) Passed() bool { return r.Err == nil }

// Caught reports whether the check failed with evidence against the
// server (a *Failure), as opposed to holding or not being able to run
// (the server did not start, the check could not observe what it needs,
// panicked or timed out).
func (r Result) Caught() bool {
	var f *judging.Failure
	return errors.As(r.Err, &f)
}

// Harm is what the failure did to money, or "" for a pass, a contract
// difference, or a check that could not run.
func (r Result) Harm() judging.Harm {
	var f *judging.Failure
	if errors.As(r.Err, &f) {
		return f.Harm
	}
	return ""
}

// RunCheck runs one check against a fresh target, with the check's own
// seed derived from the run's. The result keeps its history only when the
// check failed, for its timeline.
func RunCheck(ctx context.Context, subject targets.Subject, c Check, runSeed uint64, start targets.Start) Result {
	return runCheck(ctx, subject, c, runSeed, start, false)
}

// RunCheckRecorded is RunCheck, and the result keeps its history whatever
// the check found: a results bundle holds every attempt of every check
// (WriteHistory).
func RunCheckRecorded(ctx context.Context, subject targets.Subject, c Check, runSeed uint64, start targets.Start) Result {
	return runCheck(ctx, subject, c, runSeed, start, true)
}

func runCheck(ctx context.Context, subject targets.Subject, c Check, runSeed uint64, start targets.Start, record bool) Result {
	seed := CheckSeed(runSeed, c.ID)
	began := time.Now()
	// A core outside the server, so that it outlives the server's crashes:
	// the checks read its postings and fail it on purpose.
	var ledger *core.Core
	if c.Stage >= CoreStage {
		var stopCore func()
		var err error
		if ledger, subject.CoreURL, stopCore, err = server.StartCore(ctx); err != nil {
			return Result{Check: c, Seed: runSeed, Err: err}
		}
		defer stopCore()
	}
	target, stop, err := start(ctx, subject)
	if err != nil {
		return Result{Check: c, Seed: runSeed, Err: fmt.Errorf("could not start the server: %w", err)}
	}
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	t := &T{ctx: ctx, target: target, subject: subject, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x9e3779b9)), cleanups: &cleanupList{}, core: ledger,
		differences: &[]*judging.Failure{}, history: history.NewRecorder(), heldReads: &heldReads{}}
	defer t.cleanups.run()
	defer t.history.Close()
	// Without the lab's events the timeline still has every request.
	t.history.Watch(ctx, t.Lab(), 0)
	// A server the checks share (lab grade --url) holds what the checks
	// before this one did: the money verdict counts only what this one
	// adds, as a fresh server would. If that read fails the server is
	// taken as fresh (what every target but --url's is): a double the
	// check made is never let go for want of a baseline.
	if before, err := t.State(); err == nil {
		t.before = &before
	}
	err = t.moneyFirst(WithRunHint(runGuarded(c, t), subject.Stage, c.ID))
	r := Result{Check: c, Seed: runSeed, Err: err, Duration: time.Since(began)}
	if record || r.Caught() {
		// The fence moves the lab clock, a write of the server's
		// database: when the check could not read that database, the
		// move would wait out the fence's limit and be passed over.
		if t.unread == nil {
			t.history.Fence(ctx)
		}
		r.History = t.history.History()
	}
	var f *judging.Failure
	if errors.As(err, &f) && f.Lesson == "" && r.History != nil && abortedTransaction(r.History.ServerErrors) {
		f.Lesson = postgresLesson(subject.Stage)
	}
	if errors.As(err, &f) && f.Lesson == "" && r.History != nil && subject.Stage >= 4 && valueTooLong(r.History.ServerErrors) {
		f.Lesson = lesson4 + "#store-the-answer"
		f.Why = cmp.Or(f.Why, tooLongWhy)
	}
	if errors.As(err, &f) && r.History != nil {
		explainForgotten(f, c.Stage, subject.Stage, *r.History)
	}
	return r
}

// explainForgotten gives f, a failure of a check of stage check on a
// server of stage subject, lesson 05's retention and forgottenWhy, when the
// stages are those keyForgotten speaks of and it finds the key of an
// operation f counts in excess forgotten in h; a lesson or a why f has of
// its own is kept.
func explainForgotten(f *judging.Failure, check, subject int, h timeline.History) {
	if f.Lesson != "" || check >= 5 || subject < 5 || !keyForgotten(h, f.Excess) {
		return
	}
	f.Lesson = lesson5 + "#how-long-to-remember"
	if f.Why == "" {
		f.Why = forgottenWhy
	}
}

// forgottenWhy is the why of a failure that keyForgotten explains, in
// place of the check's: the claim and the answer it speaks of did their
// part, and the key was gone.
const forgottenWhy = "the key of the operation that ran again was forgotten during this check, " +
	"which never moves the lab clock past a retention: a key forgotten inside its retention (a purge " +
	"with no condition on completed_at, an expiry moment computed the wrong way) makes the next retry " +
	"a new request, and it pays a second time"

// keyForgotten reports whether the history saw the key of an operation
// of excess (those that executed more often than asked) forgotten: its
// completed row deleted, or claimed again in place. A check of the stages
// before 5 never moves the lab clock past a retention, so a server of
// stage 5 on that forgot a key there forgot it inside its retention (a
// purge with no condition on the time, an expiry moment in the future),
// and the retry that ran again ran because of it: the check's own section
// would send the student after the claim or the stored answer, which did
// their part. When the key was forgotten is not compared with when the
// operation ran again: the key table's reports and the executions come by
// two ways, and on a loaded machine a report can be stamped after the run
// it let in.
func keyForgotten(h timeline.History, excess []string) bool {
	keys := map[string]bool{}
	for _, a := range h.Attempts {
		if a.Key != "" && slices.Contains(excess, a.Op) {
			keys[a.Key] = true
		}
	}
	return slices.ContainsFunc(h.Events, func(e timeline.Event) bool {
		return keys[e.Key] && (e.Kind == timeline.Forget ||
			e.Kind == timeline.Claim && strings.Contains(e.Detail, "in the completed key's row"))
	})
}

// abortedTransaction reports whether the server logged, behind a 5xx,
// PostgreSQL's refusal of a statement that followed a failed one in the
// same transaction (SQLSTATE 25P02): an error the stage's own SQL made,
// which the lessons' PostgreSQL sections explain, whatever check met it.
func abortedTransaction(serverErrors []timeline.ServerError) bool {
	return loggedSQLState(serverErrors, "25P02")
}

// valueTooLong reports whether the server logged, behind a 5xx,
// PostgreSQL's refusal of a value longer than its column's type allows
// (SQLSTATE 22001): from stage 4 on, an answer stored in a column sized for
// the answers the student tried (VARCHAR(4096)), which lesson 04 explains,
// whatever check sent the longer one. A key column too short fails
// S1.key-forms from stage 1 on, before this applies.
func valueTooLong(serverErrors []timeline.ServerError) bool {
	return loggedSQLState(serverErrors, "22001")
}

// tooLongWhy is the why of a failure valueTooLong explains, in place of
// the check's, which speaks of a bug the server does not have.
const tooLongWhy = "the server's database refused a value longer than its column allows: an answer stored " +
	"in a column sized for the answers that were tried is refused when a longer one comes, the completion " +
	"fails and takes the money's transaction with it, and every retry of that payment is told the key " +
	"store failed, for good"

// loggedSQLState reports whether one of the causes the server logged
// behind its 5xx answers carries PostgreSQL's SQLSTATE code.
func loggedSQLState(serverErrors []timeline.ServerError, code string) bool {
	return slices.ContainsFunc(serverErrors, func(e timeline.ServerError) bool { return strings.Contains(e.Line, code) })
}

// postgresLesson is the section that explains an aborted transaction to
// a student of stage: stage 1's lesson, or from stage 2 on, where the
// claim reads after a failed INSERT, the savepoint of stage 2's.
func postgresLesson(stage int) string {
	if stage < 2 {
		return lesson1 + "#on-postgresql"
	}
	return lesson2 + "#on-postgresql"
}

// WithRunHint adds to err, when check needed a server the grader starts
// itself (targets.ErrNoChild, targets.ErrNoReplicas), the commands that
// run it so on the stage being graded, as typed where lab was started
// (labdb.FromRoot):
// the stage's, not the check's, since grading a stage runs the checks of
// every stage before it too.
func WithRunHint(err error, stage int, check string) error {
	if errors.Is(err, targets.ErrNoChild) || errors.Is(err, targets.ErrNoReplicas) {
		return fmt.Errorf("%w: run it with `%smake stage-%d RUN=%s`, or `%s%s grade --stage %d --run %s` (without --url)",
			err, labdb.FromRoot(), stage, check, labdb.FromRoot(), Program(), stage, check)
	}
	return err
}

func runGuarded(c Check, t *T) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the check panicked: %v", v)
		}
	}()
	return c.Run(t)
}

// Format renders a failed result the way a student should read it: the
// money verdict first, then the evidence, then the lesser money finding
// the check made itself when the books showed a double (judging.Failure's
// Lesser), then any contract difference found beside a money finding,
// and under a money finding its timeline (see FormatColor). A check
// that could not run says so and why, and claims nothing about the
// server; a check of stage 0's Tally claims nothing about money.
func Format(r Result, reproduce string) string { return FormatColor(r, reproduce, false) }

// FormatColor is Format, with the timeline's highlights in colour when
// color is set (for a terminal); its glyphs stay the same either way.
func FormatColor(r Result, reproduce string, color bool) string {
	var b strings.Builder
	c := r.Check
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		fmt.Fprintf(&b, "COULD NOT RUN %s  %s\n", c.ID, c.Claim)
		fmt.Fprintf(&b, "  lesson    %s\n", c.Lesson)
		fmt.Fprintf(&b, "  why not   %s\n", indent(r.Err.Error()))
		fmt.Fprintf(&b, "  verdict   none: this says nothing about your server's money, either way\n")
		fmt.Fprintf(&b, "  reproduce %s\n", reproduce)
		return b.String()
	}
	fmt.Fprintf(&b, "FAIL %s  %s\n", c.ID, c.Claim)
	switch {
	case f.Harm != "":
		fmt.Fprintf(&b, "  money     ✗ %s: %s\n", f.Harm, f.Harm.Explain())
	case c.Tally:
		// Stage 0's Tally counts a log: it moves no money, and the books
		// say nothing of it.
		fmt.Fprintf(&b, "  money     none: this check counts a log, it moves no money\n")
	case f.Reconciled:
		fmt.Fprintf(&b, "  money     ✓ no operation ran more often than asked (a contract difference)\n")
	default:
		fmt.Fprintf(&b, "  money     ? the books could not be read after the check\n")
	}
	fmt.Fprintf(&b, "  lesson    %s\n", r.Lesson())
	evidence(&b, f)
	if l := f.Lesser; l != nil {
		fmt.Fprintf(&b, "  money     ✗ also %s: %s\n", l.Harm, l.Harm.Explain())
		evidence(&b, l)
	}
	beside := "  contract  ✗ also, beside the money finding:\n"
	if f.Harm == "" {
		beside = "  contract  ✗ also:\n"
	}
	shown := 0
	var more []*judging.Failure
	for c := f.Contract; c != nil; c = c.Contract {
		if shown == alsoShown {
			more = append(more, c)
			continue
		}
		shown++
		b.WriteString(beside)
		evidence(&b, c)
	}
	if len(more) > 0 {
		fmt.Fprintf(&b, "  contract  ✗ and %d more, each shown by what was sent and what came back:\n            %s\n", len(more), strings.Join(listed(more), "\n            "))
	}
	if lines := r.ServerErrors(); len(lines) > 0 {
		fmt.Fprintf(&b, "  server    %s\n", indent(serverErrors(lines)))
	}
	fmt.Fprintf(&b, "  why       %s\n", indent(cmp.Or(f.Why, c.Why)))
	fmt.Fprintf(&b, "  reproduce %s\n", reproduce)
	if v, ok := r.Timeline(reproduce, timeline.TextLanes); ok {
		b.WriteString(timeline.Text(v, timeline.TextOptions{Color: color}))
	}
	if r.TimelinePath != "" {
		fmt.Fprintf(&b, "  timeline: %s\n", r.TimelinePath)
	}
	return b.String()
}

// alsoShown is how many contract differences beside a check's first
// finding its report shows in full; the others are listed by what was
// sent (a check of many bad inputs finds one for each: the first few show
// what is wrong, and a student who fixes them sees the next).
const alsoShown = 3

// listed is one line for each difference of fs, for the list past the
// first few: what was sent, by its first line or, where several of fs
// share that line (one original request, then a different retry in
// each), by its last line, and what came back, by its first line without
// the body.
func listed(fs []*judging.Failure) []string {
	first := func(f *judging.Failure) string { return cut(f.Sent, 80) }
	seen := map[string]int{}
	for _, f := range fs {
		seen[first(f)]++
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		sent := first(f)
		if seen[sent] > 1 {
			lines := strings.Split(strings.TrimSpace(f.Sent), "\n")
			sent = cut(lines[len(lines)-1], 80)
		}
		got, _, _ := strings.Cut(cut(f.Got, 60), "  {")
		out[i] = sent + "  →  " + got
	}
	return out
}

// cut is s's first line, at most n runes of it.
func cut(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func evidence(b *strings.Builder, f *judging.Failure) {
	fmt.Fprintf(b, "  sent      %s\n", indent(f.Sent))
	fmt.Fprintf(b, "  got       %s\n", indent(f.Got))
	fmt.Fprintf(b, "  expected  %s\n", indent(f.Expected))
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n            ")
}

// RunSeed reads the run's seed from SEED, or draws a fresh one. It returns
// an error if SEED is set but is not a number.
func RunSeed() (uint64, error) {
	v := os.Getenv("SEED")
	if v == "" {
		return rand.Uint64() % 100_000, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("SEED=%q is not a seed: use the number a failure printed", v)
	}
	return n, nil
}

// serverErrors says what the server logged behind its 5xx answers, each
// different cause once (with how many answers it was behind, when more
// than one), the first three: a client sees only the problem type, and
// the cause (a statement PostgreSQL refused, a missing column) is what a
// student fixes.
func serverErrors(lines []string) string {
	var causes []string
	times := map[string]int{}
	for _, l := range lines {
		if times[l]++; times[l] == 1 {
			causes = append(causes, l)
		}
	}
	shown := make([]string, 0, 3)
	for _, c := range causes[:min(len(causes), 3)] {
		if n := times[c]; n > 1 {
			c += fmt.Sprintf("  (×%d)", n)
		}
		shown = append(shown, c)
	}
	out := fmt.Sprintf("what the server logged behind its 5xx answers (%d of them):\n%s",
		len(lines), strings.Join(shown, "\n"))
	if len(causes) > 3 {
		out += fmt.Sprintf("\n… and %d other causes", len(causes)-3)
	}
	return out
}
