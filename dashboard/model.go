package dashboard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
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
	bindings Bindings
	help     help.Model
	styles   Styles
	sides    []*sideState
	stages   []int // the solutions the right side can switch to

	width, height int
	now           time.Time
	started       time.Time

	paused   bool
	rate     int
	profile  Profile
	right    Choice
	busy     string // the slow action under way, if any
	notice   string
	noticeAt time.Time
	errored  bool
	showHelp bool
	fatal    error
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

// NewWatch returns the model of lab dash: one side, a server it only watches.
func NewWatch(ctx context.Context, title string, now time.Time) Model {
	m := newModel(ctx, nil, now)
	m.sides = []*sideState{{Side: NewSide(), title: title}}
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
		return m, tick()
	case EventsMsg:
		if s := m.sideFor(msg.Side, msg.Epoch); s != nil {
			for _, ev := range msg.Events {
				s.Ingest(ev, msg.Received)
			}
		}
	case StateMsg:
		if s := m.sideFor(msg.Side, msg.Epoch); s != nil {
			if msg.Err != nil {
				s.status = "unreachable"
			} else {
				if s.status == "unreachable" {
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
		m.busy = ""
		if msg.err != nil {
			m.setNotice(msg.err.Error(), true)
		} else if msg.notice != "" {
			m.setNotice(msg.notice, false)
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
func (m Model) side(msg SideMsg) {
	if msg.Side < 0 || msg.Side >= len(m.sides) {
		return
	}
	s := m.sides[msg.Side]
	if msg.Epoch != s.epoch {
		s.Side, s.epoch = NewSide(), msg.Epoch
	}
	was := s.status
	s.title, s.status = msg.Title, msg.Status
	if msg.URL != "" {
		s.url = msg.URL
	}
	switch {
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
		m.showHelp = !m.showHelp
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
	w, h := m.width, m.height
	if m.still != "" {
		return m.still
	}
	if w < 40 || h < 8 {
		return m.tiny()
	}
	header := m.header(w)
	// The help bar can overrun its width when its ellipsis does not fit.
	footer := []string{m.faultLine(w), truncate(m.help.View(m.bindings), w)}
	if m.traffic == nil {
		footer = footer[1:]
	}
	if h < 12 {
		header = ""
	}
	body := h - len(footer)
	if header != "" {
		body--
	}
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

func (m Model) panes(w, h int) string {
	var cols []string
	for i, s := range m.sides {
		pw := w / len(m.sides)
		if i == len(m.sides)-1 {
			pw = w - pw*(len(m.sides)-1)
		}
		p := pane{side: s.Side, title: s.title, url: s.url, status: s.status, now: m.now, st: m.styles}
		p.SetSize(pw, h)
		cols = append(cols, p.Render())
	}
	return lipgloss.JoinHorizontal(lipgloss.Top, cols...)
}

func (m Model) header(w int) string {
	left := m.styles.Header.Render("idemlab")
	if m.traffic != nil {
		left += m.styles.Dim.Render(" · same traffic, same faults · ") + clockSince(m.now.Sub(m.started))
	} else {
		left += m.styles.Dim.Render(" · watching ") + m.sides[0].url
		if m.paused {
			left = m.styles.Badge.Render(" FROZEN ") + " " + left
		}
	}
	right := ""
	if m.notice != "" && m.now.Sub(m.noticeAt) < 8*time.Second {
		style := m.styles.Notice
		if m.errored {
			style = m.styles.Error
		}
		right = style.Render(m.notice)
	}
	room := w - lipgloss.Width(left) - 2
	if room < 10 {
		return truncate(left, w)
	}
	return left + "  " + padLeft(truncate(right, room), room)
}

func (m Model) faultLine(w int) string {
	line := fmt.Sprintf("%d ops/s · ", m.rate) + m.styles.Label.Render("faults ") +
		m.styles.Title.Render(m.profile.Name) + m.styles.Dim.Render(" — "+m.profile.About)
	if m.paused {
		line = m.styles.Badge.Render(" PAUSED ") + " " + line
	}
	return truncate(line, w)
}

// helpPage is the full help: every binding, what the less obvious ones
// do, and what the colors and counters mean. Sections are dropped, last
// first, until it fits.
func (m Model) helpPage(w, h int) string {
	m.help.ShowAll = true
	st := m.styles
	sections := [][]string{{m.help.View(m.bindings)}}
	if explained := m.bindings.Explained(); len(explained) > 0 {
		sections = append(sections, explained)
	}
	sections = append(sections, []string{
		st.OK.Render("201") + " executed  " + st.Replay.Render("201 ↺ replay") + " the stored answer  " +
			st.Conflict.Render("409") + " duplicate, in progress",
		st.Rejected.Render("422") + " same key, other body  " + st.Failed.Render("5xx") + " failed  " +
			st.Double.Render(" DOUBLE ") + " moved money again",
		st.Label.Render("DOUBLE TRANSFERS") + " executions beyond an operation's first",
		st.Label.Render("LOST TRANSFERS") + "   a success answered, and no money moved",
		st.Label.Render("Σ ✓") + " balances = opening balances + each deposit once",
	})
	for n := len(sections); n > 0; n-- {
		var lines []string
		for _, sec := range sections[:n] {
			if len(lines) > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, sec...)
		}
		lines = append(lines, "", st.Dim.Render(m.bindings.Help.Help().Key+" closes this page"))
		page := st.Pane.Padding(0, 1).Render(strings.Join(lines, "\n"))
		if lipgloss.Height(page) <= h && lipgloss.Width(page) <= w {
			return lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, page)
		}
	}
	return lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, truncate(m.help.View(m.bindings), w))
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
