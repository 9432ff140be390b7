package docs_test

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
)

// timelinePage is what a page in docs/timelines says in words, above its
// drawing: its check, the check's claim, the harm its failure found (or
// that only the contract failed), and how to reproduce it.
var timelinePage = regexp.MustCompile(`(?s)<h1>([^<]*)</h1>\n<p class="claim">([^<]*)</p>\n` +
	`<p class="(harm|contract)">([^<]*)</p>.*?<p>reproduce: <code class="reproduce">([^<]*)</code></p>`)

// timelineAlso is a page's lesser finding, which a double it leads with
// carries (grader.Result.Timeline): its harm's name and what it says.
var timelineAlso = regexp.MustCompile(`<p class="harm also">✗ also ([^:<]*): ([^<]*)</p>`)

// TestTimelines_SayWhatTheirChecksSay keeps the pages docs/timelines
// keeps (make timelines draws them from real runs) from drifting from the
// checks they show: each names a check there is, says its claim as the
// check now does, its harm as the grader now explains it, and reproduces
// it with the check's own stage. What the check got is the run's own and
// is not compared: make timelines draws it again.
func TestTimelines_SayWhatTheirChecksSay(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "timelines", "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no timelines in docs/timelines (%v)", err)
	}
	for _, path := range pages {
		name := filepath.Base(path)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range timelineDrift(string(raw)) {
			t.Errorf("docs/timelines/%s: %s (make timelines draws it again)", name, p)
		}
	}
}

// timelineDrift is where page says otherwise than its check now does.
func timelineDrift(page string) []string {
	m := timelinePage.FindStringSubmatch(page)
	if m == nil {
		return []string{"no check, claim, harm and reproduce line found"}
	}
	id, claim, class, harm, reproduce := m[1], html.UnescapeString(m[2]), m[3], html.UnescapeString(m[4]), html.UnescapeString(m[5])
	c, ok := grader.Lookup(id)
	if !ok {
		return []string{fmt.Sprintf("check %s is not in the catalogue", id)}
	}
	var drift []string
	if claim != c.Claim {
		drift = append(drift, fmt.Sprintf("its claim says\n\t%s\nand %s's claim now says\n\t%s", claim, id, c.Claim))
	}
	want := "✓ " + grader.ContractExplain
	if class == "harm" {
		name, _, _ := strings.Cut(strings.TrimPrefix(harm, "✗ "), ":")
		want = "✗ " + name + ": " + judging.Harm(name).Explain()
	}
	if harm != want {
		drift = append(drift, fmt.Sprintf("its harm says\n\t%s\nand the grader now says\n\t%s", harm, want))
	}
	for _, a := range timelineAlso.FindAllStringSubmatch(page, -1) {
		name, said := html.UnescapeString(a[1]), html.UnescapeString(a[2])
		if want := judging.Harm(name).Explain(); said != want {
			drift = append(drift, fmt.Sprintf("its lesser finding %s says\n\t%s\nand the grader now says\n\t%s", name, said, want))
		}
	}
	if !strings.HasPrefix(reproduce, fmt.Sprintf("make stage-%d ", c.Stage)) || !strings.HasSuffix(reproduce, " RUN="+id) {
		drift = append(drift, fmt.Sprintf("it reproduces with %q, not make stage-%d … RUN=%s", reproduce, c.Stage, id))
	}
	return drift
}

// A page's lesser finding that explains its harm as the grader no longer
// does is drift, as its claim is (no page docs/timelines keeps has one).
func TestTimelineDrift_ReadsTheLesserFinding(t *testing.T) {
	c, _ := grader.Lookup("S1.concurrent-duplicates")
	page := "<h1>" + c.ID + "</h1>\n<p class=\"claim\">" + html.EscapeString(c.Claim) + "</p>\n" +
		"<p class=\"harm\">✗ double: " + judging.Double.Explain() + "</p>\n<pre class=\"got\">32× 201</pre>\n" +
		"<p class=\"harm also\">✗ also wrong answer: %s</p>\n" +
		"<p>reproduce: <code class=\"reproduce\">make stage-1 SEED=42 RUN=" + c.ID + "</code></p>"
	if drift := timelineDrift(fmt.Sprintf(page, html.EscapeString(judging.WrongAnswer.Explain()))); len(drift) > 0 {
		t.Errorf("a page that says what its check says drifts: %q", drift)
	}
	if drift := timelineDrift(fmt.Sprintf(page, "an old wording")); len(drift) != 1 {
		t.Errorf("a stale lesser finding: drift %q, want one", drift)
	}
}
