package timeline

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixture is a recorded history and the finding it is read for.
type fixture struct {
	Finding Finding `json:"finding"`
	History History `json:"history"`
}

func load(t *testing.T, name string) fixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func focus(t *testing.T, name string, lanes int) View {
	t.Helper()
	f := load(t, name)
	v, ok := f.History.Focus(f.Finding, lanes)
	if !ok {
		t.Fatalf("%s: no timeline for the finding", name)
	}
	return v
}

// TestText_Golden draws fixed histories: a double (two executions of one
// operation among five clients, three lanes drawn) and a loss (a client
// told 201 for an operation that never ran).
func TestText_Golden(t *testing.T) {
	for _, name := range []string{"double", "lost"} {
		t.Run(name, func(t *testing.T) {
			got := Text(focus(t, name, 3), TextOptions{})
			golden := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the timeline differs from %s (go test -update rewrites it):\n%s\nwant:\n%s", golden, got, want)
			}
			for _, l := range strings.Split(got, "\n") {
				if n := utf8.RuneCountInString(l); n > 100 {
					t.Errorf("a line of %d columns, more than 100: %q", n, l)
				}
			}
		})
	}
}

func TestFocus_HighlightsTheFindingsExecutionsOnTheirLanes(t *testing.T) {
	v := focus(t, "double", 10)
	hot := map[string]int{}
	for _, l := range v.Lanes {
		if l.Label == "check" {
			t.Errorf("the lane of another operation is drawn: %+v", l)
		}
		for _, m := range l.Marks {
			if m.Highlight {
				hot[l.Label]++
			}
		}
	}
	if want := map[string]int{"client 1": 1, "client 2": 1}; !equalCounts(hot, want) {
		t.Errorf("highlighted marks by lane: %v, want %v", hot, want)
	}
	for _, l := range v.Lanes {
		for _, m := range l.Marks {
			if m.Kind == Clock {
				t.Errorf("the clock moved before the first request is drawn on %s", l.Label)
			}
		}
	}
}

func TestFocus_HighlightsTheExecutionsOfTheNamedResources(t *testing.T) {
	f := load(t, "double")
	f.Finding.Excess, f.Finding.Refs = nil, []string{"tr_2"}
	v, ok := f.History.Focus(f.Finding, 10)
	if !ok {
		t.Fatal("no timeline for a finding about transfer tr_2")
	}
	for _, l := range v.Lanes {
		if l.highlighted() != (l.Label == "client 2") {
			t.Errorf("lane %s highlighted: %v; only tr_2's (client 2) should be", l.Label, l.highlighted())
		}
	}
}

func TestFocus_KeepsTheHighlightedLanesAndCountsTheRest(t *testing.T) {
	v := focus(t, "double", 2)
	var labels []string
	for _, l := range v.Lanes {
		if !l.Lab {
			labels = append(labels, l.Label)
		}
	}
	if !slices.Equal(labels, []string{"client 1", "client 2"}) {
		t.Errorf("client lanes %v, want the two that executed", labels)
	}
	if want := map[string]int{"201": 1, "409 duplicate-request": 1, "cut": 1}; !equalCounts(v.Hidden, want) {
		t.Errorf("hidden lanes %v, want %v", v.Hidden, want)
	}
}

func TestFocus_ABarriersLanesReadInTheirClientsOrder(t *testing.T) {
	f := load(t, "double")
	at := f.History.Attempts[4].Start
	for i := range f.History.Attempts {
		f.History.Attempts[i].Start = at // released together
		f.History.Attempts[i].Client = fmt.Sprintf("client %d", 12-i)
	}
	v, _ := f.History.Focus(f.Finding, 10)
	var labels []string
	for _, l := range v.Lanes {
		if !l.Lab {
			labels = append(labels, l.Label)
		}
	}
	if want := []string{"client 8", "client 9", "client 10", "client 11", "client 12"}; !slices.Equal(labels, want) {
		t.Errorf("lanes %q, want %q", labels, want)
	}
}

// TestPickLanes_AReleaseStraddlingAGrainReadsInItsClientsOrder: lanes
// whose first sends follow each other within a grain are one release,
// read by client number, however far the release spreads; a wider gap
// starts the next. Slots of a grain cut from the first send split the
// release below into clients 11 and 12, then 9 and 10, then 8.
func TestPickLanes_AReleaseStraddlingAGrainReadsInItsClientsOrder(t *testing.T) {
	const grain = 10 * time.Millisecond
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lane := func(client int, after time.Duration) Lane {
		return Lane{Label: fmt.Sprintf("client %d", client), Attempts: []Attempt{{Start: at.Add(after)}}}
	}
	clients := []Lane{lane(1, 100*time.Millisecond)}
	for i, c := range []int{12, 11, 10, 9, 8} {
		clients = append(clients, lane(c, time.Duration(i)*6*time.Millisecond))
	}
	var labels []string
	for _, l := range pickLanes(clients, 10, map[string]int{}, grain) {
		labels = append(labels, l.Label)
	}
	if want := []string{"client 8", "client 9", "client 10", "client 11", "client 12", "client 1"}; !slices.Equal(labels, want) {
		t.Errorf("lanes %q, want %q", labels, want)
	}
}

func TestFocus_SplitsOverlappingRequestsOfOneClient(t *testing.T) {
	f := load(t, "double")
	for i := range f.History.Attempts {
		f.History.Attempts[i].Client = "check"
	}
	v, _ := f.History.Focus(f.Finding, 10)
	var labels []string
	for _, l := range v.Lanes {
		if !l.Lab {
			labels = append(labels, l.Label)
		}
	}
	if len(labels) != 5 || labels[0] != "check" || labels[1] != "check #2" {
		t.Errorf("lanes %v: five overlapping requests of one client need five lanes", labels)
	}
}

func TestView_StoryNeedsTwoRequestsOrACrash(t *testing.T) {
	f := load(t, "lost")
	f.Finding.Named, f.Finding.Missing = f.Finding.Missing, nil
	if v, _ := f.History.Focus(f.Finding, 10); !v.Story() {
		t.Error("a request, a crash and a retry make no story")
	}
	f.History.Attempts = f.History.Attempts[1:]
	f.History.Events = f.History.Events[3:]
	if v, _ := f.History.Focus(f.Finding, 10); v.Story() {
		t.Errorf("one request on its own makes a story: %+v", v.Lanes)
	}
}

func TestFocus_StartsAtTheFaultArmedJustBeforeTheFirstRequest(t *testing.T) {
	f := load(t, "lost")
	first := f.History.Attempts[0].Start
	armed := first.Add(-2 * time.Millisecond)
	long := first.Add(-time.Second)
	f.History.Events = append(f.History.Events, Event{At: armed, Kind: Armed, Detail: "crash-in-transfer"}, Event{At: long, Kind: Armed})
	v, _ := f.History.Focus(f.Finding, 10)
	if !v.From.Equal(armed) {
		t.Errorf("the view starts %v before the first request, want at the fault armed 2ms before it", first.Sub(v.From))
	}
}

// twoTransfers is a history of two transfers, op-a (tr_a) and op-b
// (tr_b), each executed by a request of the check's, 20 ms apart, and the
// time ms after the first request was sent.
func twoTransfers() (History, func(ms int) time.Time) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	return History{
		Attempts: []Attempt{
			{ID: "a1", Client: "check", Op: "op-a", Start: at(0), End: at(10), Status: 201},
			{ID: "a2", Client: "check", Op: "op-b", Start: at(20), End: at(30), Status: 201},
		},
		Events: []Event{
			{At: at(5), Kind: Execution, Attempt: "a1", Op: "op-a", Ref: "tr_a"},
			{At: at(25), Kind: Execution, Attempt: "a2", Op: "op-b", Ref: "tr_b"},
		},
	}, at
}

// TestFocus_RunsOnToTheRedriveOfItsTransfer: an operator re-drives the
// dead letter of a transfer the finding is about seconds after its
// request answered (S9.redrive); the view runs on to it and draws it on
// the lab's lane, and the legend names it. A redrive of another transfer
// later still, and one of the finding's after a history of nothing,
// leave the view where it was. A recorder that knew no redrive drew the
// transfer alone, and the student never saw the operator's part.
func TestFocus_RunsOnToTheRedriveOfItsTransfer(t *testing.T) {
	h, at := twoTransfers()
	t0 := at(0)
	h.Events = append(h.Events,
		Event{At: at(2000), Kind: Redrive, Ref: "tr_a", Detail: "tr_a, set aside with 400, under key tr_a"},
		Event{At: at(3000), Kind: Redrive, Ref: "tr_b"})
	v, ok := h.Focus(Finding{Harm: "not posted", Refs: []string{"tr_a"}}, 10)
	if !ok || !v.To.Equal(at(2000)) {
		t.Fatalf("the view ends %v after its start, want at the redrive of tr_a, 2s", v.To.Sub(t0))
	}
	if !v.draws(func(m Mark) bool { return m.Kind == Redrive && m.At.Equal(at(2000)) }) {
		t.Errorf("the redrive of tr_a is not drawn: %+v", v.Lanes)
	}
	if got := Text(v, TextOptions{}); !strings.Contains(got, "↻ dead letter sent again") {
		t.Errorf("the legend does not name the redrive:\n%s", got)
	}
	if v, _ := h.Focus(Finding{Harm: "not posted", Refs: []string{"tr_b"}}, 10); !v.To.Equal(at(3000)) {
		t.Errorf("the view of tr_b ends %v after its start, want at its own redrive, 3s", v.To.Sub(t0))
	}
}

// TestFocus_RunsOnToTheWritesRefusedAfterItsRequests: in S9.settle-fails
// the database refuses the relay's writes to the outbox after the
// transfers that made its rows have answered; the view runs on to the
// last one the check noted and draws each on the lab's lane, and the
// legend names them. A view that ended at the last answer drew the
// transfers alone, and never where the relay's mark was refused.
func TestFocus_RunsOnToTheWritesRefusedAfterItsRequests(t *testing.T) {
	h, at := twoTransfers()
	h.Events = append(h.Events,
		Event{At: at(40), Kind: WriteRefused, Detail: "fail-outbox-settle: 1 of the relay's writes to the outbox refused by now, 63 to go"},
		Event{At: at(60), Kind: WriteRefused, Detail: "fail-outbox-settle: 2 of the relay's writes to the outbox refused by now, 62 to go"})
	v, ok := h.Focus(Finding{Harm: "contract", Named: []string{"op-a", "op-b"}}, 10)
	if !ok || !v.To.Equal(at(60)) {
		t.Fatalf("the view ends %v after the first request, want at the last write refused, 60ms", v.To.Sub(at(0)))
	}
	for _, ms := range []int{40, 60} {
		if !v.draws(func(m Mark) bool { return m.Kind == WriteRefused && m.At.Equal(at(ms)) }) {
			t.Errorf("the write refused at %dms is not drawn: %+v", ms, v.Lanes)
		}
	}
	if got := Text(v, TextOptions{}); !strings.Contains(got, "× write refused on a fault") {
		t.Errorf("the legend does not name the writes refused:\n%s", got)
	}
}

func TestFocus_ManyKeysShareOneLane(t *testing.T) {
	f := load(t, "double")
	for i := range f.History.Attempts {
		k := fmt.Sprintf("k-%d", i)
		f.History.Attempts[i].Key = k
		f.History.Events = append(f.History.Events, Event{At: f.History.Attempts[i].Start, Kind: Claim, Key: k})
	}
	v, _ := f.History.Focus(f.Finding, 10)
	var keyLanes []string
	for _, l := range v.Lanes {
		if l.Lab && l.Label != "lab" {
			keyLanes = append(keyLanes, l.Label)
		}
	}
	if len(keyLanes) != 1 || keyLanes[0] != "5 keys" {
		t.Errorf("key lanes %q, want one lane for the five keys", keyLanes)
	}
}

func TestText_ACutRequestKeepsItsMarkBeforeItsRetry(t *testing.T) {
	f := load(t, "lost")
	f.History.Attempts[0].Status, f.History.Attempts[0].Cut, f.History.Attempts[0].Err = 0, true, "connection reset"
	f.History.Attempts[1].Start = f.History.Attempts[0].End
	v, _ := f.History.Focus(f.Finding, 10)
	if lane := strings.Split(Text(v, TextOptions{}), "\n")[2]; !strings.Contains(lane, "╳") {
		t.Errorf("the cut request's mark is gone under its retry's start: %q", lane)
	}
}

// everyMark is a view of one client lane with a request answered, one
// cut on the wire and one that got no answer, and the lab's lane with a
// mark of every kind and of one the timeline does not know.
func everyMark() View {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	attempt := func(id string, from, to int) Attempt {
		return Attempt{ID: id, Client: "client 1", Start: at(from), End: at(to), Status: 201}
	}
	cut, unanswered := attempt("a2", 20, 30), attempt("a3", 40, 50)
	cut.Status, cut.Cut, cut.Err = 0, true, "connection reset"
	unanswered.Status, unanswered.Err = 0, "timeout"
	lab := Lane{Label: "lab", Lab: true}
	for i, kind := range []string{Claim, Takeover, Complete, Release, Forget, Armed, Crash, Restart, Clock, Redrive, WriteRefused, "something new"} {
		lab.Marks = append(lab.Marks, Mark{At: at(5 + 8*i), Kind: kind})
	}
	return View{From: t0, To: at(100), Lanes: []Lane{
		{Label: "client 1", Attempts: []Attempt{attempt("a1", 0, 10), cut, unanswered},
			Marks: []Mark{{At: at(5), Kind: Execution}}},
		lab,
	}}
}

// TestText_TheLegendNamesEveryGlyphDrawnAndNoOther draws every kind of
// mark, a request cut on the wire and one that got no answer: each glyph
// on the lanes is named under them, and a picture without them names
// none of them. A legend typed once missed the lab clock (t), the reset
// (0) and the unanswered request (?).
func TestText_TheLegendNamesEveryGlyphDrawnAndNoOther(t *testing.T) {
	v := everyMark()
	got := Text(v, TextOptions{})
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	var legend []string
	for i, l := range lines {
		if strings.HasPrefix(l, "  $ execution") {
			legend = lines[i:]
		}
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a line of %d columns, more than 100: %q", n, l)
		}
	}
	named := "  " + strings.Join(legend, "  ")
	for _, l := range lines[2 : len(lines)-len(legend)] {
		for _, r := range strings.Split(l, "│")[1] {
			if !strings.ContainsRune(" ├─┤", r) && !strings.Contains(named, "  "+string(r)+" ") {
				t.Errorf("%c is drawn and the legend does not name it:\n%s", r, got)
			}
		}
	}
	bare := Text(View{From: v.From, To: v.To, Lanes: v.Lanes[:1]}, TextOptions{})
	if !strings.HasSuffix(bare, "  $ execution\n  ╳ cut on the wire  ? no answer\n") {
		t.Errorf("without the lab's lane the legend still names its marks, or not the requests':\n%s", bare)
	}
}

// namesOnlyDrawn fails t for each glyph the legend names that no lane
// draws.
func namesOnlyDrawn(t *testing.T, lanes []string, legend, got string) {
	t.Helper()
	drawn := ""
	for _, l := range lanes {
		if parts := strings.Split(l, "│"); len(parts) == 3 {
			drawn += parts[1]
		}
	}
	for entry := range strings.SplitSeq(legend, "  ") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		if g, _ := utf8.DecodeRuneInString(entry); !strings.ContainsRune(drawn, g) {
			t.Errorf("the legend names %q, and no lane draws %c:\n%s", entry, g, got)
		}
	}
}

// TestText_TheLegendNamesNoExecutionWhereOnlyTheFindingsAreDrawn: every
// execution of a concurrent duplicate is the finding's ✗ (make stage-1
// RUN=S1.concurrent-duplicates); the legend named "$ execution" all the
// same, and the page "● an execution", with none drawn.
func TestText_TheLegendNamesNoExecutionWhereOnlyTheFindingsAreDrawn(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var lanes []Lane
	for i := range 3 {
		lanes = append(lanes, Lane{Label: fmt.Sprintf("client %d", i+1),
			Attempts: []Attempt{{ID: fmt.Sprintf("a%d", i), Client: fmt.Sprintf("client %d", i+1), Start: at(0), End: at(20 + 10*i), Status: 201}},
			Marks:    []Mark{{At: at(10 + 10*i), Kind: Execution, Highlight: true}}})
	}
	v := View{Finding: Finding{Harm: "double", Excess: []string{"op-1"}}, From: t0, To: at(50), Lanes: lanes}
	got := Text(v, TextOptions{})
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if !strings.Contains(got, ranTooOften.Legend) || strings.Contains(got, "$ execution") {
		t.Errorf("the legend does not name the finding's ✗ alone:\n%s", got)
	}
	namesOnlyDrawn(t, lines[2:5], strings.Join(lines[5:], "  "), got)
	var b bytes.Buffer
	if err := HTML(&b, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "● an execution") {
		t.Errorf("the page names a plain execution it does not draw")
	}
	v.Lanes[0].Marks[0].Highlight = false
	if got := Text(v, TextOptions{}); !strings.Contains(got, "  $ execution  ✗ ") {
		t.Errorf("a plain execution drawn beside the finding's is not named first:\n%s", got)
	}
	b.Reset()
	if err := HTML(&b, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "● an execution") {
		t.Errorf("the page does not name the plain execution it draws")
	}
}

// TestHTML_TheLegendNamesEveryGlyphDrawnAndNoOther: each glyph the page
// draws on its lanes is named in its legend, and a page without the lab's
// lane names none of the lab's marks. A legend typed once named the lab
// clock (t) and the reset (0) only in their hover text.
func TestHTML_TheLegendNamesEveryGlyphDrawnAndNoOther(t *testing.T) {
	v := everyMark()
	page := func(v View) (glyphs []string, legend string) {
		var b bytes.Buffer
		if err := HTML(&b, v); err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`class="mark glyph"[^>]*>([^<]+)<title>`).FindAllStringSubmatch(b.String(), -1) {
			glyphs = append(glyphs, m[1])
		}
		l := regexp.MustCompile(`(?s)<p class="legend">(.*?)</p>`).FindStringSubmatch(b.String())
		if l == nil {
			t.Fatalf("no legend:\n%s", b.String())
		}
		return glyphs, l[1]
	}
	glyphs, legend := page(v)
	if len(glyphs) != len(v.Lanes[1].Marks) {
		t.Fatalf("%d glyphs drawn (%q), want the lab lane's %d", len(glyphs), glyphs, len(v.Lanes[1].Marks))
	}
	for _, g := range glyphs {
		if !strings.Contains(legend, "<span>"+g+" ") {
			t.Errorf("%s is drawn and the legend does not name it: %s", g, legend)
		}
	}
	if _, bare := page(View{From: v.From, To: v.To, Lanes: v.Lanes[:1]}); strings.Contains(bare, "key claimed") || strings.Contains(bare, "lab clock") {
		t.Errorf("without the lab's lane the legend still names its marks: %s", bare)
	}
}

// TestText_ARetrySentTheMomentItsRequestWasCutIsABarOfItsOwn: a client
// whose first request was cut retries at once, in the column where the
// cut request ended. Drawn on one row, the two read as one bar ending in
// the retry's 409, with no mark of the cut (lab replay --op of a response
// withheld); each gets a bar of its own, the cut marked though the
// execution came in its last column, and the header still counts one
// client.
func TestText_ARetrySentTheMomentItsRequestWasCutIsABarOfItsOwn(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	first := Attempt{ID: "a1", Client: "original", Op: "op-1", Start: t0, End: t0.Add(50 * time.Millisecond), Err: "connection reset", Cut: true}
	retry := Attempt{ID: "a2", Client: "original", Op: "op-1", Start: first.End.Add(time.Microsecond), End: t0.Add(100 * time.Millisecond),
		Status: 409, Problem: duplicateRequest}
	h := History{Attempts: []Attempt{first, retry},
		Events: []Event{{At: first.End.Add(-100 * time.Microsecond), Kind: Execution, Attempt: "a1", Op: "op-1"}}}
	v, _ := h.Focus(Finding{Named: []string{"op-1"}}, TextLanes)
	got := Text(v, TextOptions{})
	var bars []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "├") {
			bars = append(bars, l)
		}
	}
	if len(bars) != 2 || strings.Count(got, "├") != 2 {
		t.Fatalf("want two bars, each on a row of its own:\n%s", got)
	}
	if !strings.Contains(bars[0], "╳") || !strings.Contains(bars[0], "$") || !strings.HasSuffix(bars[0], "│ cut") {
		t.Errorf("the cut request's row lacks its cut, its execution or its answer: %q", bars[0])
	}
	if !strings.HasPrefix(bars[1], "  ↳ original") || !strings.Contains(bars[1], "409 duplicate") || strings.Contains(bars[1], "$") {
		t.Errorf("the retry's row is not the same client's, or not its own: %q", bars[1])
	}
	if !strings.Contains(got, "1 client involved") {
		t.Errorf("one client, counted otherwise:\n%s", got)
	}
}

func TestText_ColorKeepsTheGlyphs(t *testing.T) {
	v := focus(t, "double", 3)
	colored := Text(v, TextOptions{Color: true})
	if !strings.Contains(colored, "\x1b[1;31m✗\x1b[0m") {
		t.Errorf("no red ✗ in the coloured timeline:\n%s", colored)
	}
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored, "")
	if plain != Text(v, TextOptions{}) {
		t.Errorf("without its colours the timeline reads otherwise:\n%s", plain)
	}
}

// TestHTML_IsSelfContainedWithLanesHighlightsAndReproduce parses the page
// and finds a lane per client, key and lab row, the two executions of the
// double highlighted, a linked row for each request, the finding and the
// command that reproduces it, and nothing that reaches the network.
func TestHTML_IsSelfContainedWithLanesHighlightsAndReproduce(t *testing.T) {
	v := focus(t, "double", HTMLLanes)
	var buf bytes.Buffer
	if err := HTML(&buf, v); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var lanes []string
	var excess, bars, rows int
	var reproduce, harm string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		class := attr(n, "class")
		switch {
		case n.Data == "script" || n.Data == "iframe" || n.Data == "img" || n.Data == "link":
			t.Errorf("a <%s> element: the page must stand alone", n.Data)
		case attr(n, "src") != "":
			t.Errorf("<%s src=%q>: the page must fetch nothing", n.Data, attr(n, "src"))
		case n.Data == "a" && !strings.HasPrefix(attr(n, "href"), "#"):
			t.Errorf("a link out of the page: %q", attr(n, "href"))
		}
		switch {
		case n.Data == "g" && strings.HasPrefix(class, "lane"):
			lanes = append(lanes, attr(n, "data-lane"))
		case n.Data == "circle" && class == "mark excess":
			excess++
		case n.Data == "rect" && strings.HasPrefix(class, "bar"):
			bars++
			if n.Parent.Data != "a" || n.Parent.Parent == nil || attr(n.Parent, "href") != "#"+attr(n, "data-attempt") {
				t.Errorf("bar %s does not link to its row", attr(n, "data-attempt"))
			}
		case n.Data == "tr" && attr(n, "id") != "":
			rows++
		case n.Data == "code" && class == "reproduce":
			reproduce = text(n)
		case n.Data == "p" && class == "harm":
			harm = text(n)
		}
	}
	wantLanes := []string{"client 1", "client 2", "client 3", "client 4", "client 5", "key k-1", "lab"}
	if !slices.Equal(lanes, wantLanes) {
		t.Errorf("lanes %q, want %q", lanes, wantLanes)
	}
	if excess != 2 {
		t.Errorf("%d highlighted executions, want the double's two", excess)
	}
	if bars != 5 || rows != 5 {
		t.Errorf("%d bars and %d rows, want one of each per request (5)", bars, rows)
	}
	if reproduce != v.Finding.Reproduce {
		t.Errorf("reproduce %q, want %q", reproduce, v.Finding.Reproduce)
	}
	if !strings.Contains(harm, "double") || !strings.Contains(harm, v.Finding.Explain) {
		t.Errorf("the finding at the top reads %q", harm)
	}
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// harmCase is a finding of one harm drawn over a fixture: what its
// highlighted marks must show and say, in the terminal and in HTML.
type harmCase struct {
	harm, fixture string
	// refs names transfers the finding is about (tr_2 is client 2's).
	refs []string
	// glyph is drawn on client lane, and legend and title are what the
	// legend and the mark's hover text must say; "" when nothing is
	// highlighted on an execution.
	lane          string
	glyph         rune
	legend, title string
	// ranTooOften says the words "more often than asked" belong.
	ranTooOften bool
	// named says the finding names its operations (none ran too often).
	named bool
}

var harmCases = []harmCase{
	{harm: "double", fixture: "double", lane: "client 1", glyph: '✗',
		legend: "✗ execution of the finding (ran more often than asked)", title: "executed: its operation ran more often than asked", ranTooOften: true},
	{harm: "moved though refused", fixture: "double", lane: "client 1", glyph: '✗',
		legend: "✗ execution of the finding (ran though its client was told it did not)", title: "executed though its client was told it did not"},
	{harm: "not posted", fixture: "double", refs: []string{"tr_2"}, lane: "client 2", glyph: '⊘',
		legend: "⊘ transfer executed, never posted to the core ledger", title: "executed, and the core ledger never posted it"},
	{harm: "not_posted", fixture: "double", refs: []string{"tr_2"}, lane: "client 2", glyph: '⊘',
		legend: "⊘ transfer executed, never posted to the core ledger", title: "executed, and the core ledger never posted it"},
	{harm: "posted twice", fixture: "double", refs: []string{"tr_2"}, lane: "client 2", glyph: '✗',
		legend: "✗ transfer executed once, posted more than once", title: "executed once, and the core ledger posted it more than once"},
	{harm: "posted though not executed", fixture: "double", refs: []string{"tr_2"}, lane: "client 2", glyph: '◇',
		legend: "◇ transfer posted to the core ledger, never executed", title: "posted to the core ledger, and it never executed"},
	{harm: "lost", fixture: "lost", lane: "check", glyph: '○',
		legend: "○ told it ran; never did", title: "told it ran; it never executed"},
	{harm: "contract", fixture: "double", named: true},
	{harm: "contract", fixture: "double", refs: []string{"tr_2"}, lane: "client 2", glyph: '◆',
		legend: "◆ execution the finding names", title: "executed: the finding names it", named: true},
	// Client 3 was told 409 duplicate-request; the operation ran for
	// others, so the words speak of the refused request alone.
	{harm: "told duplicate, never ran", fixture: "double", lane: "client 3", glyph: '⊗', named: true,
		legend: "⊗ told its request was a duplicate (409); that request never ran",
		title:  "told it was a duplicate of a request already done; this request never ran"},
	{harm: "told_duplicate", fixture: "double", lane: "client 3", glyph: '⊗', named: true,
		legend: "⊗ told its request was a duplicate (409); that request never ran",
		title:  "told it was a duplicate of a request already done; this request never ran"},
}

// harmView draws c's fixture as a finding of c's harm: the double's
// operation as excess for the harms that ran too often, the named
// transfers for the core ledger's, and the operation named without a
// highlight for a contract difference.
func harmView(t *testing.T, c harmCase) View {
	t.Helper()
	f := load(t, c.fixture)
	f.Finding.Harm = c.harm
	if c.named {
		f.Finding.Named, f.Finding.Excess, f.Finding.Refs = f.Finding.Excess, nil, c.refs
	}
	v, ok := f.History.Focus(f.Finding, 10)
	if !ok {
		t.Fatalf("no timeline for %q", c.harm)
	}
	return v
}

// TestText_TheHighlightSaysTheHarm: each harm's highlighted mark has a
// glyph and a legend of its own, and only a double-like finding says that
// anything ran more often than asked.
func TestText_TheHighlightSaysTheHarm(t *testing.T) {
	for _, c := range harmCases {
		t.Run(fmt.Sprintf("%s %v", c.harm, c.refs), func(t *testing.T) {
			got := Text(harmView(t, c), TextOptions{})
			lines := strings.Split(got, "\n")
			if c.lane != "" {
				i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), c.lane+" ") })
				if i < 0 || !strings.ContainsRune(lines[i], c.glyph) {
					t.Errorf("no %c on the lane of %s:\n%s", c.glyph, c.lane, got)
				}
			}
			// The legend is what follows the lanes (and the line that
			// counts those not drawn).
			i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "│") })
			for i < len(lines) && (strings.Contains(lines[i], "│") || strings.HasPrefix(lines[i], "  + ")) {
				i++
			}
			legend := strings.Join(lines[i:], "  ")
			namesOnlyDrawn(t, lines[:i], legend, got)
			if c.legend != "" && !strings.Contains(legend, c.legend) {
				t.Errorf("the legend reads %q, want it to say %q", legend, c.legend)
			}
			for _, h := range []Highlight{ranTooOften, ranRefused, notPosted, postedTwice, unexecuted, toldDuplicate, named} {
				if c.legend == "" && strings.Contains(legend, h.Legend) {
					t.Errorf("nothing is highlighted, and the legend reads %q", legend)
				}
			}
			if strings.Contains(got, "more often than asked") != c.ranTooOften {
				t.Errorf("\"more often than asked\" said: %v, want %v:\n%s", !c.ranTooOften, c.ranTooOften, got)
			}
		})
	}
}

// TestHTML_TheHighlightSaysTheHarm: the page's legend and the hover text
// of each highlighted mark say what the finding is.
func TestHTML_TheHighlightSaysTheHarm(t *testing.T) {
	for _, c := range harmCases {
		t.Run(fmt.Sprintf("%s %v", c.harm, c.refs), func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, harmView(t, c)); err != nil {
				t.Fatal(err)
			}
			doc, err := html.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var legend string
			var titles []string
			for n := range doc.Descendants() {
				if n.Type != html.ElementNode {
					continue
				}
				switch class := attr(n, "class"); {
				case n.Data == "p" && class == "legend":
					legend = text(n)
				case n.Data == "circle" && strings.HasPrefix(class, "mark ") && class != "mark execution":
					titles = append(titles, text(n))
				}
			}
			wantLegend := c.legend
			if c.glyph == '○' {
				wantLegend = "◯ told it ran; it never did"
			}
			if !strings.Contains(legend, wantLegend) {
				t.Errorf("the legend reads %q, want it to say %q", legend, wantLegend)
			}
			if c.title == "" && len(titles) > 0 {
				t.Errorf("nothing should be highlighted; highlighted marks say %q", titles)
			}
			if c.title != "" && (len(titles) == 0 || !strings.HasPrefix(titles[0], c.title)) {
				t.Errorf("highlighted marks say %q, want %q", titles, c.title)
			}
			if strings.Contains(legend+strings.Join(titles, ""), "more often than asked") != c.ranTooOften {
				t.Errorf("\"more often than asked\" said: %v, want %v: %q %q", !c.ranTooOften, c.ranTooOften, legend, titles)
			}
		})
	}
}

// TestFocus_ToldDuplicateMarksTheRefusedAnswersOnly: a finding that a
// request told 409 duplicate-request never ran highlights that answer,
// on the lanes of the clients it names when it names them, and none of
// the operation's executions (which ran for other requests). It catches
// the generic mark on the named operation's executions, a 409
// request-in-progress taken for a refusal, and a finding of one client
// drawn on every lane.
func TestFocus_ToldDuplicateMarksTheRefusedAnswersOnly(t *testing.T) {
	f := load(t, "double")
	f.Finding.Harm, f.Finding.Named, f.Finding.Excess = "told_duplicate", f.Finding.Excess, nil
	f.History.Attempts = append(f.History.Attempts, Attempt{ID: "a7", Client: "client 6", Method: "POST", Path: "/transfers", Key: "k-1", Op: "op-0b4f",
		Start: f.History.Attempts[0].Start, End: f.History.Attempts[0].End, Status: 409, Problem: "/problems/request-in-progress"})
	refused := func(v View) []string {
		var lanes []string
		for _, l := range v.Lanes {
			for _, m := range l.Marks {
				switch {
				case m.Kind == Refused && m.Highlight:
					lanes = append(lanes, l.Label)
				case m.Highlight:
					t.Errorf("%s: a %s mark is highlighted", l.Label, m.Kind)
				}
			}
		}
		return lanes
	}
	v, ok := f.History.Focus(f.Finding, 10)
	if got := refused(v); !ok || !slices.Equal(got, []string{"client 3"}) {
		t.Errorf("refusals highlighted on %v, want client 3's 409 duplicate-request alone", got)
	}
	f.Finding.Clients = []string{"client 5"}
	v, _ = f.History.Focus(f.Finding, 10)
	if got := refused(v); len(got) != 0 {
		t.Errorf("a finding about client 5 highlights refusals on %v", got)
	}
}

// TestFocus_ToldDuplicateMarksOnlyDuplicateRequest: of the 409s a
// told-duplicate finding's operation met, only duplicate-request is
// marked ⊗; stage 8's duplicate-reference (an invoice already paid) is
// not a request told it already ran. It catches ⊗ put on every 409 that
// is not request-in-progress.
func TestFocus_ToldDuplicateMarksOnlyDuplicateRequest(t *testing.T) {
	f := load(t, "double")
	f.Finding.Harm, f.Finding.Named, f.Finding.Excess = "told_duplicate", f.Finding.Excess, nil
	for i, a := range f.History.Attempts {
		if a.Status == 409 {
			f.History.Attempts[i].Problem = "/problems/duplicate-reference"
		}
	}
	v, ok := f.History.Focus(f.Finding, 10)
	if !ok {
		t.Fatal("no timeline for the finding")
	}
	for _, l := range v.Lanes {
		for _, m := range l.Marks {
			if m.Kind == Refused {
				t.Errorf("%s: a 409 duplicate-reference is marked as a request told it was a duplicate (%s)", l.Label, m.Detail)
			}
		}
	}
	if got := Text(v, TextOptions{}); strings.ContainsRune(got, '⊗') {
		t.Errorf("a 409 duplicate-reference is drawn ⊗:\n%s", got)
	}
}

// TestServerErrorsOf_TheFindingsRequestsAlone: the causes behind the 5xx
// answers of the finding's requests are its own (matched by the attempt
// each answered, or by the operation a request without one named); those
// of another round's operation are not; a finding that names no
// operation the history holds gets every cause.
func TestServerErrorsOf_TheFindingsRequestsAlone(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	h := History{
		Attempts: []Attempt{
			{ID: "a1", Client: "check", Op: "op-a", Start: t0, End: t0.Add(time.Millisecond), Status: 500},
			{ID: "a2", Client: "check", Op: "op-b", Start: t0.Add(2 * time.Millisecond), End: t0.Add(3 * time.Millisecond), Status: 500},
		},
		ServerErrors: []ServerError{
			{Attempt: "a1", Op: "op-a", Line: "round 1"},
			{Attempt: "a2", Op: "op-b", Line: "round 2"},
			{Op: "op-b", Line: "round 2, no attempt named"},
		},
	}
	for _, c := range []struct {
		f    Finding
		want []string
	}{
		{Finding{Missing: []string{"op-b"}}, []string{"round 2", "round 2, no attempt named"}},
		{Finding{Named: []string{"op-a"}}, []string{"round 1"}},
		{Finding{Named: []string{"op-unknown"}}, []string{"round 1", "round 2", "round 2, no attempt named"}},
	} {
		if got := h.ServerErrorsOf(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}
}

// TestTimeline_ACompletedKeyDeletedIsForgottenNotPurged: a completed key
// row deleted is all the key table shows; the mutant
// expired-key-forgotten-by-key-string deletes another customer's live key
// in a claim, with no purge run, and the timeline called it "key purged",
// sending the student after the purge. The terminal and the page say the
// key was forgotten, and neither says purged.
func TestTimeline_ACompletedKeyDeletedIsForgottenNotPurged(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	v := View{From: t0, To: at(100), Lanes: []Lane{
		{Label: "client 1", Attempts: []Attempt{{ID: "a1", Client: "client 1", Start: at(0), End: at(10), Status: 201}}},
		{Label: "key k-1", Lab: true, Marks: []Mark{{At: at(5), Kind: Complete}, {At: at(50), Kind: Forget}}},
	}}
	text := Text(v, TextOptions{})
	if !strings.Contains(text, "f key forgotten") || strings.Contains(text, "purge") {
		t.Errorf("the terminal legend of a completed key deleted:\n%s\nwant \"f key forgotten\", and no purge", text)
	}
	var page bytes.Buffer
	if err := HTML(&page, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "f key forgotten") || strings.Contains(page.String(), "key purged") {
		t.Errorf("the page calls a completed key deleted purged, or does not say it was forgotten:\n%s", page.String())
	}
}

// TestServerErrorsOf_KeepsARequestThatNamesNoOperation: S7.save-beside-
// transfers holds a transfer, which names its operation, on the core and
// saves settings beside it; the save, which names none, is answered 500
// and fails the check. The finding names the transfer's operation, whose
// attempts the save is not among; the save's cause is the one the student
// needs, and no other round's operation made it. A server line that left
// it out said nothing of the failing request, where before every cause
// was listed; another round's transfer's 500 stays out.
func TestServerErrorsOf_KeepsARequestThatNamesNoOperation(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	h := History{
		Attempts: []Attempt{
			{ID: "a1", Client: "check", Method: "POST", Op: "op-a", Start: t0, End: t0.Add(time.Millisecond), Status: 500},
			{ID: "a2", Client: "check", Method: "POST", Op: "op-b", Start: t0.Add(2 * time.Millisecond), End: t0.Add(5 * time.Millisecond), Status: 201},
			{ID: "a3", Client: "check", Method: "PUT", Start: t0.Add(3 * time.Millisecond), End: t0.Add(4 * time.Millisecond), Status: 500},
		},
		ServerErrors: []ServerError{
			{Attempt: "a1", Op: "op-a", Line: "POST /transfers → 500: another round"},
			{Attempt: "a3", Line: "PUT /accounts/acc_b/settings → 500: database is locked"},
		},
	}
	want := []string{"PUT /accounts/acc_b/settings → 500: database is locked"}
	if got := h.ServerErrorsOf(Finding{Named: []string{"op-b"}}); !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestFocus_EachScopeOfAKeyStringHasItsLane: two customers send one key
// string (S5.customers-scoped), and each one's rows are a key of its
// own: the lanes that drew them as one showed a claim and a forgetting
// of one key where two customers' keys each had theirs. Each scope gets a
// lane, which says at its end the customer that tells it apart from the
// other lanes of its key string (a terminal cuts a label short); a key
// string one scope holds says nothing more.
func TestFocus_EachScopeOfAKeyStringHasItsLane(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := History{
		Attempts: []Attempt{
			{ID: "a1", Client: "check", Key: "k-shared", Op: "op-1", Start: at(0), End: at(10), Status: 201},
			{ID: "a2", Client: "check", Key: "k-own", Op: "op-1", Start: at(20), End: at(30), Status: 201},
		},
		Events: []Event{
			{At: at(2), Kind: Claim, Key: "k-shared", Customer: "cus_3kqa9d2x", Route: "/transfers"},
			{At: at(3), Kind: Claim, Key: "k-own", Customer: "cus_3kqa9d2x", Route: "/transfers"},
			{At: at(4), Kind: Claim, Key: "k-shared", Customer: "cus_8fw0zz1m", Route: "/transfers"},
			{At: at(6), Kind: Forget, Key: "k-shared", Customer: "cus_3kqa9d2x", Route: "/transfers"},
		},
	}
	v, ok := h.Focus(Finding{Harm: "double", Excess: []string{"op-1"}}, 10)
	if !ok {
		t.Fatal("no timeline")
	}
	var got []string
	for _, l := range v.Lanes {
		if l.Lab {
			got = append(got, fmt.Sprintf("%s|%s|%d", l.Label, l.Scope, len(l.Marks)))
		}
	}
	want := []string{"key k-shared|cus_3kqa9d2x|2", "key k-shared|cus_8fw0zz1m|1", "key k-own||1"}
	if !slices.Equal(got, want) {
		t.Errorf("key lanes (label|scope|marks) %q, want %q", got, want)
	}
	text := Text(v, TextOptions{})
	for _, scope := range []string{"│ cus_3kqa9d2x\n", "│ cus_8fw0zz1m\n"} {
		if !strings.Contains(text, scope) {
			t.Errorf("the terminal does not end a key lane with %q:\n%s", scope, text)
		}
	}
}

// TestText_MarksInOneColumnDrawSideBySide: a kill and the restart 9 ms
// later fall in one column of a 600 ms picture, and so do a key's claim
// and its completion; the terminal drew the later mark alone, where the
// page drew both. Each is drawn, the later one in the next column, and a
// mark alone in its column stays where it falls.
func TestText_MarksInOneColumnDrawSideBySide(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	v := View{From: t0, To: at(600), Lanes: []Lane{
		{Label: "client 1", Attempts: []Attempt{{ID: "a1", Client: "client 1", Start: at(0), End: at(600), Status: 201}}},
		{Label: "key k-1", Lab: true, Marks: []Mark{{At: at(101), Kind: Complete}, {At: at(100), Kind: Claim}, {At: at(400), Kind: Release}}},
		{Label: "lab", Lab: true, Marks: []Mark{{At: at(300), Kind: Crash}, {At: at(309), Kind: Restart}}},
	}}
	lines := strings.Split(Text(v, TextOptions{}), "\n")
	// Columns 9 (100 ms of 600, on 60 columns), 39 and 29.
	for _, c := range []struct {
		lane  string
		col   int
		marks string
	}{{"key k-1", 9, "cd"}, {"key k-1", 39, "r"}, {"lab", 29, "†↑"}} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, c.lane) })
		if i < 0 {
			t.Fatalf("no lane %s", c.lane)
		}
		_, area, _ := strings.Cut(lines[i], "│")
		if got := string([]rune(area)[c.col:]); !strings.HasPrefix(got, c.marks) {
			t.Errorf("lane %s draws %q from column %d, want %q:\n%s", c.lane, got, c.col, c.marks, strings.Join(lines, "\n"))
		}
	}
}

// TestText_SaysWhichProcessRanEachExecution: in a round that runs the
// server as two processes, the executions of a double ran one in each;
// the legend says which lane's ran in which, and the page says it too. A
// picture whose executions ran in one process, or in a server alone,
// says nothing of processes.
func TestText_SaysWhichProcessRanEachExecution(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	view := func(first, second int) View {
		return View{Finding: Finding{Harm: "double"}, From: t0, To: at(100), Lanes: []Lane{
			{Label: "in flight", Attempts: []Attempt{{ID: "a1", Client: "in flight", Start: at(0), End: at(90), Status: 201}},
				Marks: []Mark{{At: at(80), Kind: Execution, Highlight: true, Process: first}}},
			{Label: "in flight #2", Attempts: []Attempt{{ID: "a2", Client: "in flight", Start: at(10), End: at(95), Status: 201}},
				Marks: []Mark{{At: at(85), Kind: Execution, Highlight: true, Process: second}}},
		}}
	}
	const want = "executed in the first process: in flight #2; in the second: in flight"
	if text := Text(view(2, 1), TextOptions{}); !strings.Contains(text, want) {
		t.Errorf("the timeline of a double run by two processes lacks %q:\n%s", want, text)
	}
	var page bytes.Buffer
	if err := HTML(&page, view(2, 1)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), html.EscapeString(want)) {
		t.Errorf("the page of a double run by two processes lacks %q", want)
	}
	for _, p := range [][2]int{{0, 0}, {1, 1}} {
		if text := Text(view(p[0], p[1]), TextOptions{}); strings.Contains(text, "process") {
			t.Errorf("executions in processes %v: the timeline speaks of processes:\n%s", p, text)
		}
	}
}

// TestFocus_ATakeoverGoesOnItsKeysLane: a retry that took an expired key
// over is drawn on the key's lane, between its claim and its completion,
// with the holder that changed in its hover text; the legend names it on
// the terminal and on the page. A timeline that knew only claims,
// completions, releases and forgettings left it out, and the retry that
// ran looked like one that had claimed nothing.
func TestFocus_ATakeoverGoesOnItsKeysLane(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := History{
		Attempts: []Attempt{
			{ID: "a1", Client: "check", Key: "k-1", Op: "op-1", Start: at(0), End: at(10), Err: "connection reset"},
			{ID: "a2", Client: "check", Key: "k-1", Op: "op-1", Start: at(50), End: at(90), Status: 201},
		},
		Events: []Event{
			{At: at(2), Kind: Claim, Key: "k-1", Detail: "in_progress"},
			{At: at(55), Kind: Takeover, Key: "k-1", Detail: "lease_owner ORIGINAL… → RETRY-TO…"},
			{At: at(80), Kind: Execution, Attempt: "a2", Op: "op-1"},
			{At: at(85), Kind: Complete, Key: "k-1"},
		},
	}
	v, ok := h.Focus(Finding{Harm: "stuck key", Named: []string{"op-1"}}, 10)
	if !ok {
		t.Fatal("no timeline")
	}
	var kinds []string
	for _, l := range v.Lanes {
		if l.Label == "key k-1" {
			for _, m := range l.Marks {
				kinds = append(kinds, m.Kind)
			}
		}
	}
	if want := []string{Claim, Takeover, Complete}; !slices.Equal(kinds, want) {
		t.Errorf("the key's lane draws %v, want %v", kinds, want)
	}
	text := Text(v, TextOptions{})
	if !strings.Contains(text, "o key taken over (a new lease owner)") {
		t.Errorf("the terminal legend does not name the takeover:\n%s", text)
	}
	var page bytes.Buffer
	if err := HTML(&page, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<span>o key taken over (a new lease owner)</span>", "(lease_owner ORIGINAL… → RETRY-TO…)"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not hold %q:\n%s", want, page.String())
		}
	}
}
