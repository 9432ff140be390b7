package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"idemlab/kit/bank"
	"idemlab/kit/events"
	"idemlab/kit/labclient"
	"idemlab/kit/labctl"
	"idemlab/kit/labdb"
)

// The traffic rates and fault profiles the fake controls step through:
// the model shows whatever its controls say (the real ones are
// dashboard/backend's).
var (
	testRates    = []int{1, 2, 5, 10, 20, 50, 100}
	testProfiles = []Profile{{Name: "lost responses", About: "1 in 4 answers lost; the client retries"}, {Name: "double-clicks", About: "1 in 4 sent twice at once; core 150ms"}, {Name: "calm", About: "nothing goes wrong"}}
)

const testRate = 3 // index in testRates the demo starts at

// fakeControls records what the key presses asked for.
type fakeControls struct {
	mu       sync.Mutex
	calls    []string
	paused   bool
	rate     int
	profile  int
	switched []Choice
	failNext error
}

func (f *fakeControls) note(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeControls) SetPaused(p bool) { f.note("pause"); f.paused = p }
func (f *fakeControls) StepRate(d int) int {
	f.note("rate")
	f.rate = min(max(f.rate+d, 0), len(testRates)-1)
	return testRates[f.rate]
}
func (f *fakeControls) NextProfile(context.Context) Profile {
	f.note("profile")
	f.profile = (f.profile + 1) % len(testProfiles)
	return testProfiles[f.profile]
}
func (f *fakeControls) Burst(context.Context) string  { f.note("burst"); return "burst sent" }
func (f *fakeControls) Edited(context.Context) string { f.note("edited"); return "clerk sent" }
func (f *fakeControls) Clerks(context.Context) Story {
	f.note("clerks")
	return testStory("two clerks", "LOST UPDATE: A's limit put back", "both clerks' changes kept")
}
func (f *fakeControls) Invoice(context.Context) Story {
	f.note("invoice")
	return testStory("invoice", "INVOICE PAID TWICE", "invoice INV-4201 paid once")
}

// testStory is a story whose left side was harmed and right side held.
func testStory(notice, left, right string) Story {
	return Story{Notice: notice, Sides: [2]Told{
		{Outcome: Harmed, Lines: []string{left, "what happened on the left"}},
		{Outcome: Held, Lines: []string{right, "what happened on the right"}},
	}}
}

func (f *fakeControls) CrashRight(context.Context) error {
	f.note("crash")
	return nil
}
func (f *fakeControls) SwitchRight(_ context.Context, c Choice) error {
	f.note("switch")
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.switched = append(f.switched, c)
	return nil
}

func press(k string) tea.KeyPressMsg {
	switch k {
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// update sends msg and then runs the command it returns, feeding its
// message back, as the program would.
func update(t *testing.T, m Model, msg tea.Msg) (Model, tea.Cmd) {
	t.Helper()
	next, cmd := m.Update(msg)
	m = next.(Model)
	if cmd == nil {
		return m, nil
	}
	out := cmd()
	if _, ok := out.(tickMsg); ok {
		return m, cmd
	}
	if _, ok := out.(tea.QuitMsg); ok {
		return m, cmd
	}
	next, _ = m.Update(out)
	return next.(Model), cmd
}

func demoModel(ctl TrafficControls) Model {
	m := NewDemo(context.Background(), ctl, []int{0, 1, 2, 3, 4, 5, 6}, Choice{}, Choice{Stage: 6}, testRates[testRate], testProfiles[0], t0)
	m.frozen = true
	return m
}

func TestModel_EveryBindingDoesWhatItsHelpSays(t *testing.T) {
	f := &fakeControls{rate: testRate}
	m := demoModel(f)
	steps := []struct {
		press string
		call  string
		check func(m Model) string
	}{
		{"space", "pause", func(m Model) string {
			if !m.paused || !f.paused {
				return "space did not pause"
			}
			return ""
		}},
		{"p", "pause", func(m Model) string {
			if m.paused || f.paused {
				return "p did not resume"
			}
			return ""
		}},
		{"+", "rate", func(m Model) string {
			if m.rate != testRates[testRate+1] {
				return "+ did not raise the rate"
			}
			return ""
		}},
		{"-", "rate", func(m Model) string {
			if m.rate != testRates[testRate] {
				return "- did not lower the rate"
			}
			return ""
		}},
		{"f", "profile", func(m Model) string {
			if m.profile.Name != testProfiles[1].Name {
				return "f did not move to the next profile"
			}
			return ""
		}},
		{"b", "burst", func(m Model) string {
			if m.notice != "burst sent" {
				return "b's result not shown"
			}
			return ""
		}},
		{"e", "edited", nil},
		{"u", "clerks", func(m Model) string {
			if m.notice != "two clerks" || m.busy != "" {
				return fmt.Sprintf("u's notice %q, busy %q", m.notice, m.busy)
			}
			if told, _ := m.Side(Left).Told(m.now); told.Outcome != Harmed || told.Lines[0] != "LOST UPDATE: A's limit put back" {
				return fmt.Sprintf("u's outcome not on the left: %+v", told)
			}
			return ""
		}},
		{"i", "invoice", func(m Model) string {
			if told, _ := m.Side(Right).Told(m.now); told.Outcome != Held || told.Lines[0] != "invoice INV-4201 paid once" {
				return fmt.Sprintf("i's outcome not on the right: %+v", told)
			}
			return ""
		}},
		{"c", "crash", func(m Model) string {
			if m.busy != "" {
				return "still busy after the crash finished"
			}
			return ""
		}},
		{"s", "switch", func(m Model) string {
			if m.right != (Choice{Stage: 0}) {
				return "s did not wrap from stage 6 to stage 0: " + m.right.String()
			}
			return ""
		}},
		{"y", "switch", func(m Model) string {
			if m.right != (Choice{Stage: 0, Yours: true}) {
				return "y did not switch to your code: " + m.right.String()
			}
			return ""
		}},
	}
	for _, s := range steps {
		f.calls = nil
		var cmd tea.Cmd
		m, cmd = update(t, m, press(s.press))
		if cmd == nil || len(f.calls) != 1 || f.calls[0] != s.call {
			t.Fatalf("key press %q: calls %v, want [%s]", s.press, f.calls, s.call)
		}
		if s.check != nil {
			if problem := s.check(m); problem != "" {
				t.Errorf("key press %q: %s", s.press, problem)
			}
		}
	}
	m, _ = update(t, m, press("?"))
	if !m.showHelp || !strings.Contains(ansi.Strip(m.Render()), "closes this page") {
		t.Errorf("? did not open the help page")
	}
	_, cmd := m.Update(press("q"))
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Errorf("q did not quit")
	}
}

func TestModel_AFailedSwitchKeepsTheStageAndSaysWhy(t *testing.T) {
	f := &fakeControls{failNext: errors.New("stages/stage6 does not compile")}
	m := demoModel(f)
	m, _ = update(t, m, press("y"))
	if m.right != (Choice{Stage: 6}) {
		t.Errorf("right = %v after a failed switch, want stage 6's solution", m.right)
	}
	if !strings.Contains(ansi.Strip(m.Render()), "does not compile") {
		t.Errorf("the build error is not on screen:\n%s", ansi.Strip(m.Render()))
	}
}

// compileError is what a stage that does not compile says: the file, the
// line and the compiler's message, longer than a window is wide.
const compileError = "stages/stage1 does not compile: stages/stage1/claim.go:42:9: undefined: claimKey (go test -c ./stages/stage1)"

// TestModel_ABuildErrorStaysWholeUntilDismissed: the error of your code's
// build is drawn whole, wrapped to the window, and stays there while the
// clock runs, until esc dismisses it or another result replaces it. It was
// cut to "…stages/stage1 does not comp…" in the header and gone in 8 s.
func TestModel_ABuildErrorStaysWholeUntilDismissed(t *testing.T) {
	f := &fakeControls{failNext: errors.New(compileError)}
	m := demoModel(f)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = update(t, m, press("y"))
	m, _ = update(t, m, tickMsg(t0.Add(time.Minute)))
	frame := m.Render()
	if lipgloss.Height(frame) != 24 || boxWidth(frame) > 80 {
		t.Fatalf("the frame is %d lines, %d wide; want 24 lines within 80 columns", lipgloss.Height(frame), boxWidth(frame))
	}
	flat := strings.Join(strings.Fields(ansi.Strip(frame)), " ")
	if !strings.Contains(flat, "stages/stage1/claim.go:42:9: undefined: claimKey") {
		t.Fatalf("a minute later the error is not whole on screen:\n%s", ansi.Strip(frame))
	}
	m, _ = update(t, m, press("esc"))
	if strings.Contains(ansi.Strip(m.Render()), "claimKey") {
		t.Fatalf("esc did not dismiss the error")
	}
	f.failNext = errors.New(compileError)
	m, _ = update(t, m, press("y"))
	m, _ = update(t, m, press("y"))
	if strings.Contains(ansi.Strip(m.Render()), "claimKey") {
		t.Fatalf("a switch that worked did not replace the error")
	}
}

func TestModel_WatchOnlyHasNoTrafficKeys(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	for _, k := range []string{"b", "e", "u", "i", "c", "s", "y", "f", "+", "-"} {
		if _, cmd := m.Update(press(k)); cmd != nil {
			t.Errorf("key %q did something in watch mode", k)
		}
	}
	help := ansi.Strip(m.help.View(m.bindings))
	if strings.Contains(help, "burst") || !strings.Contains(help, "quit") {
		t.Errorf("watch help bar = %q, want quit and no burst", help)
	}
}

// TestModel_KeysFollowTheControlsTheBackEndHas: the story keys and the
// right side's keys work only when the controls have them (found by type
// assertion), and are otherwise off and out of the help; the traffic keys
// work either way.
func TestModel_KeysFollowTheControlsTheBackEndHas(t *testing.T) {
	stories := []string{"b", "e", "u", "i"}
	right := []string{"c", "s", "y"}
	for _, c := range []struct {
		name    string
		has     string
		on, off []string
	}{
		{"traffic only", "", nil, append(stories, right...)},
		{"traffic and stories", "stories", stories, right},
		{"traffic and the right side", "right", right, stories},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range append([]string{"f", "+"}, c.on...) {
				f := &fakeControls{rate: testRate}
				if _, cmd := update(t, demoModel(partial(f, c.has)), press(k)); cmd == nil || len(f.calls) != 1 {
					t.Errorf("key %q did nothing (calls %q)", k, f.calls)
				}
			}
			f := &fakeControls{rate: testRate}
			m := demoModel(partial(f, c.has))
			for _, k := range c.off {
				if _, cmd := m.Update(press(k)); cmd != nil {
					t.Errorf("key %q did something with controls that lack it", k)
				}
			}
			m.help.ShowAll = true
			help := ansi.Strip(m.help.View(m.bindings))
			all := DefaultBindings(true)
			for _, b := range []key.Binding{all.Burst, all.Edited, all.Clerks, all.Invoice, all.Crash, all.Stage, all.Yours} {
				if offered := strings.Contains(help, hint(b)); offered != slices.Contains(c.on, b.Help().Key) {
					t.Errorf("the help offers %q: %v; the controls have it: %v\n%s", hint(b), offered, !offered, help)
				}
			}
			if !strings.Contains(help, "faults") {
				t.Errorf("the help lacks the traffic's keys:\n%s", help)
			}
		})
	}
}

// partial is f with only its traffic controls, and with the stories' or
// the right side's as has says.
func partial(f *fakeControls, has string) TrafficControls {
	type withStories struct {
		TrafficControls
		StoryControls
	}
	type withRight struct {
		TrafficControls
		RightControls
	}
	switch has {
	case "stories":
		return withStories{f, f}
	case "right":
		return withRight{f, f}
	}
	return struct{ TrafficControls }{f}
}

func TestModel_IgnoresAnOldServersEvents(t *testing.T) {
	m := demoModel(&fakeControls{})
	m, _ = update(t, m, SideMsg{Side: Right, Epoch: 2, Title: "stage 3 · solution", Status: "running"})
	m, _ = update(t, m, EventsMsg{Side: Right, Epoch: 1, Received: t0, Events: []events.Event{request("x", 201, false)}})
	if n := m.Side(Right).Counts.Requests; n != 0 {
		t.Errorf("an old epoch's request was counted (%d)", n)
	}
	m, _ = update(t, m, EventsMsg{Side: Right, Epoch: 2, Received: t0, Events: []events.Event{request("x", 201, false)}})
	if n := m.Side(Right).Counts.Requests; n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

// TestModel_IgnoresAnOldServersNews: a crash of the stage just switched
// away from, heard after the switch, neither puts the old stage's title
// back nor starts the new stage's counts again.
func TestModel_IgnoresAnOldServersNews(t *testing.T) {
	m := demoModel(&fakeControls{})
	m.width, m.height = 100, 30
	m, _ = update(t, m, SideMsg{Side: Right, Epoch: 2, Title: "stage 7 · solution", URL: "http://127.0.0.1:40002", Status: "running"})
	m, _ = update(t, m, EventsMsg{Side: Right, Epoch: 2, Received: t0, Events: []events.Event{request("x", 201, false)}})
	m, _ = update(t, m, SideMsg{Side: Right, Epoch: 1, Title: "stage 6 · solution", Status: "down"})
	if got := m.Server(Right); got.Epoch != 2 || got.Status != "running" {
		t.Errorf("after an old epoch's news the right side is %+v, want stage 7 running", got)
	}
	if n := m.Side(Right).Counts.Requests; n != 1 {
		t.Errorf("requests = %d, want 1: an old epoch's news started the counts again", n)
	}
	if v := ansi.Strip(m.Render()); strings.Contains(v, "stage 6") {
		t.Errorf("the old stage's title is back on screen:\n%s", v)
	}
}

// TestModel_ShowsEachSidesStoryForAMinute: a story's outcome is pinned
// at the top of each side's feed, in its side's words, until a minute has
// passed or the server is reset; a story pressed while a stage is
// starting waits.
func TestModel_ShowsEachSidesStoryForAMinute(t *testing.T) {
	m := busyModel(t, 80, 24)
	m, _ = update(t, m, press("u"))
	out := ansi.Strip(m.Render())
	for _, want := range []string{"▶ LOST UPDATE: A's limit put back", "  what happened on the left", "▶ both clerks' changes kept", "  what happened on the right"} {
		if !strings.Contains(out, want) {
			t.Errorf("the view lacks %q:\n%s", want, out)
		}
	}
	m, _ = update(t, m, tickMsg(t0.Add(StoryShown-time.Second)))
	m, _ = update(t, m, EventsMsg{Side: Right, Epoch: 1, Received: t0, Events: []events.Event{event(events.KindReset, t0, struct{}{})}})
	out = ansi.Strip(m.Render())
	if !strings.Contains(out, "LOST UPDATE") || strings.Contains(out, "changes kept") {
		t.Errorf("after the right side's reset, want the left's story only:\n%s", out)
	}
	m, _ = update(t, m, tickMsg(t0.Add(StoryShown)))
	if out := ansi.Strip(m.Render()); strings.Contains(out, "LOST UPDATE") {
		t.Errorf("the story is still shown a minute later:\n%s", out)
	}

	m.busy = "starting stage 7 · your code"
	if _, cmd := m.Update(press("i")); cmd != nil {
		t.Error("i played a story while a stage was starting")
	}
}

// busyModel is a demo model with traffic on both sides: doubles on the
// left, replays and keys on the right.
func busyModel(t *testing.T, width, height int) Model {
	m := demoModel(&fakeControls{})
	m.started = t0.Add(-83 * time.Second)
	msgs := []tea.Msg{
		tea.WindowSizeMsg{Width: width, Height: height},
		SideMsg{Side: Left, Epoch: 1, Title: "stage 0 · naive", URL: "http://127.0.0.1:40001", Status: "running"},
		SideMsg{Side: Right, Epoch: 1, Title: "stage 6 · solution", URL: "http://127.0.0.1:40002", Status: "running"},
	}
	var left, right []events.Event
	for i := range 12 {
		op := "c0.op-0" + string(rune('a'+i))
		at := t0.Add(time.Duration(i-12) * time.Second)
		ex := event(events.KindExecution, at, bank.Execution{Op: op, Kind: "transfer", Amount: 120_000, Count: 1})
		rq := event(events.KindRequest, at, events.Request{Method: "POST", Path: "/transfers", Status: 201, Op: op})
		left = append(left, ex, rq)
		right = append(right, ex, rq,
			event(events.KindKey, at, events.Key{RowID: int64(i + 1), Row: map[string]any{"key": "c0-7f3a9e" + string(rune('a'+i)), "state": "completed"}}))
		if i%3 == 0 {
			dbl := event(events.KindExecution, at, bank.Execution{Op: op, Kind: "transfer", Amount: 120_000, Count: 2})
			left = append(left, dbl, rq)
			rp := event(events.KindRequest, at, events.Request{Method: "POST", Path: "/transfers", Status: 201, Op: op, Replayed: true})
			right = append(right, rp)
		}
	}
	right = append(right, event(events.KindRequest, t0, events.Request{Method: "POST", Path: "/deposits", Status: 409, Type: "/problems/request-in-progress", Op: "c0.op-0z"}))
	msgs = append(msgs,
		EventsMsg{Side: Left, Epoch: 1, Received: t0, Events: left},
		EventsMsg{Side: Right, Epoch: 1, Received: t0, Events: right},
	)
	accounts := []bank.Balance{
		{ID: "acc_7hq2kd4m", Customer: "cus_a", Balance: 9_520_000, Opening: 10_000_000},
		{ID: "acc_p3x8wz2n", Customer: "cus_b", Balance: 10_480_000, Opening: 10_000_000},
	}
	for range 2 {
		for side := range 2 {
			msgs = append(msgs, StateMsg{Side: side, Epoch: 1, Polled: t0.Add(time.Second), State: labctl.State{Accounts: accounts}})
		}
	}
	msgs = append(msgs, tickMsg(t0))
	for _, msg := range msgs {
		m, _ = update(t, m, msg)
	}
	return m
}

// TestModel_TheBigCountersLabelsNeverRunTogether: on a window under 80
// columns the panes are too narrow for "DOUBLE TRANSFERS" and a space
// before "LOST TRANSFERS"; the labels read as two words at every width
// that shows the big digits.
func TestModel_TheBigCountersLabelsNeverRunTogether(t *testing.T) {
	for width := 60; width <= 100; width++ {
		out := ansi.Strip(busyModel(t, width, 24).Render())
		for _, line := range strings.Split(out, "\n") {
			for _, pane := range strings.Split(strings.Trim(line, "│"), "││") {
				if !strings.HasPrefix(pane, "DOUBLE") {
					continue
				}
				if strings.Contains(pane, "TRANSFERSLOST") || !strings.Contains(pane, " LOST") {
					t.Errorf("at %d columns the labels run together: %q", width, pane)
				}
			}
		}
	}
}

func TestModel_FitsTheWindowAtEverySize(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {100, 30}, {72, 20}, {60, 16}, {48, 12}, {40, 8}, {39, 20}, {30, 6}, {20, 3}} {
		m := busyModel(t, size[0], size[1])
		for _, help := range []bool{false, true} {
			m.showHelp = help
			out := m.Render()
			lines := strings.Split(out, "\n")
			if len(lines) > size[1] {
				t.Errorf("%dx%d help=%v: %d lines", size[0], size[1], help, len(lines))
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w > size[0] {
					t.Errorf("%dx%d help=%v: line %d is %d wide: %q", size[0], size[1], help, i, w, ansi.Strip(l))
				}
			}
			if !help && !strings.Contains(ansi.Strip(out), "naive") {
				t.Errorf("%dx%d: the naive side is not named", size[0], size[1])
			}
		}
	}
}

// TestModel_HelpPageScrollsOnASmallWindow: at 60×18 the help page's
// first frame offers every key press, and scrolling down reaches every
// line that explains them and the colors, in a box that fits the window
// and keeps its width; scrolling up comes back. The page that dropped
// sections until it fit showed, at this size, one line cut short.
func TestModel_HelpPageScrollsOnASmallWindow(t *testing.T) {
	const width, height = 60, 18
	m := busyModel(t, width, height)
	m, _ = update(t, m, press("?"))
	frame := func(m Model) string {
		out := m.Render()
		lines := strings.Split(out, "\n")
		if len(lines) > height {
			t.Errorf("%d lines on a window %d high", len(lines), height)
		}
		for _, l := range lines {
			if w := lipgloss.Width(l); w > width {
				t.Errorf("a line %d wide: %q", w, ansi.Strip(l))
			}
		}
		return ansi.Strip(out)
	}
	first := frame(m)
	for _, b := range m.bindings.FullHelp() {
		for _, k := range b {
			if k.Enabled() && !strings.Contains(first, hint(k)) {
				t.Errorf("the first frame does not offer %q:\n%s", hint(k), first)
			}
		}
	}
	if !strings.Contains(first, "scroll") || !strings.Contains(first, "closes this page") {
		t.Errorf("the first frame does not say how to scroll and close:\n%s", first)
	}
	seen := first
	last := first
	for range 60 {
		m, _ = update(t, m, tea.KeyPressMsg{Code: tea.KeyDown})
		last = frame(m)
		seen += last
	}
	want := []string{"Σ ✓ balances", "LOST TRANSFERS", "422 same key", "▶ a story's outcome  † the last crash",
		"↺N  requests", "409 N duplicates", "4xx N other", "refusals (400, 412, 422)", "re-run after retention  ops", "moved twice ₩ · created ₩  money",
		"outbox N to post, N posted  stage 9's", "⚠\u00a0dead\u00a0letter one it refused"}
	if StoryShown != time.Minute || CrashShown != time.Minute {
		t.Errorf("the help page says a story and a crash stay pinned a minute; they stay %v and %v", StoryShown, CrashShown)
	}
	for _, l := range m.bindings.Explained() {
		want = append(want, l[:3])
	}
	for _, w := range want {
		if !strings.Contains(seen, w) {
			t.Errorf("scrolling never shows %q:\n%s", w, seen)
		}
	}
	if boxWidth(first) != boxWidth(last) {
		t.Errorf("the box is %d wide at the top and %d at the bottom", boxWidth(first), boxWidth(last))
	}
	m, _ = update(t, m, tea.KeyPressMsg{Code: tea.KeyUp})
	if frame(m) == last {
		t.Errorf("↑ after scrolling to the end did not scroll up")
	}
	m, _ = update(t, m, press("?"))
	m, _ = update(t, m, press("?"))
	if frame(m) != first {
		t.Errorf("the help page opened again does not start at its top")
	}
}

// boxWidth is the width of the help page's box: its top border.
func boxWidth(frame string) int {
	for _, l := range strings.Split(frame, "\n") {
		if strings.Contains(l, "╭") {
			return lipgloss.Width(strings.TrimSpace(l))
		}
	}
	return 0
}

func TestModel_ShowsDoublesOnTheLeftAndNoneOnTheRight(t *testing.T) {
	m := busyModel(t, 80, 24)
	if l, r := m.Side(Left).Counts.Doubles, m.Side(Right).Counts.Doubles; l != 4 || r != 0 {
		t.Fatalf("doubles left %d right %d, want 4 and 0", l, r)
	}
	out := ansi.Strip(m.Render())
	for _, want := range []string{"DOUBLE TRANSFERS", "LOST TRANSFERS", " DOUBLE ", "↺ replay", "completed", "409 dp request in progress c0.op-0z"} {
		if !strings.Contains(out, want) {
			t.Errorf("the 80x24 view lacks %q:\n%s", want, out)
		}
	}
}

func TestModel_AFrozenWatchKeepsCounting(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m.frozen = true
	m, _ = update(t, m, press("space"))
	still := m.Render()
	m, _ = update(t, m, EventsMsg{Received: t0, Events: []events.Event{request("x", 201, false)}})
	if m.Render() != still {
		t.Errorf("the frozen picture changed")
	}
	if !strings.Contains(ansi.Strip(still), "FROZEN") {
		t.Errorf("the frozen picture does not say so")
	}
	m, _ = update(t, m, press("space"))
	if n := m.Side(0).Counts.Requests; n != 1 || m.Render() == still {
		t.Errorf("after thawing: %d requests counted, picture unchanged %v", n, m.Render() == still)
	}
}

// TestModel_AWatchOfReplicasShowsWhichAnswered: requests from the merged
// stream of three replicas are marked in the feed with the replica that
// answered, and the traffic line counts each replica's answers; a watch
// of one server shows neither. A pane that dropped the replica, or
// counted every request as the first replica's, fails.
func TestModel_AWatchOfReplicasShowsWhichAnswered(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	var evs []events.Event
	for i, replica := range []int{2, 1, 2, 3, 2} {
		ev := request(fmt.Sprintf("op-%d", i), 201, false)
		ev.Replica = replica
		evs = append(evs, ev)
	}
	m, _ = update(t, m, EventsMsg{Received: t0, Events: evs})
	out := ansi.Strip(m.Render())
	if !strings.Contains(out, "r3 201 tr op-3") || !strings.Contains(out, "r2 201 tr op-4") {
		t.Errorf("the feed does not say which replica answered:\n%s", out)
	}
	if !strings.Contains(out, "answered by r1 1 r2 3 r3 1") {
		t.Errorf("the traffic line does not count each replica's answers:\n%s", out)
	}
	one := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	one, _ = update(t, one, tea.WindowSizeMsg{Width: 120, Height: 40})
	one, _ = update(t, one, EventsMsg{Received: t0, Events: []events.Event{request("op-1", 201, false)}})
	if out := ansi.Strip(one.Render()); strings.Contains(out, "r1 ") || strings.Contains(out, "answered by") || !strings.Contains(out, "201 tr op-1") {
		t.Errorf("one server's watch shows replicas:\n%s", out)
	}
}

// TestModel_ShowsTheOutboxDraining: a stage 9 server's outbox, as the
// state polls show it, is on the traffic line: rows still to post, then
// none. A server without an outbox shows no such line.
func TestModel_ShowsTheOutboxDraining(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 140, Height: 40})
	if out := ansi.Strip(m.Render()); strings.Contains(out, "outbox") {
		t.Fatalf("a server without an outbox shows one:\n%s", out)
	}
	for _, o := range []bank.OutboxCounts{{Pending: 3, Sent: 4}, {Pending: 0, Sent: 7}} {
		m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{Outbox: o}})
		want := fmt.Sprintf("outbox %d to post, %d posted", o.Pending, o.Sent)
		out := ansi.Strip(m.Render())
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
		if strings.Contains(out, "dead letter") {
			t.Errorf("dead letters shown for an outbox with none:\n%s", out)
		}
	}
}

// TestModel_CountsDeadLetters: postings the core refused for good are
// counted at the start of the traffic line, even once nothing is left to
// post, with the oldest one's transfer and the core's answer: they wait
// for a person, and a pane that showed only "0 to post", or cut the end
// of a long line off, would hide them.
func TestModel_CountsDeadLetters(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 160, Height: 40})
	oldest := bank.DeadLetter{TransferID: "tr_old", Status: 422, Answer: `{"type":"/problems/posting-rejected","status":422}`}
	newer := bank.DeadLetter{TransferID: "tr_new", Status: 400, Answer: "not a problem"}
	for _, tc := range []struct {
		dead    int64
		letters []bank.DeadLetter
		want    string
	}{
		{2, []bank.DeadLetter{oldest, newer}, "⚠ 2 dead letters, oldest tr_old: 422 posting-rejected · req "},
		{1, []bank.DeadLetter{newer}, "⚠ 1 dead letter, oldest tr_new: 400 · req "},
		{1, nil, "⚠ 1 dead letter · req "},
	} {
		m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{Outbox: bank.OutboxCounts{Sent: 9, Dead: tc.dead}, DeadLetters: tc.letters}})
		out := ansi.Strip(m.Render())
		if !strings.Contains(out, tc.want) || !strings.Contains(out, "outbox 0 to post, 9 posted") || strings.Contains(out, "1 dead letters") || (tc.letters == nil && strings.Contains(out, "oldest")) {
			t.Errorf("%d dead letters: no %q in\n%s", tc.dead, tc.want, out)
		}
	}
}

// On a narrow pane (two side by side on a classroom's terminal) the
// outbox's figures take a line of their own rather than be cut off the end
// of the traffic line.
func TestModel_ANarrowPaneShowsTheOutboxOnALineOfItsOwn(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 50, Height: 30})
	var evs []events.Event
	for i := range 1200 {
		evs = append(evs, request(fmt.Sprintf("op-%d", i), 201, i%3 == 0))
	}
	m, _ = update(t, m, EventsMsg{Received: t0, Events: evs})
	m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{Outbox: bank.OutboxCounts{Pending: 1234, Sent: 56789}}})
	out := ansi.Strip(m.Render())
	if !strings.Contains(out, "outbox 1234 to post, 56.8k posted") {
		t.Errorf("the outbox's figures are not all shown on a pane 50 wide:\n%s", out)
	}
	if !strings.Contains(out, "5xx 0") {
		t.Errorf("the traffic line is cut:\n%s", out)
	}
}

// On a window too narrow for the whole help bar (a projector's small
// terminal) the bar still ends with ? help, which lists every key, and
// q quit: the keys that drive the traffic give way first.
// TestModel_ANarrowHelpBarKeepsTheStageKey: s moves the class from stage
// to stage, and the script pauses the traffic to point at the feed; a
// paused demo's bar ("space resume") is a column wider, and at 80 columns
// it dropped s stage while it kept c crash.
func TestModel_ANarrowHelpBarKeepsTheStageKey(t *testing.T) {
	for w := 40; w <= 100; w++ {
		for _, paused := range []bool{false, true} {
			m, _ := update(t, demoModel(&fakeControls{rate: testRate}), tea.WindowSizeMsg{Width: w, Height: 24})
			if paused {
				m, _ = update(t, m, press("space"))
			}
			lines := strings.Split(ansi.Strip(m.Render()), "\n")
			if bar := lines[len(lines)-1]; !strings.Contains(bar, "s stage") {
				t.Errorf("help bar %d wide, paused %v: %q", w, paused, bar)
			}
		}
	}
}

func TestModel_ANarrowHelpBarKeepsHelpAndQuit(t *testing.T) {
	for _, w := range []int{40, 60, 79} {
		m, _ := update(t, demoModel(&fakeControls{rate: testRate}), tea.WindowSizeMsg{Width: w, Height: 24})
		lines := strings.Split(ansi.Strip(m.Render()), "\n")
		bar := strings.TrimRight(lines[len(lines)-1], " ")
		if !strings.HasSuffix(bar, "? help • q quit") || !strings.HasPrefix(bar, "space pause") || lipgloss.Width(bar) > w {
			t.Errorf("help bar %d wide: %q", w, bar)
		}
	}
}

// The outbox's figures take a line of their own or not by the pane's width
// and the traffic's counts, never by how many rows wait to be posted: that
// number comes and goes at every poll, and a pane whose rows jumped up and
// down with it would jitter in front of the class.
func TestPane_TheOutboxLineDoesNotComeAndGoWithThePending(t *testing.T) {
	s := NewSide()
	for i := range 1500 {
		s.Ingest(request(fmt.Sprintf("op-%d", i), 201, i%5 == 0), t0)
	}
	for w := 40; w <= 140; w++ {
		rows := map[int]bool{}
		for _, pending := range []int64{0, 7, 12, 345, 99999} {
			s.Outbox = bank.OutboxCounts{Pending: pending, Sent: 1200}
			p := pane{side: s, st: DefaultStyles()}
			rows[len(p.statsLines(w))] = true
		}
		if len(rows) > 1 {
			t.Errorf("a pane %d wide draws the traffic and the outbox on 1 or 2 lines as the rows to post change", w)
		}
	}
}

// Side by side, a row of one pane faces the same row of the other: when
// stage 9's outbox takes a line of its own on a narrow pane, the other
// pane leaves that line blank, so that the sparklines, the feeds and the
// big counters still line up for a class comparing them.
func TestModel_ThePanesRowsLineUpWhenOneHasAnOutboxLine(t *testing.T) {
	m := busyModel(t, 80, 24)
	m, _ = update(t, m, StateMsg{Side: Right, Epoch: 1, Polled: t0.Add(2 * time.Second), State: labctl.State{Outbox: bank.OutboxCounts{Pending: 2, Sent: 133}}})
	out := ansi.Strip(m.Render())
	if !strings.Contains(out, "outbox 2 to post, 133 posted") {
		t.Fatalf("no outbox line on the right:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "req/s"); i >= 0 && strings.Count(l, "req/s") != 2 {
			t.Fatalf("the sparklines are not on one row:\n%s", out)
		}
	}
}

// TestModel_AWatchShowsWhatWasThereBeforeAttach: lab dash attached to a
// server with a replayed day behind it says so, and neither calls the day
// unreported executions nor says no keys are stored.
func TestModel_AWatchShowsWhatWasThereBeforeAttach(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m.frozen = true
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 30})
	for range 2 {
		m, _ = update(t, m, StateMsg{Polled: t0, State: history(0)})
	}
	got := ansi.Strip(m.Render())
	for _, want := range []string{"before attach: 4 executions, 1 doubled, 3 keys", "✓ conserved since attach · ✗ at attach: 1 doubled"} {
		if !strings.Contains(got, want) {
			t.Errorf("the pane does not say %q:\n%s", want, got)
		}
	}
	for _, wrong := range []string{"unreported", "no idempotency keys stored"} {
		if strings.Contains(got, wrong) {
			t.Errorf("the pane says %q:\n%s", wrong, got)
		}
	}
}

// TestModel_TheHelpPageTakesOnlyItsOwnKeys: while the help page is up, a
// key that drives the demo does nothing behind it (s changed the stage and
// f the faults out of sight, esc cleared the failure line the page
// hides); scroll, close and quit still act.
func TestModel_TheHelpPageTakesOnlyItsOwnKeys(t *testing.T) {
	f := &fakeControls{rate: testRate}
	m := demoModel(f)
	m.failure = "stages/stage1/claim.go:42:9: undefined: x"
	m, _ = update(t, m, press("?"))
	for _, k := range []string{"space", "p", "+", "-", "f", "b", "e", "u", "i", "c", "s", "y", "esc"} {
		var cmd tea.Cmd
		m, cmd = update(t, m, press(k))
		if cmd != nil || len(f.calls) != 0 || m.paused || !m.showHelp || m.failure == "" {
			t.Fatalf("%q behind the help page: command %v, calls %v, paused %v, help shown %v, failure line %q", k, cmd != nil, f.calls, m.paused, m.showHelp, m.failure)
		}
	}
	if m.right != (Choice{Stage: 6}) || m.profile != testProfiles[0] {
		t.Fatalf("behind the help page the right side became %s and the faults %s", m.right, m.profile.Name)
	}
	if _, cmd := m.Update(press("q")); cmd == nil {
		t.Fatal("q does not quit from the help page")
	}
	m, _ = update(t, m, press("?"))
	if m.showHelp {
		t.Fatal("? did not close the help page")
	}
	if update(t, m, press("s")); len(f.calls) != 1 {
		t.Fatalf("s after the help page closed: calls %v", f.calls)
	}
}

// TestModel_SaysWhichEngine: the header names the database engine the
// servers run on, as their state says, next to what it watches.
func TestModel_SaysWhichEngine(t *testing.T) {
	for engine, want := range map[string]string{"postgres": "PostgreSQL", "sqlite": "SQLite"} {
		m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
		m.frozen = true
		m, _ = update(t, m, SideMsg{Title: "lab server", URL: "http://127.0.0.1:8080", Status: "running"})
		m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{Engine: labdb.Engine(engine)}})
		header := strings.SplitN(ansi.Strip(m.Render()), "\n", 2)[0]
		if !strings.Contains(header, "http://127.0.0.1:8080 · "+want) {
			t.Errorf("on %s the header is %q, want the URL and %s", engine, header, want)
		}
		d := demoModel(&fakeControls{rate: testRate})
		d, _ = update(t, d, StateMsg{Side: Right, Polled: t0, State: labctl.State{Engine: labdb.Engine(engine)}})
		if header := strings.SplitN(ansi.Strip(d.Render()), "\n", 2)[0]; !strings.Contains(header, "same faults · "+want+" · ") {
			t.Errorf("on %s the demo's header is %q, want %s", engine, header, want)
		}
	}
}

// TestModel_SaysStartingForAsLongAsTheSwitchTakes: a switch to your code
// builds it, which can take longer than a notice lasts; the header says
// "starting …" until the switch is done. The notice was gone after 8 s
// while the build went on, and the class watched a screen that said
// nothing.
func TestModel_SaysStartingForAsLongAsTheSwitchTakes(t *testing.T) {
	m := demoModel(&fakeControls{})
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	next, cmd := m.Update(press("y"))
	m = next.(Model)
	if cmd == nil {
		t.Fatal("y started no switch")
	}
	const starting = "starting stage 6 · your code…"
	m, _ = update(t, m, tickMsg(t0.Add(30*time.Second)))
	if header := ansi.Strip(strings.SplitN(m.Render(), "\n", 2)[0]); !strings.Contains(header, starting) {
		t.Errorf("30 s into the switch the header says %q, want %q", header, starting)
	}
	m, _ = update(t, m, cmd())
	m, _ = update(t, m, tickMsg(t0.Add(60*time.Second)))
	if header := ansi.Strip(strings.SplitN(m.Render(), "\n", 2)[0]); strings.Contains(header, "starting") {
		t.Errorf("the switch is done and the header still says %q", header)
	}
}

// TestPane_ACrashNoteIsReadWholeOnANarrowPane: what a crash does to the
// requests under way is a sentence the instructor reads to the class; on
// the 38 columns of an 80-column window's pane it is wrapped, not cut to
// "── killed -9: requests under way d…".
func TestPane_ACrashNoteIsReadWholeOnANarrowPane(t *testing.T) {
	const note = "killed -9: requests under way die uncommitted; their keys answer 409 until the lease ends"
	s := NewSide()
	s.Ingest(request("op-1", 201, false), t0)
	s.Note(t0, note)
	s.Ingest(request("op-2", 201, false), t0)
	p := pane{side: s, st: DefaultStyles(), now: t0}
	p.SetSize(40, 24)
	out := ansi.Strip(p.Render())
	rows := strings.Split(out, "\n")
	var text []string // the note's rows: from its "──" to the next request
	for i, l := range rows {
		l = strings.Trim(l, "│ ")
		if !strings.HasPrefix(l, "──") {
			continue
		}
		text = append(text, strings.TrimSpace(strings.TrimPrefix(l, "──")))
		for _, next := range rows[i+1:] {
			next = strings.Trim(next, "│ ")
			if strings.HasPrefix(next, "201") {
				break
			}
			text = append(text, next)
		}
		break
	}
	if got := strings.Join(text, " "); !strings.Contains(got, note) {
		t.Errorf("the crash note reads %q, want %q whole:\n%s", got, note, out)
	}
}

// TestModel_TheHeaderGivesAKeyPressesNoticeRoomAt80Columns: on an
// 80-column window the demo's motto made way for nothing, and what e
// had just sent read "clerk: c0.op-282 again, ₩…". The notice is shown
// whole there, and the motto comes back where both fit.
func TestModel_TheHeaderGivesAKeyPressesNoticeRoomAt80Columns(t *testing.T) {
	const notice = "clerk: c0.op-282 again, ₩1.2M → ₩1.3M"
	for _, w := range []int{80, 160} {
		m := demoModel(&fakeControls{})
		m, _ = update(t, m, tea.WindowSizeMsg{Width: w, Height: 24})
		m, _ = update(t, m, NoticeMsg{Text: notice})
		header := ansi.Strip(strings.SplitN(m.Render(), "\n", 2)[0])
		if !strings.Contains(header, notice) {
			t.Errorf("%d columns: the header reads %q, want the notice %q whole", w, header, notice)
		}
		if w == 160 && !strings.Contains(header, "same traffic, same faults") {
			t.Errorf("%d columns: the header lost its motto: %q", w, header)
		}
	}
}

// TestModel_ADeadLetterLeavesTheTrafficCountsWhole: lab dash on an
// 80-column terminal drew "⚠ 1 dead letter, oldest tr_…: 422
// posting-rejected · req 1 ok …" and cut the traffic's counts; the dead
// letter then takes a line of its own, above them.
func TestModel_ADeadLetterLeavesTheTrafficCountsWhole(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	letter := bank.DeadLetter{TransferID: "tr_cg7ylbnu4lnoyrpt", Status: 422, Answer: `{"type":"/problems/posting-rejected","status":422}`}
	m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{Outbox: bank.OutboxCounts{Sent: 1, Dead: 1}, DeadLetters: []bank.DeadLetter{letter}}})
	out := ansi.Strip(m.Render())
	for _, want := range []string{"⚠ 1 dead letter, oldest tr_cg7ylbnu4lnoyrpt: 422 posting-rejected", "5xx 0", "outbox 0 to post, 1 posted"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q on 80 columns:\n%s", want, out)
		}
	}
}

// TestModel_SaysTheServerRefusedTheTokenRatherThanUnreachable: lab serve
// started again draws a new admin token, and a dashboard left attached
// said "unreachable" of a server that answered every poll with 401. It
// says the token was refused, and why, and "unreachable" only of a
// server that does not answer.
func TestModel_SaysTheServerRefusedTheTokenRatherThanUnreachable(t *testing.T) {
	m := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	m.frozen = true
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	refused := &labclient.Error{Method: "GET", Path: "/lab/state", Status: 401}
	m, _ = update(t, m, StateMsg{Polled: t0, Err: refused})
	out := ansi.Strip(m.Render())
	if !strings.Contains(out, "admin token refused") || strings.Contains(out, "unreachable") {
		t.Errorf("a server answering 401 is drawn as:\n%s", out)
	}
	if !strings.Contains(out, "refused the admin token") {
		t.Errorf("the header does not say why:\n%s", out)
	}
	m, _ = update(t, m, StateMsg{Polled: t0, Err: errors.New("dial tcp 127.0.0.1:8080: connect: connection refused")})
	if out := ansi.Strip(m.Render()); !strings.Contains(out, "unreachable") {
		t.Errorf("a server that does not answer is drawn as:\n%s", out)
	}
	m, _ = update(t, m, StateMsg{Polled: t0, State: labctl.State{}})
	if out := ansi.Strip(m.Render()); strings.Contains(out, "unreachable") || strings.Contains(out, "token refused") {
		t.Errorf("the server answers again and is still drawn as:\n%s", out)
	}
}

// TestPane_TheTrafficLineCutsNoneOfItsParts: lab dash watching three
// replicas on an 80-column terminal drew "req 391 ok 375 ↺72 409 0 4xx
// 16 5xx 0 · 3 re-run after retention · answered b…", and the replicas'
// counts, the point of that demo, were cut off. Each part that does not
// fit goes on a line of its own.
func TestPane_TheTrafficLineCutsNoneOfItsParts(t *testing.T) {
	s := NewSide()
	for i := range 391 {
		ev := request(fmt.Sprintf("op-%d", i), 201, i%5 == 0)
		ev.Replica = 1 + i%3
		s.Ingest(ev, t0)
	}
	s.Counts.AfterRetention = 3
	s.Outbox = bank.OutboxCounts{Sent: 273, Dead: 1}
	for _, width := range []int{38, 78, 158} {
		p := pane{side: s, st: DefaultStyles()}
		lines := p.statsLines(width)
		for _, l := range lines {
			if lipgloss.Width(l) > width {
				t.Errorf("%d wide: the line %q is cut", width, ansi.Strip(l))
			}
		}
		all := ansi.Strip(strings.Join(lines, "\n"))
		for _, want := range []string{"req 391", "5xx 0", "3 re-run after retention", "answered by r1 131 r2 130 r3 130", "outbox 0 to post, 273 posted", "⚠ 1 dead letter"} {
			if !strings.Contains(all, want) {
				t.Errorf("%d wide: no %q in\n%s", width, want, all)
			}
		}
	}
}

// TestPane_AClasssThousandsOfRequestsFitANarrowPane: ten minutes at ten
// operations a second are thousands of requests, and on the 38 columns
// of an 80-column demo's pane "req 6100 ok 6020 ↺1220 409 20 4xx 50 5xx…"
// lost the 5xx. The refused answers then go on a line of their own.
func TestPane_AClasssThousandsOfRequestsFitANarrowPane(t *testing.T) {
	s := NewSide()
	for i := range 6100 {
		status := 201
		switch i % 100 {
		case 1:
			status = 409
		case 2:
			status = 422
		case 3:
			status = 503
		}
		s.Ingest(request(fmt.Sprintf("op-%d", i), status, i%5 == 0), t0)
	}
	p := pane{side: s, st: DefaultStyles()}
	lines := p.statsLines(38)
	for _, l := range lines {
		if lipgloss.Width(l) > 38 {
			t.Errorf("the line %q is cut at 38 columns", ansi.Strip(l))
		}
	}
	all := ansi.Strip(strings.Join(lines, "\n"))
	for _, want := range []string{"req 6100", "409 61", "4xx 61", "5xx 61"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
	if wide := ansi.Strip(strings.Join(p.statsLines(158), "\n")); strings.Count(wide, "\n") != 0 {
		t.Errorf("a wide pane splits the counts:\n%s", wide)
	}
}

// TestModel_AFailedSwitchNoLongerSaysStarting: your code that does not
// compile fails its switch at once, and the header went on saying
// "starting stage 6 · your code…" for eight seconds above the build
// error, with the traffic running again.
func TestModel_AFailedSwitchNoLongerSaysStarting(t *testing.T) {
	m := demoModel(&fakeControls{failNext: errors.New(compileError)})
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = update(t, m, press("y"))
	out := ansi.Strip(m.Render())
	if header := strings.SplitN(out, "\n", 2)[0]; strings.Contains(header, "starting") {
		t.Errorf("the switch failed and the header says %q", header)
	}
	if !strings.Contains(out, "does not compile") {
		t.Errorf("the build error is not on screen:\n%s", out)
	}
}

// TestModel_APausedFaultLineFitsIn80Columns: the script pauses the
// traffic to point at the feed, and on 80 columns the PAUSED badge cut
// the profile's description to "1 in 4 answers lost; the client ret…".
// The word "faults" gives way first.
func TestModel_APausedFaultLineFitsIn80Columns(t *testing.T) {
	m := demoModel(&fakeControls{rate: testRate})
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = update(t, m, press("space"))
	lines := strings.Split(ansi.Strip(m.Render()), "\n")
	line := lines[len(lines)-2]
	if !strings.Contains(line, "PAUSED") || !strings.Contains(line, testProfiles[0].About) {
		t.Errorf("the paused fault line reads %q, want PAUSED and %q whole", line, testProfiles[0].About)
	}
	m, _ = update(t, m, tea.WindowSizeMsg{Width: 160, Height: 24})
	lines = strings.Split(ansi.Strip(m.Render()), "\n")
	if line := lines[len(lines)-2]; !strings.Contains(line, "faults "+testProfiles[0].Name) {
		t.Errorf("a wide window's fault line reads %q, want the word faults", line)
	}
}

// TestPane_BeforeAttachSaysOneKeyInTheSingular: a server with one
// transfer behind it read "before attach: 0 executions, 0 doubled, 1
// keys" on the instructor's screen.
func TestPane_BeforeAttachSaysOneKeyInTheSingular(t *testing.T) {
	p := pane{st: DefaultStyles()}
	for _, tc := range []struct {
		b    Attach
		want string
	}{
		{Attach{Executions: 1, Keys: 1}, "before attach: 1 execution, 0 doubled, 1 key"},
		{Attach{Executions: 0, Keys: 1, KeysMore: true}, "before attach: 0 executions, 0 doubled, 1+ keys"},
		{Attach{Executions: 303, Doubles: 3, Keys: 3}, "before attach: 303 executions, 3 doubled, 3 keys"},
	} {
		if got := ansi.Strip(p.beforeLine(tc.b)); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}

// TestPane_TheBalancesSayWhatTheirNumbersAre: on a tall window the money
// check lists the accounts, a balance and how far it moved since the
// opening (acc_7hq2kd4m 9,520,000 -480,000), and read as bare numbers,
// neither in which unit nor what the second one was. A header names them
// and the won, above every account, and on a window with no room for
// the accounts there is no header.
func TestPane_TheBalancesSayWhatTheirNumbersAre(t *testing.T) {
	out := ansi.Strip(busyModel(t, 200, 50).Render())
	lines := strings.Split(out, "\n")
	for _, acc := range []string{"acc_7hq2kd4m", "acc_p3x8wz2n"} {
		if !strings.Contains(out, acc) {
			t.Fatalf("200x50: account %s is not listed:\n%s", acc, out)
		}
	}
	for side := range 2 {
		var above string
		for _, line := range lines {
			panes := strings.Split(strings.Trim(line, "│"), "││")
			if len(panes) != 2 {
				continue
			}
			if strings.HasPrefix(panes[side], "acc_7hq2kd4m") {
				break
			}
			above = panes[side]
		}
		if !strings.HasPrefix(above, "ACCOUNT") || !strings.Contains(above, "BALANCE ₩") || !strings.Contains(above, "SINCE OPENING ₩") {
			t.Errorf("200x50, side %d: the line above the first account does not name the columns and their unit: %q", side, above)
		}
	}
	if small := ansi.Strip(busyModel(t, 80, 24).Render()); strings.Contains(small, "ACCOUNT") {
		t.Errorf("80x24: a header for accounts there is no room for:\n%s", small)
	}
}

// TestAge_ARowNewerThanTheClockIsInMilliseconds: the key table's clock
// moves once a second, and a row made since read "0s" above rows of
// "81ms" and "176ms".
func TestAge_ARowNewerThanTheClockIsInMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{-300 * time.Millisecond, "0ms"}, {81 * time.Millisecond, "81ms"}, {12 * time.Second, "12s"}} {
		if got := Age(tc.d); got != tc.want {
			t.Errorf("Age(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// The notes the demo's back end gives a crash of a solution and of the
// student's code (see dashboard/backend's crashNote).
const (
	solutionCrash = "crashed: requests under way finish, their answers are lost"
	yoursCrash    = "killed -9: requests under way die uncommitted; their keys answer 409 until the lease ends"
)

// crash is what the demo sends of a crash of side's server and its
// restart, followed by n requests a side: the traffic after it.
func crash(t *testing.T, m Model, side int, note string, n int) Model {
	t.Helper()
	title := m.Server(side).Title
	m, _ = update(t, m, SideMsg{Side: side, Epoch: 1, Title: title, Status: "crashed", Note: note})
	m, _ = update(t, m, SideMsg{Side: side, Epoch: 1, Title: title, Status: "running"})
	return traffic(t, m, n)
}

// traffic is n requests on each side, received at the model's now.
func traffic(t *testing.T, m Model, n int) Model {
	t.Helper()
	for side := range 2 {
		var evs []events.Event
		for j := range n {
			evs = append(evs, request(fmt.Sprintf("c0.op-%d-%d", side, j), 201, false))
		}
		m, _ = update(t, m, EventsMsg{Side: side, Epoch: 1, Received: m.now, Events: evs})
	}
	return m
}

// paneText is the text of one side's pane in a frame, its words one
// space apart across its rows: a wrapped sentence reads whole in it.
func paneText(frame string, side int) string {
	var rows []string
	for _, row := range strings.Split(ansi.Strip(frame), "\n") {
		cols := strings.Split(row, "││")
		if len(cols) != 2 {
			continue
		}
		rows = append(rows, strings.Trim(cols[side], "│"))
	}
	return strings.Join(strings.Fields(strings.Join(rows, " ")), " ")
}

// TestModel_TheLastCrashStaysReadableUnderTraffic: under the crashes
// profile at 10 ops/s on 80×24, the feed line that said which kind of
// crash a side had scrolled away in under a second. Each side's last
// crash is read whole seconds later, beside the counters, the money check
// and the key table it must not push off the window, and with the
// requests that followed it; the next crash replaces it, and a minute,
// a reset or another stage takes it away.
func TestModel_TheLastCrashStaysReadableUnderTraffic(t *testing.T) {
	m := busyModel(t, 80, 24)
	m = crash(t, m, Left, solutionCrash, 0)
	m = crash(t, m, Right, yoursCrash, 40) // four seconds of traffic
	m, _ = update(t, m, tickMsg(t0.Add(4*time.Second)))
	frame := m.Render()
	assertFits(t, frame, 80, 24)
	for side, note := range []string{solutionCrash, yoursCrash} {
		text := paneText(frame, side)
		for _, want := range []string{note, "DOUBLE TRANSFERS", "201 tr c0.op-", "Σ ₩", "moved twice"} {
			if !strings.Contains(text, want) {
				t.Errorf("four seconds after the crash the %s pane lacks %q:\n%s", []string{"left", "right"}[side], want, ansi.Strip(frame))
			}
		}
	}
	if !strings.Contains(paneText(frame, Right), "KEY STATE AGE") {
		t.Errorf("the pinned crash pushed the key table off the right pane:\n%s", ansi.Strip(frame))
	}

	// A story pressed now keeps its lines: the crash comes under them.
	m, _ = update(t, m, press("u"))
	frame = m.Render()
	assertFits(t, frame, 80, 24)
	if text := paneText(frame, Left); !strings.Contains(text, "▶ LOST UPDATE: A's limit put back what happened on the left † crashed:") {
		t.Errorf("with a story told, want its lines, then the crash:\n%s", ansi.Strip(frame))
	}

	m = crash(t, m, Right, solutionCrash, 10)
	if text := paneText(m.Render(), Right); strings.Contains(text, "killed -9") || !strings.Contains(text, "† "+solutionCrash) {
		t.Errorf("the next crash did not replace the last one:\n%s", ansi.Strip(m.Render()))
	}

	m, _ = update(t, m, tickMsg(m.now.Add(CrashShown)))
	if text := paneText(m.Render(), Right); strings.Contains(text, "† ") {
		t.Errorf("the crash is still pinned a minute later:\n%s", ansi.Strip(m.Render()))
	}

	m = crash(t, m, Left, solutionCrash, 0)
	m = crash(t, m, Right, yoursCrash, 0)
	m, _ = update(t, m, EventsMsg{Side: Left, Epoch: 1, Received: m.now, Events: []events.Event{event(events.KindReset, m.now, struct{}{})}})
	m, _ = update(t, m, SideMsg{Side: Right, Epoch: 2, Title: "stage 7 · solution", Status: "running"})
	frame = m.Render()
	for side := range 2 {
		if text := paneText(frame, side); strings.Contains(text, "† ") {
			t.Errorf("the %s side's crash outlived its reset or stage switch:\n%s", []string{"left", "right"}[side], ansi.Strip(frame))
		}
	}
}

// assertFits fails when frame is taller or wider than the window.
func assertFits(t *testing.T, frame string, width, height int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) > height {
		t.Errorf("%d lines on a %d-line window", len(lines), height)
	}
	for i, l := range lines {
		if w := lipgloss.Width(l); w > width {
			t.Errorf("line %d is %d wide: %q", i, w, ansi.Strip(l))
		}
	}
}

// TestModel_APinnedCrashTakesOnlyFeedRows: at every size, the last
// crash pinned on both sides leaves every other row where it was (the
// counters, the traffic, the key table, the money check, the footer):
// it takes its rows from the requests of the feed, and the frame still
// fits the window.
func TestModel_APinnedCrashTakesOnlyFeedRows(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {100, 30}, {72, 20}, {60, 16}, {48, 12}, {40, 8}} {
		// The feeds full, so that only what is in them changes.
		m := traffic(t, busyModel(t, size[0], size[1]), FeedSize)
		before := strings.Split(ansi.Strip(m.Render()), "\n")
		m = crash(t, m, Left, solutionCrash, 0)
		m = crash(t, m, Right, yoursCrash, 0)
		frame := m.Render()
		assertFits(t, frame, size[0], size[1])
		after := strings.Split(ansi.Strip(frame), "\n")
		if hasFeed := strings.Contains(strings.Join(before, "\n"), "201 "); hasFeed != strings.Contains(strings.Join(after, "\n"), "† ") {
			t.Errorf("%dx%d: a feed shown=%v, and the crash pinned is not:\n%s", size[0], size[1], hasFeed, strings.Join(after, "\n"))
		}
		for i, row := range before {
			feed := strings.Contains(row, "201 ") || strings.Contains(row, "409 dp") || strings.Contains(row, "waiting for requests")
			if feed || strings.Contains(row, "req/s") || strings.Contains(row, "dbl/s") {
				continue // the feed's rows, and the sparkline that moves with the clock
			}
			if i >= len(after) || after[i] != row {
				t.Errorf("%dx%d: row %d was %q, is %q with a crash pinned", size[0], size[1], i, row, after[min(i, len(after)-1)])
			}
		}
	}
}

// TestPane_ACrashPinnedOnAShortFeedLeavesARowToTheRequests: a feed of
// two rows shows the crash cut to one, and the newest request.
func TestPane_ACrashPinnedOnAShortFeedLeavesARowToTheRequests(t *testing.T) {
	s := NewSide()
	s.Crash(t0, yoursCrash)
	s.Ingest(request("op-1", 409, false), t0)
	p := pane{side: s, st: DefaultStyles(), now: t0}
	p.SetSize(40, 12)
	got := p.feedLines(2, 38)
	want := []string{"† killed -9: requests under way die uncommitted; their keys answer 409 until the lease ends", "409 tr op-1"}
	if len(got) != 2 || ansi.Strip(got[0]) != want[0] || !strings.HasPrefix(ansi.Strip(got[1]), want[1]) {
		t.Errorf("a two-row feed reads %q, want the crash on one row (Render cuts it), then %q", got, want[1])
	}
	if out := ansi.Strip(p.Render()); !strings.Contains(out, "† killed -9: requests under way die u…") {
		t.Errorf("the pane does not cut the crash's row with …:\n%s", out)
	}
}

// TestPane_AClerksReadAndSaveReadApart: the two clerks' story sends
// GETs and PUTs of one account's settings, and the feed showed each as
// "200 accounts/acc_cn63fxga/settings", a read and a save alike, and a
// refused save cut at 80 columns before it said why ("…/settings  p…").
// Each says its method, and why a save was refused comes before the
// account, which a 38-column pane cuts instead.
func TestPane_AClerksReadAndSaveReadApart(t *testing.T) {
	p := pane{st: DefaultStyles()}
	for _, tc := range []struct {
		r    events.Request
		want string
	}{
		{events.Request{Method: "GET", Path: "/accounts/acc_cn63fxga/settings", Status: 200}, "200 GET settings acc_cn63fxga"},
		{events.Request{Method: "PUT", Path: "/accounts/acc_cn63fxga/settings", Status: 200}, "200 PUT settings acc_cn63fxga"},
		{events.Request{Method: "PUT", Path: "/accounts/acc_cn63fxga/settings", Status: 412, Type: "/problems/precondition-failed"},
			"412 PUT settings precondition failed acc_cn63fxga"},
		{events.Request{Method: "POST", Path: "/transfers", Status: 201, Op: "c0.op-1"}, "201 tr c0.op-1"},
	} {
		if got := ansi.Strip(p.feedLine(FeedLine{Request: tc.r})); got != tc.want {
			t.Errorf("%s %s %d: %q, want %q", tc.r.Method, tc.r.Path, tc.r.Status, got, tc.want)
		}
	}
}

// pacedControls is traffic that reports operations held back.
type pacedControls struct {
	fakeControls
	held int64
}

func (p *pacedControls) HeldBack() int64 { return p.held }

// TestModel_TheFaultLineSaysWhenTheServersAreBehind: while the traffic
// holds operations back (the servers answer too slowly for the rate),
// the fault line says so at 80 columns and a notice says what it means,
// once for the episode; a few seconds after the count stops growing the
// line is as before. An instructor who raised the rate on a slow laptop
// saw the counters slow down with nothing on screen saying why.
func TestModel_TheFaultLineSaysWhenTheServersAreBehind(t *testing.T) {
	p := &pacedControls{fakeControls: fakeControls{rate: testRate}}
	m := demoModel(p)
	if m.pace == nil {
		t.Fatal("the model did not find the traffic's HeldBack")
	}
	line := func(m Model) string { return ansi.Strip(m.faultLine(80)) }
	if strings.Contains(line(m), "behind") {
		t.Fatalf("behind before anything was held back: %q", line(m))
	}
	m, _ = update(t, m, heldMsg(3))
	if !strings.Contains(line(m), "(servers behind)") {
		t.Errorf("the fault line at 80 columns while operations are held back: %q", line(m))
	}
	if !strings.Contains(m.notice, "too slowly") {
		t.Errorf("notice %q, want one that says the servers answer too slowly", m.notice)
	}
	m.notice = ""
	m, _ = update(t, m, tickMsg(t0.Add(time.Second)))
	m, _ = update(t, m, heldMsg(9))
	if m.notice != "" {
		t.Errorf("a second notice in the same episode: %q", m.notice)
	}
	m, _ = update(t, m, tickMsg(t0.Add(time.Second+behindFor)))
	m, _ = update(t, m, heldMsg(9))
	if strings.Contains(line(m), "behind") {
		t.Errorf("still behind %v after the last operation held back: %q", behindFor, line(m))
	}
}

// TestModel_WatchHelpNamesOnlyWhatItShows: lab dash plays no story and
// crashes nothing, so it never shows a ▶ or a † line; its help page named
// both beside "space freeze", and sent an instructor looking for keys that
// play them. The demo's page still names them.
func TestModel_WatchHelpNamesOnlyWhatItShows(t *testing.T) {
	watch := NewWatch(context.Background(), "http://127.0.0.1:8080", t0)
	if page := ansi.Strip(strings.Join(watch.helpLines(76), "\n")); strings.Contains(page, "story") || strings.Contains(page, "†") {
		t.Errorf("lab dash's help page names a story or a crash it never shows:\n%s", page)
	} else if !strings.Contains(page, "before attach  what the server did") {
		t.Errorf("lab dash's help page does not say what \"before attach\" is:\n%s", page)
	}
	demo := busyModel(t, 80, 24)
	if page := ansi.Strip(strings.Join(demo.helpLines(76), "\n")); !strings.Contains(page, "▶ a story's outcome  † the last crash") {
		t.Errorf("the demo's help page no longer names the story and crash lines:\n%s", page)
	} else if strings.Contains(page, "before attach") {
		t.Errorf("the demo's help page names \"before attach\", which its fresh servers never show:\n%s", page)
	}
}

// TestModel_ARefusedTransferSaysWhyAt80Columns: the clerks' story ends
// with a transfer over the limit A set, and at 80 columns its feed line
// read "422 tr s1.over-limit daily limit exce…": the reason, the point
// of the line, was cut and the op was whole. The reason comes before the
// op, which a 38-column pane cuts instead.
func TestModel_ARefusedTransferSaysWhyAt80Columns(t *testing.T) {
	m := busyModel(t, 80, 24)
	for side := range 2 {
		ev := event(events.KindRequest, m.now, events.Request{Method: "POST", Path: "/transfers", Status: 422,
			Op: "s1.over-limit", Key: "s1-over-limit", Type: "/problems/daily-limit-exceeded"})
		m, _ = update(t, m, EventsMsg{Side: side, Epoch: 1, Received: m.now, Events: []events.Event{ev}})
	}
	frame := m.Render()
	assertFits(t, frame, 80, 24)
	for side := range 2 {
		if text := paneText(frame, side); !strings.Contains(text, "422 tr daily limit exceeded s1.") {
			t.Errorf("side %d at 80 columns does not say why the transfer was refused:\n%s", side, ansi.Strip(frame))
		}
	}
}
