package dashboard

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"idemlab/kit/bank"
)

// pane is one side drawn in a box: a plain value the root model builds
// for each frame, sized with SetSize and drawn with Render.
type pane struct {
	side   *Side
	title  string
	url    string
	status string
	now    time.Time
	st     Styles
	// statsRows is the least number of rows the traffic summary takes:
	// side by side, the most any pane's takes.
	statsRows int

	width, height int // outside the border
}

// SetSize sets the box's outer size.
func (p *pane) SetSize(width, height int) { p.width, p.height = width, height }

// layout is how many rows each section of a pane gets.
type layout struct {
	bigCounters bool
	stats       int
	spark       bool
	money       int // 0, or its rows plus the accounts (a header, then a row each)
	feed        int
	keys        int // 0, or a header plus rows
}

// plan shares out the inside height: the counters first (they are the
// point of the demo), then the traffic summary, the money check (money
// rows, more for the accounts if there is room), the
// sparkline, and what is left to the feed and the key table.
func plan(inner, width, accounts int, keys bool, stats, money int) layout {
	var l layout
	left := inner - 1 // title
	take := func(n int) bool {
		if left >= n {
			left -= n
			return true
		}
		return false
	}
	l.bigCounters = inner >= 14 && width >= 30 && take(4)
	if !l.bigCounters {
		take(1)
	}
	switch {
	case take(stats):
		l.stats = stats
	case take(1):
		l.stats = 1
	}
	if take(money) {
		l.money = money
	}
	l.spark = inner >= 10 && take(2)
	switch {
	case left >= 6 && keys:
		l.keys = min(1+max(2, left*2/5-1), left-2)
		left -= l.keys
	case left >= 3:
		l.keys = 1 // says there are none
		left--
	}
	if l.money > 0 && left > 12 {
		// The accounts' header, then as many as there is room for;
		// a header alone would name nothing.
		if extra := min(accounts+1, (left-8)/2); extra >= 2 {
			l.money += extra
			left -= extra
		}
	}
	l.feed = left
	return l
}

// Render draws the pane.
func (p pane) Render() string {
	iw, ih := max(p.width-2, 1), max(p.height-2, 1)
	s := p.side
	stats := p.statsLines(iw)
	for len(stats) < p.statsRows {
		stats = append(stats, "")
	}
	money := 2
	if s.Before.Found {
		money++ // what was there before attach
	}
	l := plan(ih, iw, len(s.Money.Accounts), s.KeyCount() > 0, len(stats), money)
	var lines []string
	add := func(ls ...string) {
		for _, line := range ls {
			lines = append(lines, ansi.Truncate(line, iw, "…"))
		}
	}
	add(p.titleLine(iw))
	if l.bigCounters {
		add(p.bigCounters(iw)...)
	} else {
		add(p.smallCounters())
	}
	add(stats[:l.stats]...)
	if l.spark {
		add(p.sparkLines(iw)...)
	}
	add(p.feedLines(l.feed, iw)...)
	add(p.keyLines(l.keys)...)
	if l.money > 0 {
		add(p.moneyLines(l.money)...)
	}
	if len(lines) > ih {
		lines = lines[:ih]
	}
	for len(lines) < ih {
		lines = append(lines, "")
	}
	return p.st.Pane.Width(p.width).Height(p.height).Render(strings.Join(lines, "\n"))
}

func (p pane) titleLine(width int) string {
	title := p.st.Title.Render(p.title)
	switch p.status {
	case "running", "":
		if url := strings.TrimPrefix(p.url, "http://"); url != "" && lipgloss.Width(title)+1+len(url) <= width {
			title += " " + p.st.Dim.Render(url)
		}
	default:
		title += " " + p.st.Badge.Render(" "+p.status+" ")
	}
	return title
}

func (p pane) counterStyle(n int64) lipgloss.Style {
	if n > 0 {
		return p.st.Bad
	}
	return p.st.Good
}

func (p pane) bigCounters(width int) []string {
	c := p.side.Counts
	half := width / 2
	d, l := Big(c.Doubles), Big(c.Lost)
	cell := func(s string, n int64) string {
		return p.counterStyle(n).Render(s) + strings.Repeat(" ", max(0, half-lipgloss.Width(s)))
	}
	// A pane too narrow for the labels in full and a space between them
	// (two side by side on a terminal under 80 columns) says the short
	// words of the small counters instead of running them together.
	doubles, lost := "DOUBLE TRANSFERS", "LOST TRANSFERS"
	if half <= len(doubles) {
		doubles, lost = "DOUBLES", "LOST"
	}
	rows := []string{
		p.st.Label.Render(padRight(doubles, half)) + p.st.Label.Render(lost),
	}
	for i := range 3 {
		rows = append(rows, cell(d[i], c.Doubles)+p.counterStyle(c.Lost).Render(l[i]))
	}
	return rows
}

func (p pane) smallCounters() string {
	c := p.side.Counts
	return p.st.Label.Render("doubles ") + p.counterStyle(c.Doubles).Render(Short(c.Doubles)) +
		p.st.Label.Render("  lost ") + p.counterStyle(c.Lost).Render(Short(c.Lost))
}

// statsLines are the traffic summary: the counts of the answers, then
// what only some servers have (re-runs after retention, the replica that
// answered, from stage 9 on the outbox), each on the line before when it
// fits the width, else on a line of its own, so that a narrow pane (two
// side by side on a classroom's terminal, or lab dash on 80 columns)
// cuts none of them off.
func (p pane) statsLines(width int) []string {
	c := p.side.Counts
	succeeded := fmt.Sprintf("req %s %s %s %s%s",
		Short(c.Requests),
		p.st.OK.Render("ok"), Short(c.Succeeded),
		p.st.Replay.Render("↺"), Short(c.Replays))
	if c.Dropped > 0 {
		succeeded = p.st.Error.Render(fmt.Sprintf("⚠ %s events dropped ", Short(c.Dropped))) + succeeded
	}
	refused := fmt.Sprintf("%s %s %s %s %s %s",
		p.st.Conflict.Render("409"), Short(c.Conflicts),
		p.st.Rejected.Render("4xx"), Short(c.Rejected),
		p.st.Failed.Render("5xx"), Short(c.Failed))
	// part is a piece of the summary, the width it is judged at, and what
	// separates it from the piece before on one line.
	type part struct {
		text string
		room int
		sep  string
	}
	var parts []part
	add := func(text string, room int) { parts = append(parts, part{text, room, p.st.Dim.Render(" · ")}) }
	add(succeeded, lipgloss.Width(succeeded))
	// The answers refused go under the answers that succeeded when both
	// do not fit: a class's thousands of requests made the line longer
	// than a pane on 80 columns, and cut the 5xx off.
	parts = append(parts, part{refused, lipgloss.Width(refused), " "})
	if c.AfterRetention > 0 {
		t := fmt.Sprintf("%s re-run after retention", Short(c.AfterRetention))
		add(p.st.Dim.Render(t), len(t))
	}
	if by := replicaCounts(c.ByReplica); by != "" {
		t := "answered by " + by
		add(p.st.Dim.Render(t), len(t))
	}
	// A dead letter waits for a person: it is never posted on its own.
	// It leads the first line, or takes a line of its own above the
	// traffic when both do not fit.
	var lines []string
	o := p.side.Outbox
	if o.Dead > 0 {
		letters := deadLetters(o.Dead, p.side.OldestDead)
		if lipgloss.Width(letters)+lipgloss.Width(" · ")+parts[0].room+1+parts[1].room <= width {
			parts[0].text = p.st.Error.Render(letters+" · ") + parts[0].text
			parts[0].room += lipgloss.Width(letters + " · ")
		} else {
			lines = append(lines, p.st.Error.Render(letters))
		}
	}
	if o.Pending+o.Sent+o.Dead > 0 {
		outbox := fmt.Sprintf("outbox %s to post, %s posted", Short(o.Pending), Short(o.Sent))
		if o.Pending > 0 {
			outbox = p.st.Conflict.Render(outbox)
		} else {
			outbox = p.st.Dim.Render(outbox)
		}
		// Whether it fits is judged with room for the widest count of
		// rows to post (Short's five characters): that count comes and
		// goes at every poll, and the pane's rows must not jump up and
		// down with it.
		add(outbox, len(fmt.Sprintf("outbox %5s to post, %s posted", "", Short(o.Sent))))
	}
	line, room := parts[0].text, parts[0].room
	for _, pt := range parts[1:] {
		if room+lipgloss.Width(pt.sep)+pt.room <= width {
			line += pt.sep + pt.text
			room += lipgloss.Width(pt.sep) + pt.room
			continue
		}
		lines = append(lines, line)
		line, room = pt.text, pt.room
	}
	return append(lines, line)
}

// deadLetters says how many dead letters there are and, when the state
// listed them, which is the oldest (Side.OldestDead).
func deadLetters(n int64, oldest string) string {
	s := fmt.Sprintf("⚠ %s dead letters", Short(n))
	if n == 1 {
		s = "⚠ 1 dead letter"
	}
	if oldest != "" {
		s += ", oldest " + oldest
	}
	return s
}

func (p pane) sparkLines(width int) []string {
	n := max(width-6, 1)
	req, dbl := p.side.Series(p.now, n)
	return []string{
		p.st.Dim.Render("req/s ") + p.st.OK.Render(Sparkline(req, 0)),
		p.st.Dim.Render("dbl/s ") + p.st.Bad.Render(Sparkline(dbl, 1)),
	}
}

func (p pane) feedLines(n, width int) []string {
	if n <= 0 {
		return nil
	}
	out := p.toldLines(n)
	crash, pinned := p.side.Crashed(p.now)
	if pinned {
		out = append(out, p.crashLines(crash.Note, n-len(out), width)...)
	}
	for _, l := range p.side.Feed(n - len(out)) {
		switch {
		case pinned && l == crash:
			// The line pinned above reads it whole: here it only marks
			// where in the traffic the crash came, on one line.
			out = append(out, p.st.Dim.Render("── "+l.Note))
		case l.Note != "":
			out = append(out, p.noteLines(l.Note, width)...)
		default:
			out = append(out, p.feedLine(l))
		}
	}
	out = out[:min(len(out), n)]
	if len(out) == 0 {
		out = append(out, p.st.Dim.Render("waiting for requests…"))
	}
	return out
}

// toldLines are the last story's outcome, at most n lines of it: the
// verdict in its color, then what happened.
func (p pane) toldLines(n int) []string {
	told, ok := p.side.Told(p.now)
	if !ok {
		return nil
	}
	verdict := map[Outcome]lipgloss.Style{Untold: p.st.Dim, Held: p.st.Good, Harmed: p.st.Bad}[told.Outcome]
	var out []string
	for i, line := range told.Lines[:min(n, len(told.Lines))] {
		if i == 0 {
			out = append(out, verdict.Render("▶ "+line))
		} else {
			out = append(out, p.st.Title.Render("  "+line))
		}
	}
	return out
}

// crashLines are the last crash's note, pinned under the story's outcome
// and wrapped to the pane, in at most room lines. It leaves one of them
// to the requests, which show what the crash did (409s, replays): on a
// pane too short for the whole note its last line is cut.
func (p pane) crashLines(note string, room, width int) []string {
	if room > 1 {
		room--
	}
	if room <= 0 {
		return nil
	}
	lines := hanging("† ", note, width)
	if len(lines) > room {
		// Longer than the pane's width: Render cuts it there, with "…".
		for _, l := range lines[room:] {
			lines[room-1] += " " + strings.TrimLeft(l, " ")
		}
		lines = lines[:room]
	}
	for i := range lines {
		lines[i] = p.st.Conflict.Render(lines[i])
	}
	return lines
}

// noteLines are a marker line (a crash, a restart), wrapped to the pane:
// what a crash does to the requests under way is the sentence the class
// must read, and an 80-column pane cut it in half.
func (p pane) noteLines(note string, width int) []string {
	lines := hanging("── ", note, width)
	for i := range lines {
		lines[i] = p.st.Dim.Render(lines[i])
	}
	return lines
}

// hanging wraps note to width behind lead: the first line starts with
// lead, the others with as many spaces.
func hanging(lead, note string, width int) []string {
	n := len([]rune(lead))
	lines := strings.Split(ansi.Wrap(note, max(width-n, 1), ""), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = lead + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", n) + lines[i]
		}
	}
	return lines
}

func (p pane) feedLine(l FeedLine) string {
	r := l.Request
	kind := strings.TrimPrefix(r.Path, "/")
	name := r.Op
	if name == "" {
		name = r.Key
	}
	account := ""
	switch r.Path {
	case "/transfers":
		kind = "tr"
	case "/deposits":
		kind = "dp"
	default:
		if acc, ok := settingsOf(r.Path); ok {
			// A clerk's read and save read alike without their method;
			// the account goes last, so that a narrow pane cuts it
			// rather than why a save was refused.
			kind, account = r.Method+" settings", acc
		}
	}
	text := fmt.Sprintf("%d %s", r.Status, kind)
	if r.Status >= 400 && r.Type != "" {
		// Why it was refused is the point of the line: it comes before
		// the op and the account, which a 38-column pane cuts instead
		// ("422 tr daily limit exceeded s1.over-l…").
		reason := strings.TrimPrefix(strings.TrimPrefix(r.Type, "/problems/"), "idempotency-")
		text += " " + strings.ReplaceAll(reason, "-", " ")
	}
	if name != "" {
		text += " " + name
	}
	if l.Replica > 0 {
		text = fmt.Sprintf("r%d %s", l.Replica, text)
	}
	style := p.st.OK
	switch {
	case r.Status == 409:
		style = p.st.Conflict
	case r.Status >= 500:
		style = p.st.Failed
	case r.Status >= 400:
		style = p.st.Rejected
	case r.Replayed:
		style = p.st.Replay
	}
	if account != "" {
		text += " " + account
	}
	line := style.Render(text)
	if r.Replayed {
		line += " " + p.st.Replay.Render("↺ replay")
	}
	if l.Double {
		line += " " + p.st.Double.Render(" DOUBLE ")
	}
	return line
}

// settingsOf is the account of a path /accounts/ID/settings.
func settingsOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/accounts/")
	if !ok {
		return "", false
	}
	acc, ok := strings.CutSuffix(rest, "/settings")
	return acc, ok && acc != "" && !strings.Contains(acc, "/")
}

func (p pane) keyLines(n int) []string {
	if n <= 0 {
		return nil
	}
	if p.side.KeyCount() == 0 {
		return []string{p.st.Dim.Render("no idempotency keys stored")}
	}
	if n == 1 {
		newest := p.side.Keys(1)[0]
		return []string{p.st.Label.Render("keys ") + fmt.Sprintf("%d stored, newest %s", p.side.KeyCount(), newest.State)}
	}
	keyWidth := 16
	out := []string{p.st.Label.Render(fmt.Sprintf("%-*s %-11s %s", keyWidth, "KEY", "STATE", "AGE"))}
	for _, k := range p.side.Keys(n - 1) {
		state := k.State
		style := p.st.Dim
		age := Age(p.now.Sub(k.Seen))
		if k.Before {
			age = "before attach"
		}
		switch state {
		case "in_progress":
			style = p.st.Conflict
		case "completed":
			style = p.st.OK
		}
		out = append(out, fmt.Sprintf("%-*s %s %s", keyWidth, ansi.Truncate(k.Key, keyWidth, "…"),
			style.Render(padRight(state, 11)), p.st.Dim.Render(age)))
	}
	return out
}

func (p pane) moneyLines(n int) []string {
	m := p.side.Money
	if !m.Known {
		return []string{p.st.Dim.Render("balances: waiting for the first state poll")}
	}
	var verdict string
	switch m.Verdict {
	case Conserved:
		verdict = p.st.Good.Render("✓ conserved")
	case Broken:
		verdict = p.st.Bad.Render(fmt.Sprintf("✗ ₩%s appeared", Short(m.Surplus)))
		if m.Surplus < 0 {
			verdict = p.st.Bad.Render(fmt.Sprintf("✗ ₩%s vanished", Short(-m.Surplus)))
		}
	case Unverified:
		verdict = p.st.Conflict.Render(fmt.Sprintf("? %d unreported executions", m.Unseen))
	}
	if b := p.side.Before; b.Found {
		if m.Verdict == Conserved {
			verdict += p.st.Good.Render(" since attach")
		}
		// Broken before attach: whatever the check says since, the
		// books were not clean when the dashboard came.
		var found []string
		if b.Doubles > 0 {
			found = append(found, Short(b.Doubles)+" doubled")
		}
		if b.Vanished > 0 {
			found = append(found, "₩"+Short(b.Vanished)+" short")
		}
		if len(found) > 0 {
			verdict += p.st.Bad.Render(" · ✗ at attach: " + strings.Join(found, ", "))
		}
	}
	out := []string{
		fmt.Sprintf("Σ ₩%s %s", bank.FormatWon(m.Total), verdict),
		p.counterStyle(m.MovedTwice).Render("moved twice ₩"+Short(m.MovedTwice)) + p.st.Dim.Render(" · ") +
			p.counterStyle(m.CreatedTwice).Render("created ₩"+Short(m.CreatedTwice)),
	}
	if b := p.side.Before; b.Found {
		out = append(out, p.beforeLine(b))
	}
	if len(m.Accounts) > 0 && len(out)+2 <= n {
		out = append(out, p.st.Label.Render(fmt.Sprintf(accountRow, "ACCOUNT", "BALANCE ₩", "SINCE OPENING ₩")))
	}
	for _, a := range m.Accounts {
		if len(out) >= n {
			break
		}
		delta := a.Balance - a.Opening
		ds := p.st.Dim.Render("±0")
		if delta > 0 {
			ds = p.st.OK.Render("+" + bank.FormatWon(delta))
		} else if delta < 0 {
			ds = p.st.Rejected.Render(bank.FormatWon(delta))
		}
		out = append(out, fmt.Sprintf(accountRow, a.ID, bank.FormatWon(a.Balance), ds))
	}
	return out
}

// accountRow is a line of the balances under the money check, and of
// their header: the account, its balance and how far it moved since the
// opening balance, both in won.
const accountRow = "%-12s %12s %s"

// beforeLine says what the server had done before the dashboard attached
// to it: history, not counted above.
func (p pane) beforeLine(b Attach) string {
	keys := Short(int64(b.Keys))
	if b.KeysMore {
		keys += "+"
	}
	line := p.st.Dim.Render("before attach: "+counted(Short(b.Executions), b.Executions, "execution")+", ") +
		p.counterStyle(b.Doubles).Render(Short(b.Doubles)+" doubled") + p.st.Dim.Render(", "+counted(keys, int64(b.Keys), "key"))
	return line
}

// counted is n, shown as shown, and the noun, in the plural unless n is
// exactly one: "1 key", "3 keys", "1,000+ keys".
func counted(shown string, n int64, noun string) string {
	if n == 1 && shown == "1" {
		return shown + " " + noun
	}
	return shown + " " + noun + "s"
}

func padRight(s string, n int) string {
	if w := lipgloss.Width(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// replicaCounts is "r1 40 r2 38 r3 41": the responses each replica sent,
// up to the last that sent any; "" when the side watches one server.
func replicaCounts(by [MaxReplicas]int64) string {
	last := -1
	for i, n := range by {
		if n > 0 {
			last = i
		}
	}
	parts := make([]string, 0, last+1)
	for i := range last + 1 {
		parts = append(parts, fmt.Sprintf("r%d %s", i+1, Short(by[i])))
	}
	return strings.Join(parts, " ")
}
