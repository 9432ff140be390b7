package timeline

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// HTMLLanes is how many client lanes an HTML timeline draws.
const HTMLLanes = 40

// The HTML layout, in SVG user units.
const (
	svgLabel  = 170.0
	svgArea   = 760.0
	svgAnswer = 190.0
	svgLane   = 28.0
	svgTop    = 34.0
)

// WriteHTML writes v as an HTML page named name.html in dir, which it
// makes if need be, and returns the page's path, relative to the working
// directory when it lies below it. It returns an error if the page cannot
// be written.
func WriteHTML(dir, name string, v View) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".html")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := HTML(f, v); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return shortPath(path), nil
}

// RemoveHTML removes the page WriteHTML would write as name.html in dir,
// if there is one: a page drawn by an earlier run must not pass for this
// run's. It returns an error if the page is there and cannot be removed.
func RemoveHTML(dir, name string) error {
	err := os.Remove(filepath.Join(dir, name+".html"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// shortPath is path relative to the working directory when it lies below
// it, or else absolute.
func shortPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return abs
}

// HTML writes v as one self-contained page: inline CSS and SVG, no script
// and nothing fetched, so that it opens on a projector with no network.
// Each bar links to its request's row in the table below it (sent and
// got), and shows them on hover. It returns the writer's error.
func HTML(w io.Writer, v View) error {
	return page.Execute(w, htmlView(v))
}

type htmlPage struct {
	F            Finding
	Width        float64
	Height       float64
	Span         string
	Ticks        []htmlTick
	Lanes        []htmlLane
	Hidden       int
	HiddenDetail string
	Rows         []htmlRow
	// Highlights are how the finding's marks the page draws are drawn
	// (View.drawnHighlights); Missing says it draws an answer that told
	// of an execution that never happened. The legend names only what is
	// drawn.
	Highlights []Highlight
	Missing    bool
	// Processes says on which lanes each server process's executions
	// ran, when there were several (View.Processes).
	Processes string
	// Executions says it draws an execution that is not the finding's.
	Executions bool
	// Marks name the other glyphs the lanes draw (the lab's events), in
	// the terminal legend's words and order.
	Marks []string
}

type htmlTick struct {
	X     float64
	Label string
}

type htmlLane struct {
	Label, Answer string
	Y             float64
	Lab           bool
	Hot           bool
	Bars          []htmlBar
	Marks         []htmlMark
}

type htmlBar struct {
	ID        string
	X, W      float64
	Cut, Lost bool
	Title     string
}

type htmlMark struct {
	X         float64
	Kind      string
	Glyph     string
	Highlight bool
	Title     string
}

type htmlRow struct {
	ID, Client, Sent, Got, Start, End string
	Hot                               bool
}

func htmlView(v View) htmlPage {
	span := v.To.Sub(v.From)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return svgLabel
		}
		return math.Round((svgLabel+float64(t.Sub(v.From))/float64(span)*svgArea)*10) / 10
	}
	ms := func(t time.Time) string { return Millis(t.Sub(v.From)) }
	p := htmlPage{F: v.Finding, Width: svgLabel + svgArea + svgAnswer, Span: Millis(span) + " ms",
		Hidden: v.HiddenLanes(), HiddenDetail: hiddenSummary(v.Hidden), Highlights: v.drawnHighlights(), Missing: v.draws(missing), Processes: v.Processes(),
		Executions: v.draws(func(m Mark) bool { return m.Kind == Execution && !highlighted(m) })}
	for i := 0; i <= 4; i++ {
		p.Ticks = append(p.Ticks, htmlTick{X: svgLabel + svgArea*float64(i)/4, Label: Millis(span*time.Duration(i)/4) + " ms"})
	}
	drawn := map[rune]bool{}
	for i, l := range v.Lanes {
		hl := htmlLane{Label: l.Label, Answer: l.answer(), Y: svgTop + svgLane*float64(i), Lab: l.Lab, Hot: l.highlighted()}
		for _, a := range l.Attempts {
			hl.Bars = append(hl.Bars, htmlBar{ID: a.ID, X: x(a.Start), W: math.Round(max(x(a.End)-x(a.Start), 2)*10) / 10, Cut: a.Cut, Lost: !a.Answered(),
				Title: fmt.Sprintf("%s  %s\nsent  %s\ngot   %s\n%s → %s ms", a.Client, a.ID, a.Sent, a.Got, ms(a.Start), ms(a.End))})
			p.Rows = append(p.Rows, htmlRow{ID: a.ID, Client: a.Client, Sent: a.Sent, Got: a.Got, Start: ms(a.Start), End: ms(a.End), Hot: hl.Hot})
		}
		for _, m := range l.Marks {
			kind, hot := m.Kind, v.Finding.markHighlight(m)
			if highlighted(m) {
				kind = hot.Class
			}
			title := markTitle(m, hot) + " at " + ms(m.At) + " ms"
			glyph := markGlyph(m, hot)
			if kind != Execution && kind != Missing && !m.Highlight {
				drawn[glyph] = true
			}
			hl.Marks = append(hl.Marks, htmlMark{X: x(m.At), Kind: kind, Glyph: string(glyph), Highlight: m.Highlight, Title: title})
		}
		p.Lanes = append(p.Lanes, hl)
	}
	for _, g := range textMarks {
		if drawn[g.glyph] {
			p.Marks = append(p.Marks, fmt.Sprintf("%c %s", g.glyph, g.words))
		}
	}
	p.Height = svgTop + svgLane*float64(len(v.Lanes)) + 10
	return p
}

// markTitle says what a mark is, for its hover text: h's words for a
// mark of the finding.
func markTitle(m Mark, h Highlight) string {
	s := map[string]string{
		Execution: "executed", Claim: "key claimed",
		Takeover: "key taken over: a retry wrote itself in as its holder (its lease owner), the key still in progress",
		Complete: "key completed", Release: "key released", Forget: "key forgotten: its completed row deleted (by a purge or by a claim: the key table does not say which)",
		Armed: "fault armed", Crash: "server crashed", Restart: "server restarted", Clock: "lab clock moved",
		Redrive: "dead letter sent again by an operator, its row owed again", WriteRefused: "a write of the server's refused by its database, on the fault armed, drawn where the check saw the fault's count go down, its first look after the refusal",
		Missing: "told it ran; it never executed",
	}[m.Kind]
	if s == "" {
		s = m.Kind
	}
	if highlighted(m) {
		s = h.Title
	}
	if m.Detail != "" {
		s += " (" + m.Detail + ")"
	}
	return s
}

var page = template.Must(template.New("timeline").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.F.Check}}: {{.F.Harm}}</title>
<style>
body { font: 16px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
.claim { font-size: 1.1em; margin: 0 0 .8em; }
.harm { color: #b00020; font-weight: 600; font-size: 1.2em; }
.contract { color: #205020; font-weight: 600; font-size: 1.2em; }
pre { background: #f4f4f4; padding: .6em .8em; white-space: pre-wrap; }
svg { display: block; max-width: 100%; height: auto; border: 1px solid #ddd; }
svg text { font: 13px ui-monospace, monospace; }
.lane-label { fill: #333; }
.lab .lane-label { fill: #666; font-style: italic; }
.hot .lane-label { fill: #b00020; font-weight: bold; }
.stripe { fill: #fafafa; }
.bar { fill: #8fb3d9; }
.bar.cut { fill: #e0a040; }
.bar.lost { fill: #ccc; }
a:hover .bar, a:focus .bar { fill: #3c78b4; }
.mark.execution { fill: #2a7a2a; }
.mark.excess, .mark.unposted, .mark.posted-twice, .mark.unexecuted, .mark.refused { fill: #d00020; stroke: #000; stroke-width: 1; }
.mark.named { fill: #6a3d9a; stroke: #000; stroke-width: 1; }
.on-mark { fill: #fff; font-weight: bold; pointer-events: none; }
.mark.missing { fill: none; stroke: #d00020; stroke-width: 3; }
.mark.glyph { fill: #444; font-weight: bold; }
.axis { stroke: #bbb; }
table { border-collapse: collapse; margin-top: 1em; font: 13px ui-monospace, monospace; }
td, th { border-bottom: 1px solid #eee; padding: .2em .6em; text-align: left; vertical-align: top; }
tr:target { background: #fff3b0; }
tr.hot td:first-child { color: #b00020; font-weight: bold; }
.legend span { margin-right: 1.2em; }
.legend .hot { color: #d00020; }
.legend .hot.named { color: #6a3d9a; }
</style>
</head>
<body>
<h1>{{.F.Check}}</h1>
<p class="claim">{{.F.Claim}}</p>
{{if eq .F.Harm "contract"}}<p class="contract">✓ {{.F.Explain}}</p>{{else}}<p class="harm">✗ {{.F.Harm}}: {{.F.Explain}}</p>{{end}}
<pre class="got">{{.F.Got}}</pre>
{{with .F.Also}}<p class="harm also">✗ also {{.Harm}}: {{.Explain}}</p>
<pre class="got also">{{.Got}}</pre>
{{end}}<p>reproduce: <code class="reproduce">{{.F.Reproduce}}</code></p>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="timeline of {{.F.Check}}">
{{range .Ticks}}<line class="axis" x1="{{.X}}" y1="20" x2="{{.X}}" y2="{{$.Height}}"/><text x="{{.X}}" y="14" text-anchor="middle">{{.Label}}</text>
{{end}}{{range $i, $l := .Lanes}}<g class="lane{{if .Lab}} lab{{end}}{{if .Hot}} hot{{end}}" data-lane="{{.Label}}">
<rect class="stripe" x="0" y="{{.Y}}" width="{{$.Width}}" height="24"/>
<text class="lane-label" x="6" y="{{.Y}}" dy="17">{{.Label}}</text>
{{range .Bars}}<a href="#{{.ID}}"><rect class="bar{{if .Cut}} cut{{else if .Lost}} lost{{end}}" data-attempt="{{.ID}}" x="{{.X}}" y="{{$l.Y}}" width="{{.W}}" height="16" transform="translate(0 4)"><title>{{.Title}}</title></rect></a>
{{end}}{{range .Marks}}{{if eq .Kind "execution"}}<circle class="mark execution" cx="{{.X}}" cy="{{$l.Y}}" r="6" transform="translate(0 12)"><title>{{.Title}}</title></circle>
{{else if eq .Kind "missing"}}<circle class="mark missing" cx="{{.X}}" cy="{{$l.Y}}" r="9" transform="translate(0 12)"><title>{{.Title}}</title></circle>
{{else if .Highlight}}<circle class="mark {{.Kind}}" cx="{{.X}}" cy="{{$l.Y}}" r="9" transform="translate(0 12)"><title>{{.Title}}</title></circle><text class="on-mark" x="{{.X}}" y="{{$l.Y}}" dy="17" text-anchor="middle">{{.Glyph}}</text>
{{else}}<text class="mark glyph" x="{{.X}}" y="{{$l.Y}}" dy="17" text-anchor="middle">{{.Glyph}}<title>{{.Title}}</title></text>
{{end}}{{end}}<text x="{{$.Width}}" y="{{.Y}}" dx="-6" dy="17" text-anchor="end">{{.Answer}}</text>
</g>
{{end}}</svg>
{{if .Hidden}}<p class="hidden">{{.Hidden}} more client lanes not drawn: {{.HiddenDetail}}</p>{{end}}
<p class="legend"><span>▬ a request, from its send to its answer (orange: cut on the wire; grey: no answer)</span>{{if .Executions}}<span>● an execution</span>{{end}}{{range .Highlights}}<span class="hot {{.Class}}">{{printf "%c" .Glyph}} {{.Legend}}</span>{{end}}{{if .Missing}}<span class="hot">◯ told it ran; it never did</span>{{end}}{{range .Marks}}<span>{{.}}</span>{{end}}</p>
{{if .Processes}}<p class="processes">{{.Processes}}</p>{{end}}
<table>
<tr><th>request</th><th>client</th><th>sent at</th><th>answered at</th><th>sent</th><th>got</th></tr>
{{range .Rows}}<tr id="{{.ID}}"{{if .Hot}} class="hot"{{end}}><td>{{.ID}}</td><td>{{.Client}}</td><td>{{.Start}} ms</td><td>{{.End}} ms</td><td>{{.Sent}}</td><td>{{.Got}}</td></tr>
{{end}}</table>
</body>
</html>
`))
