package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"idemlab/grader/conform/testdata/payserver"
)

const payProfile = "../../grader/conform/testdata/profiles/payserver.json"

func TestConform_RefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"conform", "--profile", payProfile}, "--url"},
		{[]string{"conform", "--url", "localhost:8080", "--profile", payProfile}, "--url"},
		{[]string{"conform", "--url", "http://127.0.0.1:1"}, "--profile"},
		{[]string{"conform", "--url", "http://127.0.0.1:1", "--profile", "nope.json"}, "read profile"},
		{[]string{"conform", "--url", "http://127.0.0.1:1", "--profile", payProfile, "--max-operations", "0"}, "must be positive"},
	} {
		code, _, errs := runLabCommand(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.why) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.why)
		}
	}
}

// TestConform_ExitsAsLabAudit: 0 for an API that keeps its keys, 1 for
// one that pays every duplicate, 2 when the profile has no witness to
// judge the money by; the report puts the money first and ends with the
// summary line, and --junit writes a suite.
func TestConform_ExitsAsLabAudit(t *testing.T) {
	safe := httptest.NewServer(payserver.New())
	defer safe.Close()
	naiveServer := payserver.New()
	naiveServer.Naive = true
	naive := httptest.NewServer(naiveServer)
	defer naive.Close()
	profile, err := os.ReadFile(payProfile)
	if err != nil {
		t.Fatal(err)
	}
	blind := filepath.Join(t.TempDir(), "blind.json")
	i := strings.Index(string(profile), `,
  "witness"`)
	if err := os.WriteFile(blind, append(profile[:i:i], "\n}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "conform.xml")
	for _, c := range []struct {
		url, profile string
		code         int
		last         string
	}{
		{safe.URL, payProfile, 0, "conform: payserver: 2/2 MUST met, 7/7 SHOULD met, money clean"},
		{naive.URL, payProfile, 1, "money harmed"},
		{safe.URL, blind, 2, "money not observed"},
	} {
		code, out, errs := runLabCommand(t, "conform", "--url", c.url, "--profile", c.profile, "--seed", "3", "--junit", junit)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != c.code || !strings.Contains(lines[len(lines)-1], c.last) || !strings.Contains(out, "\nmoney: ") {
			t.Errorf("%s %s: exit %d, want %d and a last line with %q\n%s%s", c.url, c.profile, code, c.code, c.last, out, errs)
		}
		data, err := os.ReadFile(junit)
		var suite struct {
			Tests int `xml:"tests,attr"`
		}
		if err != nil || xml.Unmarshal(data, &suite) != nil || suite.Tests == 0 {
			t.Errorf("--junit wrote %q (%v)", data, err)
		}
	}
}

// TestConform_JSON: --json prints one document whose valid says the
// verdict, and no report.
func TestConform_JSON(t *testing.T) {
	naiveServer := payserver.New()
	naiveServer.Naive = true
	naive := httptest.NewServer(naiveServer)
	defer naive.Close()
	code, out, errs := runLabCommand(t, "conform", "--url", naive.URL, "--profile", payProfile, "--seed", "3", "--json")
	var doc struct {
		Valid   *bool
		Results []struct{ ID, Money string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Valid == nil || *doc.Valid || len(doc.Results) == 0 {
		t.Fatalf("exit %d, valid %v, %d results (%v)\n%s%s", code, doc.Valid, len(doc.Results), err, out, errs)
	}
}

// TestConform_NotTriedIsNeverAPass: a run that left a MUST or money
// scenario out exits 2, unknown, not 0; a failing run says its verdict
// once, in the report's last line, not again on stderr.
func TestConform_NotTriedIsNeverAPass(t *testing.T) {
	safe := httptest.NewServer(payserver.New())
	defer safe.Close()
	code, out, errs := runLabCommand(t, "conform", "--url", safe.URL, "--profile", payProfile, "--seed", "3", "--max-operations", "20")
	if code != 2 || !strings.Contains(out, "the verdict is unknown") || !strings.Contains(errs, "were not tried") {
		t.Errorf("--max-operations 20: exit %d, want 2, the line and stderr saying the verdict is unknown\n%s%s", code, out, errs)
	}
	naiveServer := payserver.New()
	naiveServer.Naive = true
	naive := httptest.NewServer(naiveServer)
	defer naive.Close()
	code, out, errs = runLabCommand(t, "conform", "--url", naive.URL, "--profile", payProfile, "--seed", "3", "--max-operations", "20")
	if code != 1 || errs != "" || strings.Count(out, "money harmed") != 1 {
		t.Errorf("a naive server, 20 operations: exit %d, stderr %q; want 1 (harmed beats unknown), the verdict said once\n%s", code, errs, out)
	}
}

// TestConform_CouldNotRunStillWritesItsReports: a run that cannot be
// made once the profile is read (here, no API at the URL) exits 2 and
// still prints its --json document, valid null with the reason, and
// writes its --junit suite with the reason as an error: a CI job reads
// what it was asked for, never nothing.
func TestConform_CouldNotRunStillWritesItsReports(t *testing.T) {
	gone := httptest.NewServer(payserver.New())
	gone.Close()
	junit := filepath.Join(t.TempDir(), "conform.xml")
	code, out, errs := runLabCommand(t, "conform", "--url", gone.URL, "--profile", payProfile, "--seed", "3", "--json", "--junit", junit)
	var doc struct {
		Valid *bool
		Error string
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 2 || doc.Valid != nil || !strings.Contains(doc.Error, "witness cannot be read") {
		t.Fatalf("exit %d, valid %v, error %q (%v)\n%s%s", code, doc.Valid, doc.Error, err, out, errs)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Errors int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(data, &suite); err != nil || suite.Errors != 1 || !strings.Contains(string(data), "witness cannot be read") {
		t.Errorf("junit (%v), %d errors:\n%s", err, suite.Errors, data)
	}
}

// TestConform_FlagAndProfileErrorsStillWriteTheirReports: a bad flag
// (before or after --json and --junit), a flag missing and a profile
// with a mistake stop the run before it sends anything, exit 2, and
// still print the --json document, valid null with the reason, and write
// the --junit suite with the reason as its error, as a run stopped later
// does: a CI job always gets what it asked for. A --json whose value
// does not parse asks for nothing.
func TestConform_FlagAndProfileErrorsStillWriteTheirReports(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.json")
	if err := os.WriteFile(typo, []byte(`{"operation": {"method": "POST", "path": "/v1/payments"}, "body": {}, "principals": [{"name": "a"}], "witness": {"path": "/v1/payments", "counts": "/items"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const url = "http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--seed", "abc", "--json", "--url", url, "--profile", payProfile}, `invalid value "abc" for flag -seed`},
		{[]string{"--json", "--url", url, "--profile", payProfile, "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--bogus", "3", "--json", "--url", url, "--profile", payProfile}, "flag provided but not defined: -bogus"},
		{[]string{"--url", url, "--profile", payProfile, "3", "--json"}, "arguments it does not take: 3 --json"},
		{[]string{"--url", url, "--profile", payProfile, "--", "-json"}, "arguments it does not take: -json"},
		{[]string{"-json=true", "--profile", payProfile}, "--url is the API's base URL"},
		{[]string{"--json", "--url", url}, "--profile names the profile file"},
		{[]string{"--json", "--url", url, "--profile", payProfile, "--timeout", "0s"}, "must be positive"},
		{[]string{"--json", "--url", url, "--profile", filepath.Join(dir, "nope.json")}, "read profile"},
		{[]string{"--json", "--url", url, "--profile", typo}, `did you mean "count"?`},
	} {
		junit := filepath.Join(dir, "conform.xml")
		os.Remove(junit)
		args := append([]string{"conform", "--junit", junit}, c.args...)
		code, out, errs := runLabCommand(t, args...)
		var doc struct {
			Valid   *bool
			Error   string
			Summary struct{ Money string }
			Results []any
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 2 || doc.Valid != nil || !strings.Contains(doc.Error, c.why) || doc.Results == nil || doc.Summary.Money != "could not observe" {
			t.Errorf("%s: exit %d, valid %v, error %q, money %q, results %v (%v); want 2, null, an error saying %q, money not observed, results []\n%s%s",
				strings.Join(args, " "), code, doc.Valid, doc.Error, doc.Summary.Money, doc.Results, err, c.why, out, errs)
		}
		data, err := os.ReadFile(junit)
		var suite struct {
			Errors int `xml:"errors,attr"`
			Cases  []struct {
				Error struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		}
		if err != nil || xml.Unmarshal(data, &suite) != nil || suite.Errors != 1 || len(suite.Cases) != 1 || !strings.Contains(suite.Cases[0].Error.Message, c.why) {
			t.Errorf("%s: junit (%v), %d errors:\n%s", strings.Join(args, " "), err, suite.Errors, data)
		}
	}
	code, out, _ := runLabCommand(t, "conform", "--json=maybe", "--url", url, "--profile", payProfile)
	if code != 2 || out != "" {
		t.Errorf("--json=maybe: exit %d, stdout %q; want 2 and nothing: the flag asked for no document", code, out)
	}
}

// TestConform_UsageNamesEveryFlag: the usage line of lab help conform
// names every flag conform takes; --timeout, missing from it, was found
// only in the list below it.
func TestConform_UsageNamesEveryFlag(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"help", "conform"}, &out, &errb); code != 0 {
		t.Fatalf("lab help conform exited %d: %s", code, errb.String())
	}
	usageLine, rest, _ := strings.Cut(out.String(), "\n")
	flags := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(rest, -1)
	if len(flags) == 0 {
		t.Fatalf("lab help conform lists no flags:\n%s", out.String())
	}
	for _, f := range flags {
		if !strings.Contains(usageLine, "--"+f[1]+" ") && !strings.Contains(usageLine, "--"+f[1]+"]") {
			t.Errorf("the usage line does not name --%s: %s", f[1], usageLine)
		}
	}
}

// TestConform_TheReportFitsItsWidth: lab conform printed 28 lines over
// 100 columns, which an 80-column terminal broke mid-word. Not on a
// terminal, every line fits 80 columns, wrapped at words behind a hanging
// indent; the verdict is still the last line.
func TestConform_TheReportFitsItsWidth(t *testing.T) {
	naiveServer := payserver.New()
	naiveServer.Naive = true
	naive := httptest.NewServer(naiveServer)
	defer naive.Close()
	_, out, errs := runLabCommand(t, "conform", "--url", naive.URL, "--profile", payProfile, "--seed", "3")
	var wrapped int
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := ansi.StringWidth(line); w > 80 {
			t.Errorf("a line of %d columns: %q", w, line)
		}
		if strings.HasPrefix(line, "                ") {
			wrapped++
		}
	}
	if wrapped == 0 {
		t.Errorf("no detail line was wrapped under its text; the report:\n%s%s", out, errs)
	}
	if last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]); !strings.HasPrefix(last, "conform: payserver:") {
		t.Errorf("the last line %q is not the verdict", last)
	}
}

// TestWrapReport_KeepsEveryWordBehindAHangingIndent: a labelled line goes
// on under its text, a claim under what follows its name; every word is
// kept, in order, and a word longer than the room is cut, not overflowed.
func TestWrapReport_KeepsEveryWordBehindAHangingIndent(t *testing.T) {
	const text = "      expected  a 409 or the first answer replayed: the retry carried the same key and body, so the server must not run it again\n" +
		"  ✗ HARMED  lost-response: a client that never heard its answer retries, and the money moves once\n" +
		"short line\n"
	var b strings.Builder
	if err := wrapReport(&b, text, 60); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	want := "      expected  a 409 or the first answer replayed: the\n" +
		"                retry carried the same key and body, so the\n" +
		"                server must not run it again\n" +
		"  ✗ HARMED  lost-response: a client that never heard its\n" +
		"                           answer retries, and the money\n" +
		"                           moves once\n" +
		"short line\n"
	if got != want {
		t.Errorf("wrapped to 60:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	if err := wrapReport(&b, "  got  "+strings.Repeat("x", 50)+"\n", 30); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if len(l) > 30 {
			t.Errorf("a long word overflowed 30 columns: %q", l)
		}
	}
	if strings.Count(b.String(), "x") != 50 {
		t.Errorf("a long word lost letters: %q", b.String())
	}
}
