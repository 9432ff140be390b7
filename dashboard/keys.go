package dashboard

import "charm.land/bubbles/v2/key"

// KeyMap is every key the dashboard answers, with its help text. The
// help bar and the full help (?) are drawn from it, so they cannot drift
// from what the keys do.
type KeyMap struct {
	Pause   key.Binding
	Profile key.Binding
	Burst   key.Binding
	Edited  key.Binding
	Crash   key.Binding
	Stage   key.Binding
	Yours   key.Binding
	Faster  key.Binding
	Slower  key.Binding
	Help    key.Binding
	Quit    key.Binding
}

// DefaultKeyMap returns the keys. With demo false (lab dash, which only
// watches a server) the keys that drive traffic are disabled and vanish
// from the help.
func DefaultKeyMap(demo bool) KeyMap {
	k := KeyMap{
		Pause:   key.NewBinding(key.WithKeys("space", "p"), key.WithHelp("space", "pause")),
		Profile: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "faults")),
		Burst:   key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "burst")),
		Edited:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "clerk")),
		Crash:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "crash")),
		Stage:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stage")),
		Yours:   key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yours/solution")),
		Faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		Slower:  key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "slower")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
	if !demo {
		for _, b := range []*key.Binding{&k.Profile, &k.Burst, &k.Edited, &k.Crash, &k.Stage, &k.Yours, &k.Faster, &k.Slower} {
			b.SetEnabled(false)
		}
		k.Pause.SetHelp("space", "freeze")
	}
	return k
}

// ShortHelp is the help bar.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Pause, k.Profile, k.Burst, k.Edited, k.Crash, k.Stage, k.Help, k.Quit}
}

// FullHelp is the help page, one column per kind of key.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Pause, k.Faster, k.Slower, k.Profile},
		{k.Burst, k.Edited, k.Crash},
		{k.Stage, k.Yours, k.Help, k.Quit},
	}
}
