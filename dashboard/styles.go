package dashboard

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles are every style the dashboard draws with. The colors are the 16
// basic ANSI colors, so that they read on any terminal theme and survive a
// projector.
type Styles struct {
	Header   lipgloss.Style
	Notice   lipgloss.Style
	Error    lipgloss.Style
	Pane     lipgloss.Style // the border around a side
	Title    lipgloss.Style
	Label    lipgloss.Style
	Dim      lipgloss.Style
	Good     lipgloss.Style // counters that are right: zero doubles
	Bad      lipgloss.Style // counters that are wrong
	OK       lipgloss.Style // 2xx
	Replay   lipgloss.Style // a replayed answer
	Conflict lipgloss.Style // 409
	Rejected lipgloss.Style // other 4xx
	Failed   lipgloss.Style // 5xx
	Double   lipgloss.Style // the mark on a request that moved money twice
	Badge    lipgloss.Style // a status word: PAUSED, crashed
	Help     help.Styles
}

// DefaultStyles returns the dashboard's styles.
func DefaultStyles() Styles {
	s := Styles{
		Header:   lipgloss.NewStyle().Bold(true),
		Notice:   lipgloss.NewStyle().Foreground(lipgloss.Cyan),
		Error:    lipgloss.NewStyle().Foreground(lipgloss.Red).Bold(true),
		Pane:     lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.BrightBlack),
		Title:    lipgloss.NewStyle().Bold(true),
		Label:    lipgloss.NewStyle().Foreground(lipgloss.BrightBlack).Bold(true),
		Dim:      lipgloss.NewStyle().Foreground(lipgloss.BrightBlack),
		Good:     lipgloss.NewStyle().Foreground(lipgloss.Green).Bold(true),
		Bad:      lipgloss.NewStyle().Foreground(lipgloss.Red).Bold(true),
		OK:       lipgloss.NewStyle().Foreground(lipgloss.Green),
		Replay:   lipgloss.NewStyle().Foreground(lipgloss.Cyan),
		Conflict: lipgloss.NewStyle().Foreground(lipgloss.Yellow),
		Rejected: lipgloss.NewStyle().Foreground(lipgloss.Magenta),
		Failed:   lipgloss.NewStyle().Foreground(lipgloss.Red),
		Double:   lipgloss.NewStyle().Foreground(lipgloss.BrightWhite).Background(lipgloss.Red).Bold(true),
		Badge:    lipgloss.NewStyle().Foreground(lipgloss.Black).Background(lipgloss.Yellow).Bold(true),
	}
	s.Help = help.Styles{
		ShortKey:       lipgloss.NewStyle().Bold(true),
		ShortDesc:      lipgloss.NewStyle().Foreground(lipgloss.BrightBlack),
		ShortSeparator: lipgloss.NewStyle().Foreground(lipgloss.BrightBlack),
		Ellipsis:       lipgloss.NewStyle().Foreground(lipgloss.BrightBlack),
		FullKey:        lipgloss.NewStyle().Bold(true),
		FullDesc:       lipgloss.NewStyle(),
		FullSeparator:  lipgloss.NewStyle().Foreground(lipgloss.BrightBlack),
	}
	return s
}
