package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"idemlab/kit/labclient"
	"idemlab/kit/labdb"
)

// Model is the dashboard's root model: it owns the message loop and the
// sides' data, and draws the panes as plain values. It never does I/O in
// Update: the servers are watched by goroutines that send it messages (see
// dashboard/backend), and what the key presses do runs in commands.
type Model struct {
	ctx context.Context
	// traffic is nil when the model only watches (lab dash); stories
	// and servers are nil when the controls given do not have them.
	traffic  TrafficControls
	stories  StoryControls
	servers  RightControls
	pace     PaceReporter
	bindings Bindings
	help     help.Model
	styles   Styles
	sides    []*sideState
	stages   []int // the solutions the right side can switch to

	width, height int
	now           time.Time
	started       time.Time

	paused  bool
	rate    int
	profile Profile
	// held is how many operations the traffic held back, and heldAt when
	// that count last grew (see behind).
	held     int64
	heldAt   time.Time
	right    Choice
	busy     string // the slow action under way, if any
	notice   string
	noticeAt time.Time
	errored  bool
	// failure is the error the last action left, shown whole under the
	// panes until dismissed or replaced: an instructor reads a build
	// error's file and line out to the class.
	failure  string
	showHelp bool
	// helpTop is the first line of the help page shown, when the window
	// is too small for all of it.
	helpTop int
	fatal   error
	// still is the picture a frozen watch shows.
	still string
	// frozen stops the clock, so that a test's frames depend only on the
	// messages it sends.
	frozen bool
}

// Err is the error a FatalMsg ended the program with, if any.
func (m Model) Err() error { return m.fatal }

// sideState is a side's data and what the model knows of its server.
type sideState struct {
	*Side
	title, url, status string
	epoch              int
}

// tickMsg moves the model's clock: ages and the sparkline follow it.
type tickMsg time.Time

// heldMsg is how many operations the traffic has held back so far.
type heldMsg int64

// doneMsg reports what a key press's command did.
type doneMsg struct {
	notice  string
	err     error
	rate    int
	profile *Profile
	right   *Choice
	story   *Story
}

// NewDemo returns the model of lab demo: two sides, driven through ctl,
// and through its StoryControls and RightControls if it has them.
// stages are the solutions the right side can run; right is what it runs
// now; rate (operations per second) and profile are the traffic's at the
// start.
func NewDemo(ctx context.Context, ctl TrafficControls, stages []int, left, right Choice, rate int, profile Profile, now time.Time) Model {
	m := newModel(ctx, ctl, now)
	m.stages, m.right = stages, right
	m.rate, m.profile = rate, profile
	m.sides = []*sideState{
		{Side: NewSide(), title: left.String()},
		{Side: NewSide(), title: right.String()},
	}
	return m
}

// NewWatch returns the model of lab dash: one side, a server it only
// watches, which may have run before: its first state poll is the side's
// baseline (see Attach).
func NewWatch(ctx context.Context, title string, now time.Time) Model {
	m := newModel(ctx, nil, now)
	m.sides = []*sideState{{Side: newAttachedSide(), title: title}}
	return m
}

func newModel(ctx context.Context, ctl TrafficControls, now time.Time) Model {
	h := help.New()
	st := DefaultStyles()
	h.Styles = st.Help
	m := Model{
		ctx: ctx, traffic: ctl, bindings: DefaultBindings(ctl != nil), help: h, styles: st,
		now: now, started: now, width: 80, height: 24,
	}
	m.stories, _ = ctl.(StoryControls)
	m.servers, _ = ctl.(RightControls)
	m.pace, _ = ctl.(PaceReporter)
	if m.stories == nil {
		disable(&m.bindings.Burst, &m.bindings.Edited, &m.bindings.Clerks, &m.bindings.Invoice)
	}
	if m.servers == nil {
		disable(&m.bindings.Crash, &m.bindings.Stage, &m.bindings.Yours)
	}
	return m
}

// Init starts the clock.
func (m Model) Init() tea.Cmd {
	if m.frozen {
		return nil
	}
	return tick()
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Side returns side i's data, for tests and the plain printer.
func (m Model) Side(i int) *Side { return m.sides[i].Side }

// Server is what the model shows of side i's server: its title, URL,
// status and epoch.
func (m Model) Server(i int) SideMsg {
	s := m.sides[i]
	return SideMsg{Side: i, Epoch: s.epoch, Title: s.title, URL: s.url, Status: s.status}
}

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.still = msg.Width, msg.Height, ""
		if m.paused && m.traffic == nil {
			m.still = m.Render()
		}
		m.help.SetWidth(msg.Width)
	case tickMsg:
		m.now = time.Time(msg)
		if m.frozen {
			return m, nil
		}
		if m.pace != nil {
			return m, tea.Batch(tick(), func() tea.Msg { return heldMsg(m.pace.HeldBack()) })
		}
		return m, tick()
	case heldMsg:
		if int64(msg) > m.held {
			if !m.behind() {
				m.setNotice(fmt.Sprintf("traffic: the servers answer too slowly for %d ops/s; fewer operations are sent until they catch up", m.rate), false)
			}
			m.held, m.heldAt = int64(msg), m.now
		}
	case EventsMsg:
		if s := m.sideFor(msg.Side, msg.Epoch); s != nil {
			for _, ev := range msg.Events {
				s.Ingest(ev, msg.Received)
			}
		}
	case StateMsg:
		if s := m.sideFor(msg.Side, msg.Epoch); s != nil {
			if msg.Err != nil {
				status := pollFailure(msg.Err)
				if status == tokenRefused && s.status != status {
					m.setNotice(msg.Err.Error(), true)
				}
				s.status = status
			} else {
				if s.status == unreachable || s.status == tokenRefused {
					s.status = "running"
				}
				s.ApplyState(msg.State, msg.Polled)
			}
		}
	case SideMsg:
		m.side(msg)
	case NoticeMsg:
		m.setNotice(msg.Text, msg.Err)
	case FatalMsg:
		m.fatal = msg.Err
		return m, tea.Quit
	case doneMsg:
		if m.notice == m.busy+"…" {
			m.notice = "" // "starting …" is over, however it ended
		}
		m.busy = ""
		if msg.err != nil {
			m.failure = msg.err.Error()
		} else if msg.notice != "" {
			m.setNotice(msg.notice, false)
		}
		if msg.right != nil && msg.err == nil {
			m.failure = "" // what failed to start is no longer the question
		}
		if msg.rate != 0 {
			m.rate = msg.rate
		}
		if msg.profile != nil {
			m.profile = *msg.profile
		}
		if msg.right != nil && msg.err == nil {
			m.right = *msg.right
		}
		if msg.story != nil {
			for i, s := range m.sides {
				s.Tell(m.now, msg.story.Sides[i])
			}
		}
	case tea.KeyPressMsg:
		return m.press(msg)
	}
	return m, nil
}

// The statuses of a side whose state poll failed.
const (
	unreachable = "unreachable"
	// tokenRefused is a server that answers but refuses the admin token:
	// lab serve started again draws a new one, and a dashboard left
	// attached said "unreachable" of a server that was up.
	tokenRefused = "admin token refused"
)

// pollFailure is the status a failed state poll gives its side.
func pollFailure(err error) string {
	var lab *labclient.Error
	if errors.As(err, &lab) && lab.Status == http.StatusUnauthorized {
		return tokenRefused
	}
	return unreachable
}

func (m *Model) setNotice(text string, isErr bool) {
	m.notice, m.errored, m.noticeAt = text, isErr, m.now
}

func (m Model) sideFor(i, epoch int) *sideState {
	if i < 0 || i >= len(m.sides) || m.sides[i].epoch != epoch {
		return nil
	}
	return m.sides[i]
}

// side applies a SideMsg: a new epoch is a new server, counted from zero.
// A message of an older epoch is about a server the side no longer runs
// (a crash of the stage just switched away from, heard late): it changes
// nothing.
func (m Model) side(msg SideMsg) {
	if msg.Side < 0 || msg.Side >= len(m.sides) {
		return
	}
	s := m.sides[msg.Side]
	if msg.Epoch < s.epoch {
		return
	}
	if msg.Epoch != s.epoch {
		s.Side, s.epoch = NewSide(), msg.Epoch
	}
	was := s.status
	s.title, s.status = msg.Title, msg.Status
	if msg.URL != "" {
		s.url = msg.URL
	}
	switch {
	case msg.Note != "" && msg.Status == "crashed":
		s.Crash(m.now, msg.Note)
	case msg.Note != "":
		s.Note(m.now, msg.Note)
	case msg.Status == "running" && was == "crashed":
		s.Note(m.now, "restarted on the same database")
	case msg.Status == "running":
		s.Note(m.now, "running "+msg.Title)
	}
}

// press does what a key press's binding says.
func (m Model) press(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.bindings
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp, m.helpTop = !m.showHelp, 0
		return m, nil
	case m.showHelp && key.Matches(msg, k.Up, k.Down):
		// Clamped to the page as the window has it now: it may have
		// been resized since the last press.
		w, h := m.helpSize()
		last := helpScroll(len(m.helpLines(w)), h)
		if key.Matches(msg, k.Up) {
			m.helpTop = max(min(m.helpTop, last)-1, 0)
		} else {
			m.helpTop = min(m.helpTop+1, last)
		}
		return m, nil
	case m.showHelp:
		// The page covers the panes: nothing acts behind it but its own
		// keys (scroll, close) and quit, not even esc on the failure line
		// it hides.
		return m, nil
	case m.failure != "" && key.Matches(msg, k.Dismiss):
		m.failure = ""
		return m, nil
	case key.Matches(msg, k.Pause):
		m.paused = !m.paused
		desc := "pause"
		switch {
		case m.paused:
			desc = "resume"
		case m.traffic == nil:
			desc = "freeze"
		}
		m.bindings.Pause.SetHelp(m.bindings.Pause.Help().Key, desc)
		if m.traffic == nil {
			// Watching only: the picture stops, the counting does not.
			m.still = ""
			if m.paused {
				m.still = m.Render()
			}
			return m, nil
		}
		paused := m.paused
		return m, m.run(func(ctx context.Context) doneMsg {
			m.traffic.SetPaused(paused)
			return doneMsg{notice: map[bool]string{true: "traffic paused", false: "traffic resumed"}[paused]}
		})
	case key.Matches(msg, k.Faster, k.Slower):
		delta := 1
		if key.Matches(msg, k.Slower) {
			delta = -1
		}
		return m, m.run(func(ctx context.Context) doneMsg {
			r := m.traffic.StepRate(delta)
			return doneMsg{rate: r, notice: fmt.Sprintf("traffic: %d ops/s", r)}
		})
	case key.Matches(msg, k.Profile):
		return m, m.run(func(ctx context.Context) doneMsg {
			p := m.traffic.NextProfile(ctx)
			return doneMsg{profile: &p, notice: "faults: " + p.Name}
		})
	case key.Matches(msg, k.Burst):
		return m, m.run(func(ctx context.Context) doneMsg {
			return doneMsg{notice: m.stories.Burst(ctx)}
		})
	case key.Matches(msg, k.Edited):
		return m, m.run(func(ctx context.Context) doneMsg {
			return doneMsg{notice: m.stories.Edited(ctx)}
		})
	case key.Matches(msg, k.Clerks, k.Invoice):
		if m.busy != "" {
			m.setNotice("wait: "+m.busy, true)
			return m, nil
		}
		busy, play := "two clerks at work", m.stories.Clerks
		if key.Matches(msg, k.Invoice) {
			busy, play = "two clerks paying an invoice", m.stories.Invoice
		}
		m.busy = busy
		m.setNotice(m.busy+"…", false)
		return m, m.run(func(ctx context.Context) doneMsg {
			story := play(ctx)
			return doneMsg{notice: story.Notice, story: &story}
		})
	case key.Matches(msg, k.Crash):
		if m.busy != "" {
			m.setNotice("wait: "+m.busy, true)
			return m, nil
		}
		m.busy = "crashing the right server"
		return m, m.run(func(ctx context.Context) doneMsg {
			if err := m.servers.CrashRight(ctx); err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{notice: "right server crashed and restarted on its database"}
		})
	case key.Matches(msg, k.Stage, k.Yours):
		next := m.right
		if key.Matches(msg, k.Yours) {
			next.Yours = !next.Yours
		} else {
			next.Stage = m.nextStage(next.Stage)
		}
		if m.busy != "" {
			m.setNotice("wait: "+m.busy, true)
			return m, nil
		}
		m.busy = "starting " + next.String()
		m.setNotice(m.busy+"…", false)
		return m, m.run(func(ctx context.Context) doneMsg {
			if err := m.servers.SwitchRight(ctx, next); err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{right: &next, notice: "right: " + next.String() + "; both sides start again"}
		})
	}
	return m, nil
}

// nextStage is the stage after n among the solutions, wrapping around.
func (m Model) nextStage(n int) int {
	for _, s := range m.stages {
		if s > n {
			return s
		}
	}
	if len(m.stages) > 0 {
		return m.stages[0]
	}
	return n
}

// run wraps what a key press does in a command. Key presses that drive
// traffic do nothing when the model only watches.
func (m Model) run(fn func(ctx context.Context) doneMsg) tea.Cmd {
	if m.traffic == nil {
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg { return fn(ctx) }
}

// View draws the dashboard.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "idemlab"
	return v
}

// Render draws the dashboard as a string of exactly the window's size
// (or less, when the window is tiny).
func (m Model) Render() string {
	w := m.width
	if m.still != "" {
		return m.still
	}
	if w < 40 || m.height < 8 {
		return m.tiny()
	}
	header, footer, body := m.layout()
	var middle string
	if m.showHelp {
		middle = m.helpPage(w, body)
	} else {
		middle = m.panes(w, body)
	}
	parts := []string{}
	if header != "" {
		parts = append(parts, header)
	}
	parts = append(parts, middle)
	parts = append(parts, footer...)
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// layout is the header line ("" on a short window), the footer lines and
// the height left between them.
func (m Model) layout() (header string, footer []string, body int) {
	w, h := m.width, m.height
	header = m.header(w)
	footer = []string{m.faultLine(w), m.helpBar(w)}
	if m.traffic == nil {
		footer = footer[1:]
	}
	if h < 12 {
		header = ""
	}
	footer = append(m.failureLines(w, max(h/4, 1)), footer...)
	body = h - len(footer)
	if header != "" {
		body--
	}
	return header, footer, body
}

// failureLines are the error the last action left, wrapped to w columns
// in at most n lines (the panes keep the rest of the window), with the key
// that dismisses it; none when there is none.
func (m Model) failureLines(w, n int) []string {
	if m.failure == "" {
		return nil
	}
	text := "✗ " + m.failure + "  (" + hint(m.bindings.Dismiss) + ")"
	lines := strings.Split(ansi.Wrap(text, w, " /"), "\n")
	if len(lines) > n {
		lines = append(lines[:n-1], truncate(strings.Join(lines[n-1:], " "), w))
	}
	for i, l := range lines {
		lines[i] = m.styles.Error.Render(l)
	}
	return lines
}

// helpBar is the help bar, w columns at most. On a window too narrow for
// all of it, the keys that drive the traffic give way, the ones a class
// demo presses least first (GiveWay): s, which moves the demo from stage
// to stage, goes after them, and ? help, which lists every key, and
// q quit stay at its end. "space resume" is a column wider than "space
// pause": at 80 columns a paused demo's bar drops c, not s.
func (m Model) helpBar(w int) string {
	keys := m.bindings.ShortHelp()
	h := m.help
	h.SetWidth(0)
	for _, next := range m.bindings.GiveWay() {
		if lipgloss.Width(h.ShortHelpView(keys)) <= w {
			break
		}
		keys = slices.DeleteFunc(keys, func(k key.Binding) bool { return k.Help() == next.Help() })
	}
	// Cut all the same when even ? help and q quit do not fit.
	return truncate(h.ShortHelpView(keys), w)
}

func (m Model) panes(w, h int) string {
	ps := make([]pane, len(m.sides))
	rows := 0
	for i, s := range m.sides {
		pw := w / len(m.sides)
		if i == len(m.sides)-1 {
			pw = w - pw*(len(m.sides)-1)
		}
		ps[i] = pane{side: s.Side, title: s.title, url: s.url, status: s.status, now: m.now, st: m.styles}
		ps[i].SetSize(pw, h)
		rows = max(rows, len(ps[i].statsLines(max(pw-2, 1))))
	}
	var cols []string
	for _, p := range ps {
		// Each pane gives its traffic summary as many rows as the
		// longest, so that the rows under it face each other.
		p.statsRows = rows
		cols = append(cols, p.Render())
	}
	return lipgloss.JoinHorizontal(lipgloss.Top, cols...)
}

func (m Model) header(w int) string {
	right := ""
	switch {
	case m.notice != "" && m.now.Sub(m.noticeAt) < 8*time.Second:
		style := m.styles.Notice
		if m.errored {
			style = m.styles.Error
		}
		right = style.Render(m.notice)
	case m.busy != "":
		// A slow action (your code's first build) says it is under way
		// for as long as it is, not for as long as a notice lasts.
		right = m.styles.Notice.Render(m.busy + "…")
	}
	left := m.headerLeft(" · same traffic, same faults · ")
	if lipgloss.Width(left)+2+lipgloss.Width(right) > w {
		// What a key press just did ("clerk: c0.op-282 again, ₩1.2M →
		// ₩1.3M") matters more than the demo's motto, which an
		// 80-column window has no room for beside it.
		left = m.headerLeft(" · ")
	}
	room := w - lipgloss.Width(left) - 2
	if room < 10 {
		return truncate(left, w)
	}
	return left + "  " + padLeft(truncate(right, room), room)
}

// headerLeft is the header's left part: the lab, then the demo's motto
// (sep) or the address watched, the engine and the demo's clock.
func (m Model) headerLeft(sep string) string {
	left := m.styles.Header.Render("idemlab")
	engine := m.engine()
	if m.traffic != nil {
		left += m.styles.Dim.Render(sep)
		if engine != "" {
			left += engine + m.styles.Dim.Render(" · ")
		}
		return left + clockSince(m.now.Sub(m.started))
	}
	left += m.styles.Dim.Render(" · watching ") + m.sides[0].url
	if engine != "" {
		left += m.styles.Dim.Render(" · ") + engine
	}
	if m.paused {
		left = m.styles.Badge.Render(" FROZEN ") + " " + left
	}
	return left
}

// engine names the database engine the servers run on, as their state
// polls say: "SQLite", "PostgreSQL", or "" before any poll did. The demo
// runs both sides on one engine; a side that names none yet waits for the
// other.
func (m Model) engine() string {
	for _, s := range m.sides {
		if s.Engine != "" {
			return labdb.Engine(s.Engine).Name()
		}
	}
	return ""
}

// behindFor is how long the fault line says the servers are behind after
// the traffic last held an operation back.
const behindFor = 3 * time.Second

// behind reports whether the traffic held an operation back lately: the
// servers answer too slowly for the rate, and fewer operations are sent.
func (m Model) behind() bool {
	return m.held > 0 && m.now.Sub(m.heldAt) < behindFor
}

func (m Model) faultLine(w int) string {
	line := func(label bool) string {
		l := fmt.Sprintf("%d ops/s · ", m.rate)
		if m.behind() {
			l = fmt.Sprintf("%d ops/s ", m.rate) + m.styles.Conflict.Render("(servers behind)") + " · "
		}
		if label {
			l += m.styles.Label.Render("faults ")
		}
		l += m.styles.Title.Render(m.profile.Name) + m.styles.Dim.Render(" — "+m.profile.About)
		if m.paused {
			l = m.styles.Badge.Render(" PAUSED ") + " " + l
		}
		return l
	}
	l := line(true)
	if lipgloss.Width(l) > w {
		// The script pauses the traffic to point at the feed, and on 80
		// columns the badge pushed the profile's last words off the line.
		l = line(false)
	}
	return truncate(l, w)
}

// helpPage is the full help: every binding, what the less obvious ones
// do, and what the colors and counters mean, in a box w×h at most. On a
// window too small for all of it the box shows the lines from helpTop
// on, and its last line says how to scroll.
func (m Model) helpPage(w, h int) string {
	st := m.styles
	iw, room := m.helpSize()
	lines := m.helpLines(iw)
	closes := m.bindings.Help.Help().Key + " closes this page"
	if len(lines)+1 > room {
		// The box keeps its width as it scrolls.
		top := min(m.helpTop, helpScroll(len(lines), room))
		end := min(top+room-1, len(lines))
		foot := fmt.Sprintf("%d–%d of %d · %s%s scroll · %s", top+1, end, len(lines),
			m.bindings.Up.Help().Key, m.bindings.Down.Help().Key, closes)
		lines = append(lines[top:end:end], truncate(st.Dim.Render(foot), iw))
		for i, l := range lines {
			lines[i] = padRight(l, iw)
		}
	} else if len(lines)+2 > room {
		// No room for the blank line above it.
		lines = append(lines, st.Dim.Render(closes))
	} else {
		lines = append(lines, "", st.Dim.Render(closes))
	}
	page := st.Pane.Padding(0, 1).Render(strings.Join(lines, "\n"))
	return lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, page)
}

// helpScroll is the highest first line a help page of n lines can show
// in a box room lines high, its last line saying how to scroll.
func helpScroll(n, room int) int { return max(n-(room-1), 0) }

// helpSize is the width and height inside the help page's box: the body
// of the window less the border and the padding.
func (m Model) helpSize() (w, h int) {
	_, _, body := m.layout()
	return m.width - 4, body - 2
}

// helpLines are the help page's lines, at most w wide, without the line
// that says how to close it: the key presses in columns, or one after the
// other where the columns do not fit, then the sections below them,
// wrapped.
func (m Model) helpLines(w int) []string {
	st := m.styles
	full := m.help
	full.ShowAll = true
	keys := full.View(m.bindings)
	if lipgloss.Width(keys) > w {
		var hints []string
		for _, column := range m.bindings.FullHelp() {
			for _, b := range column {
				if b.Enabled() {
					hints = append(hints, st.Help.FullKey.Render(b.Help().Key)+" "+st.Help.FullDesc.Render(b.Help().Desc))
				}
			}
		}
		keys = flow(hints, w)
	}
	lines := strings.Split(keys, "\n")
	sections := [][]string{m.bindings.Explained(), {
		st.OK.Render("201") + " executed  " + st.Replay.Render("201 ↺ replay") + " the stored answer  " +
			st.Conflict.Render("409") + " duplicate, in progress",
		st.Rejected.Render("422") + " same key, other body  " + st.Failed.Render("5xx") + " failed  " +
			st.Double.Render(" DOUBLE ") + " moved money again",
		st.Label.Render("DOUBLE TRANSFERS") + " executions beyond an operation's first",
		st.Label.Render("LOST TRANSFERS") + "   a success answered, and no money moved",
		st.Label.Render("Σ ✓") + " balances = opening balances + each deposit once",
	}}
	if m.bindings.Crash.Enabled() {
		// A story's outcome and a crash's line come from the demo's own
		// keys and crashes: lab dash, which plays no story and crashes
		// nothing, never shows either, so its page does not name them.
		sections[1] = append(sections[1], st.Good.Render("▶")+" a story's outcome  "+st.Conflict.Render("†")+" the last crash ("+
			st.Dim.Render("──")+" in the feed): pinned a minute")
	}
	// The traffic line's marks and the money lines under the feed: an
	// instructor asked what "↺3", "re-run after retention" and "created"
	// were, and the page named none of them.
	legend := []string{
		"req N " + st.OK.Render("ok") + " N " + st.Replay.Render("↺") + "N  requests, 2xx answers, answers replayed from a key",
		st.Conflict.Render("409") + " N duplicates and in progress  " + st.Rejected.Render("4xx") + " N other refusals (400, 412, 422)",
		"re-run after retention  ops run again once their key expired (the lab clock moved past it): not doubles",
		"moved twice ₩ · created ₩  money moved again by doubled transfers, created by doubled deposits",
		"outbox N to post, N posted  stage 9's postings for the core ledger; " + st.Error.Render("⚠\u00a0dead\u00a0letter") + " one it refused for good, waiting for a person",
	}
	if !m.bindings.Crash.Enabled() {
		// Only lab dash attaches to a server that ran before it came.
		legend = append(legend, "before attach  what the server did before the dashboard came: not counted above")
	}
	sections = append(sections, legend)
	for _, sec := range sections {
		if len(sec) == 0 {
			continue
		}
		lines = append(lines, "")
		for _, l := range sec {
			// A line that wraps goes on indented, under its words.
			wrapped := strings.Split(ansi.Wrap(l, w-3, ""), "\n")
			for i := 1; i < len(wrapped); i++ {
				wrapped[i] = "   " + wrapped[i]
			}
			lines = append(lines, wrapped...)
		}
	}
	return lines
}

// flow sets items on lines at most w wide, two spaces apart.
func flow(items []string, w int) string {
	var lines []string
	line := ""
	for _, it := range items {
		if line != "" && lipgloss.Width(line)+2+lipgloss.Width(it) > w {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += "  "
		}
		line += it
	}
	return strings.Join(append(lines, line), "\n")
}

// tiny is what a window too small for panes gets: one line per side.
func (m Model) tiny() string {
	var lines []string
	for _, s := range m.sides {
		c := s.Counts
		name := strings.Replace(strings.Replace(s.title, "stage ", "#", 1), " · ", " ", 1)
		lines = append(lines, truncate(fmt.Sprintf("%s: %s doubles, %s lost",
			name, Short(c.Doubles), Short(c.Lost)), m.width))
	}
	if m.height > len(lines) {
		lines = append(lines, truncate(m.styles.Dim.Render(hint(m.bindings.Quit)+" · enlarge for more"), m.width))
	}
	if len(lines) > m.height {
		lines = lines[:max(m.height, 1)]
	}
	return strings.Join(lines, "\n")
}

func clockSince(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func truncate(s string, w int) string { return ansi.Truncate(s, w, "…") }

func padLeft(s string, n int) string {
	if w := lipgloss.Width(s); w < n {
		return strings.Repeat(" ", n-w) + s
	}
	return s
}
