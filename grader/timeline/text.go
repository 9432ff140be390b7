package timeline

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The terminal layout: 100 columns in all.
const (
	indentCols = 2
	labelCols  = 14
	areaCols   = 60
	answerCols = 20
	textCols   = 100
	// TextLanes is how many client lanes a terminal timeline draws.
	TextLanes = 10
)

// The glyphs of the terminal timeline. Each highlighted mark has a glyph
// of its own, so that it reads without colour.
var glyphs = map[string]rune{
	Execution:    '$',
	Missing:      '○',
	Claim:        'c',
	Takeover:     'o',
	Complete:     'd',
	Release:      'r',
	Forget:       'f',
	Armed:        '!',
	Crash:        '†',
	Restart:      '↑',
	Clock:        't',
	Redrive:      '↻',
	WriteRefused: '×',
	"start":      '├',
	"bar":        '─',
	"end":        '┤',
	"cut":        '╳',
	"unanswered": '?',
}

// TextOptions say how Text draws.
type TextOptions struct {
	// Color marks the highlights in red and the executions in yellow, for
	// a terminal; the glyphs stay the same.
	Color bool
}

// Text draws v for a terminal, at most 100 columns wide.
func Text(v View, o TextOptions) string {
	var b strings.Builder
	span := v.To.Sub(v.From)
	col := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		c := int(float64(t.Sub(v.From)) / float64(span) * float64(areaCols-1))
		return min(max(c, 0), areaCols-1)
	}
	clients := 0
	for _, l := range v.Lanes {
		if !l.Lab {
			clients++
		}
	}
	fmt.Fprintf(&b, "%stimeline  %s, one clock; each bar runs from a request's send to its answer\n", pad("", indentCols), countLanes(clients+v.HiddenLanes()))
	b.WriteString(axis(span))
	drawn := map[rune]bool{}
	for _, l := range textRows(v.Lanes, col) {
		cells := make([]rune, areaCols)
		hot := make([]bool, areaCols)
		for i := range cells {
			cells[i] = ' '
		}
		ends := map[int]int{} // a request's end column → its start column
		edges := make([]bool, areaCols)
		for _, a := range l.Attempts {
			s, e := col(a.Start), col(a.End)
			ends[e] = s
			edges[s], edges[e] = true, true
			for i := s; i <= e; i++ {
				cells[i] = glyphs["bar"]
			}
			cells[s], cells[e] = glyphs["start"], glyphs["end"]
			switch {
			case a.Cut:
				cells[e] = glyphs["cut"]
			case !a.Answered():
				cells[e] = glyphs["unanswered"]
			}
		}
		marked := make([]bool, areaCols)
		marks := slices.Clone(l.Marks)
		slices.SortStableFunc(marks, func(a, b Mark) int { return a.At.Compare(b.At) })
		for _, m := range marks {
			c := col(m.At)
			// An execution came before its request's answer: drawn on the
			// answer's column, it would hide how the request ended (cut,
			// no answer), so it goes one column earlier, inside the bar.
			if s, ok := ends[c]; ok && m.Kind == Execution && c-1 > s {
				c--
			}
			c = freeColumn(c, marked, edges)
			if hot[c] && !m.Highlight {
				continue
			}
			cells[c], hot[c], marked[c] = markGlyph(m, v.Finding.markHighlight(m)), m.Highlight, true
		}
		for i, c := range cells {
			drawn[c] = drawn[c] || !hot[i]
		}
		label := l.Label
		if utf8.RuneCountInString(label) > labelCols {
			label = string([]rune(label)[:labelCols-1]) + "…"
		}
		line := fmt.Sprintf("%s%s │%s│ %s", pad("", indentCols), pad(label, labelCols), paint(cells, hot, o.Color), clip(l.answer(), answerCols))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if n := v.HiddenLanes(); n > 0 {
		fmt.Fprintf(&b, "%s+ %d more %s not drawn: %s\n", pad("", indentCols), n, plural(n, "lane", "lanes"), hiddenSummary(v.Hidden))
	}
	// Each glyph is named only where the picture draws it: a finding's
	// executions are its highlight, and none may be drawn as a plain one.
	var legend []string
	if drawn[glyphs[Execution]] {
		legend = append(legend, fmt.Sprintf("%c execution", glyphs[Execution]))
	}
	for _, h := range v.drawnHighlights() {
		legend = append(legend, fmt.Sprintf("%c %s", h.Glyph, h.Legend))
	}
	if v.draws(missing) {
		legend = append(legend, fmt.Sprintf("%c told it ran; never did", glyphs[Missing]))
	}
	if len(legend) > 0 {
		fmt.Fprintf(&b, "%s%s\n", pad("", indentCols), strings.Join(legend, "  "))
	}
	if p := v.Processes(); p != "" {
		fmt.Fprintf(&b, "%s%s\n", pad("", indentCols), clip(p, textCols-indentCols))
	}
	line := ""
	for _, g := range textMarks {
		if !drawn[g.glyph] {
			continue
		}
		entry := fmt.Sprintf("%c %s", g.glyph, g.words)
		if line != "" && utf8.RuneCountInString(line+"  "+entry) > textCols-indentCols {
			fmt.Fprintf(&b, "%s%s\n", pad("", indentCols), line)
			line = ""
		}
		if line != "" {
			line += "  "
		}
		line += entry
	}
	if line != "" {
		fmt.Fprintf(&b, "%s%s\n", pad("", indentCols), line)
	}
	return b.String()
}

// textRows splits each lane into rows, so that no request starts in the
// column where the one before it on its row ended: there a retry sent the
// moment its request was cut read as one bar with it, and the cut was
// lost. A lane's second row and the next are labelled "↳" and its label;
// a mark goes on the row of the earliest request it happened during.
func textRows(lanes []Lane, col func(time.Time) int) []Lane {
	var out []Lane
	for _, l := range lanes {
		rows := []Lane{{Label: l.Label, Lab: l.Lab, Scope: l.Scope, client: l.client}}
		for _, a := range l.Attempts {
			i := slices.IndexFunc(rows, func(r Lane) bool {
				return len(r.Attempts) == 0 || col(r.Attempts[len(r.Attempts)-1].End) < col(a.Start)
			})
			if i < 0 {
				i = len(rows)
				rows = append(rows, Lane{Label: "↳ " + l.Label, Lab: l.Lab, client: l.client})
			}
			rows[i].Attempts = append(rows[i].Attempts, a)
		}
		for _, m := range l.Marks {
			row, from := 0, time.Time{}
			for i, r := range rows {
				for _, a := range r.Attempts {
					if !m.At.Before(a.Start) && !m.At.After(a.End) && (from.IsZero() || a.Start.Before(from)) {
						row, from = i, a.Start
					}
				}
			}
			rows[row].Marks = append(rows[row].Marks, m)
		}
		out = append(out, rows...)
	}
	return out
}

// freeColumn is where a mark that falls in column c is drawn: c, unless
// an earlier mark of its row is drawn there, and then the nearest column
// after it, or else before it, that holds no mark and no end of a bar,
// up to spill columns away. Two things that happened within one column's
// time (a kill and the restart 9 ms later, a claim and its completion)
// then read as two marks side by side, in the order they happened,
// instead of the later hiding the earlier. With no such column near, the
// mark goes on c, where a highlight still wins over a plain mark.
func freeColumn(c int, marked, edges []bool) int {
	if !marked[c] {
		return c
	}
	free := func(i int) bool { return i >= 0 && i < len(marked) && !marked[i] && !edges[i] }
	for d := 1; d <= spill; d++ {
		if free(c + d) {
			return c + d
		}
	}
	for d := 1; d <= spill; d++ {
		if free(c - d) {
			return c - d
		}
	}
	return c
}

// spill is how many columns away from its time freeColumn may draw a mark.
const spill = 3

// textMarks say what each glyph the lanes draw stands for, other than the
// bars, the executions and the finding's marks, in the order the legend's
// second line names those the picture holds.
var textMarks = []struct {
	glyph rune
	words string
}{
	{glyphs[Claim], "key claimed"},
	{glyphs[Takeover], "key taken over (a new lease owner)"},
	{glyphs[Complete], "key completed"},
	{glyphs[Release], "key released"},
	{glyphs[Forget], "key forgotten"},
	{glyphs[Armed], "fault armed"},
	{glyphs[Crash], "crash"},
	{glyphs[Restart], "restart"},
	{glyphs[Clock], "lab clock moved"},
	{glyphs[Redrive], "dead letter sent again"},
	{glyphs[WriteRefused], "write refused on a fault"},
	{glyphs["cut"], "cut on the wire"},
	{glyphs["unanswered"], "no answer"},
	{otherMark, "another lab event"},
}

// otherMark is the glyph of a mark of a kind the timeline has no glyph for.
const otherMark = '*'

// markGlyph is the glyph of m, h's for a mark of the finding.
func markGlyph(m Mark, h Highlight) rune {
	if highlighted(m) {
		return h.Glyph
	}
	if g, ok := glyphs[m.Kind]; ok {
		return g
	}
	return otherMark
}

// paint writes cells, colouring the highlights and the executions.
func paint(cells []rune, hot []bool, color bool) string {
	if !color {
		return string(cells)
	}
	var b strings.Builder
	for i, c := range cells {
		switch {
		case hot[i]:
			b.WriteString("\x1b[1;31m" + string(c) + "\x1b[0m")
		case c == glyphs[Execution]:
			b.WriteString("\x1b[33m" + string(c) + "\x1b[0m")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// axis is the time scale above the lanes: 0 on the left, the span on the
// right and its middle between.
func axis(span time.Duration) string {
	cells := []rune(strings.Repeat(" ", areaCols))
	put := func(at int, s string) {
		for i, r := range []rune(s) {
			if at+i < len(cells) {
				cells[at+i] = r
			}
		}
	}
	put(0, "0")
	mid := Millis(span / 2)
	put(areaCols/2-utf8.RuneCountInString(mid)/2, mid)
	end := Millis(span) + " ms"
	put(areaCols-utf8.RuneCountInString(end), end)
	return fmt.Sprintf("%s%s  %s\n", pad("", indentCols), pad("", labelCols), string(cells))
}

// Millis writes d in milliseconds, with one decimal below 10 ms.
func Millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms == 0 {
		return "0"
	}
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 0, 64)
}

func hiddenSummary(hidden map[string]int) string {
	answers := make([]string, 0, len(hidden))
	for a := range hidden {
		answers = append(answers, a)
	}
	sort.Slice(answers, func(i, j int) bool {
		if hidden[answers[i]] != hidden[answers[j]] {
			return hidden[answers[i]] > hidden[answers[j]]
		}
		return answers[i] < answers[j]
	})
	parts := make([]string, len(answers))
	for i, a := range answers {
		parts[i] = fmt.Sprintf("%d× %s", hidden[a], a)
	}
	return strings.Join(parts, ", ")
}

func countLanes(n int) string {
	return fmt.Sprintf("%d %s involved", n, plural(n, "client", "clients"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }

// shortProblem is a problem type without its /problems/ prefix.
func shortProblem(p string) string { return strings.TrimPrefix(p, "/problems/") }
