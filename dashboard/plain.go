package dashboard

import (
	"fmt"
	"io"
	"strings"
	"time"

	"idemlab/kit/bank"
)

// PlainLine is the demo without a terminal, in one line: each side's
// requests, doubles, lost transfers and money check, at now.
func (m Model) PlainLine(now time.Time) string {
	sides := make([]string, len(m.sides))
	for i, s := range m.sides {
		c := s.Counts
		sides[i] = fmt.Sprintf("%s: %d req, %d doubles, %d lost, Σ %s", s.title, c.Requests, c.Doubles, c.Lost, verdictWord(s.Money.Verdict))
	}
	return fmt.Sprintf("%4s  %s", clockSince(now.Sub(m.started)), strings.Join(sides, " | "))
}

// PlainSummary writes one line a side: every count the panes show, and the
// money check in words.
func (m Model) PlainSummary(w io.Writer) {
	for _, s := range m.sides {
		c, money := s.Counts, s.Money
		fmt.Fprintf(w, "  %-22s %5d requests  %3d replayed  %3d 409  %4d doubles  %2d lost  ₩%s moved twice  ₩%s created  money %s\n",
			s.title, c.Requests, c.Replays, c.Conflicts, c.Doubles, c.Lost, bank.FormatWon(c.MovedTwice), bank.FormatWon(c.CreatedTwice), verdictText(money))
	}
}

func verdictWord(v Verdict) string {
	switch v {
	case Conserved:
		return "✓"
	case Broken:
		return "✗"
	case Unverified:
		return "?"
	}
	return "…"
}

func verdictText(m Money) string {
	switch m.Verdict {
	case Conserved:
		return "conserved"
	case Broken:
		return fmt.Sprintf("off by ₩%s", bank.FormatWon(m.Surplus))
	case Unverified:
		return "unverified (executions no event reported)"
	}
	return "not polled"
}
