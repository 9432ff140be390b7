package dashboard

import (
	"fmt"

	"charm.land/bubbles/v2/key"
)

// Bindings are the key presses the dashboard answers, each with its help
// text. The help bar, the help page (?) and every hint on screen are drawn
// from them, so they cannot drift from what the key presses do. (In the
// dashboard, "key" alone means an idempotency key.)
type Bindings struct {
	Pause   key.Binding
	Profile key.Binding
	Burst   key.Binding
	Edited  key.Binding
	Clerks  key.Binding
	Invoice key.Binding
	Crash   key.Binding
	Stage   key.Binding
	Yours   key.Binding
	Faster  key.Binding
	Slower  key.Binding
	Help    key.Binding
	// Up and Down scroll the help page when the window is too small to
	// hold it; they say so at its foot, and nowhere else.
	Up   key.Binding
	Down key.Binding
	// Dismiss takes away the error a key press's action left on screen
	// (your code that does not compile); the error says so beside
	// itself, and nothing else does.
	Dismiss key.Binding
	Quit    key.Binding
}

// DefaultBindings returns the bindings. With demo false (lab dash, which
// only watches a server) the bindings that drive traffic are disabled and
// vanish from the help.
func DefaultBindings(demo bool) Bindings {
	b := Bindings{
		Pause:   key.NewBinding(key.WithKeys("space", "p"), key.WithHelp("space", "pause")),
		Profile: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "faults")),
		Burst:   key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "burst")),
		Edited:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "clerk")),
		Clerks:  key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "two clerks")),
		Invoice: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "invoice")),
		Crash:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "crash")),
		Stage:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stage")),
		Yours:   key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yours/solution")),
		Faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Slower:  key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "slower")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑", "scroll up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓", "scroll down")),
		Dismiss: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "dismiss error")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
	if !demo {
		disable(&b.Profile, &b.Burst, &b.Edited, &b.Clerks, &b.Invoice, &b.Crash, &b.Stage, &b.Yours, &b.Faster, &b.Slower, &b.Dismiss)
		b.Pause.SetHelp("space", "freeze")
	}
	return b
}

// disable turns bindings off: they match no key press and vanish from the
// help.
func disable(bindings ...*key.Binding) {
	for _, b := range bindings {
		b.SetEnabled(false)
	}
}

// ShortHelp is the help bar.
func (b Bindings) ShortHelp() []key.Binding {
	return []key.Binding{b.Pause, b.Profile, b.Burst, b.Edited, b.Crash, b.Stage, b.Help, b.Quit}
}

// GiveWay are the help bar's keys in the order they leave a bar too
// narrow for all of them; ? help and q quit never leave it.
func (b Bindings) GiveWay() []key.Binding {
	return []key.Binding{b.Crash, b.Edited, b.Burst, b.Profile, b.Stage, b.Pause}
}

// FullHelp is the help page, one column per kind of key press: the
// traffic, what it meets, the stories, the servers. Dismiss is not on
// it: the error it takes away says so beside itself.
func (b Bindings) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{b.Pause, b.Faster, b.Slower, b.Profile},
		{b.Burst, b.Edited, b.Crash},
		{b.Clerks, b.Invoice},
		{b.Stage, b.Yours, b.Help, b.Quit},
	}
}

// Explained is what the help page says of the less obvious key presses,
// one line each, led by the key the binding shows.
func (b Bindings) Explained() []string {
	var lines []string
	line := func(k key.Binding, format string, args ...any) {
		if k.Enabled() {
			lines = append(lines, k.Help().Key+"  "+fmt.Sprintf(format, args...))
		}
	}
	line(b.Burst, "16 copies of one new operation at the same instant, to both sides")
	line(b.Edited, "a transfer, then the same key again with the amount edited")
	line(b.Clerks, "two clerks save settings from one copy; then a transfer over A's limit")
	line(b.Invoice, "one invoice paid by two clerks, each under a key of their own")
	line(b.Crash, "the right server crashes (answers in flight are lost), restarts")
	line(b.Stage, "right: next stage's solution; %s: your stages/stageN; both restart", b.Yours.Help().Key)
	return lines
}

// hint is a binding as a short hint: "q quit".
func hint(k key.Binding) string { return k.Help().Key + " " + k.Help().Desc }
