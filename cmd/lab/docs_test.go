package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"idemlab/studentloop"
)

// TestDocs_PlainWhenNotATerminal: into a pipe, the lesson is its markdown
// as written, heading marks and code fences included.
func TestDocs_PlainWhenNotATerminal(t *testing.T) {
	fakeLoop(t, passingS1, "")
	code, out, errs := runLabCommand(t, "docs", "1")
	if code != 0 || !strings.HasPrefix(out, "# ") || !strings.Contains(out, "\n```\n") {
		t.Fatalf("exit %d %s\n%.200s", code, errs, out)
	}
}

// TestRenderLesson_Styles: rendered for a terminal, the markdown's
// heading marks are gone.
func TestRenderLesson_Styles(t *testing.T) {
	out, err := studentloop.RenderLesson([]byte("# Title\n\nSome `code`.\n"), 60, "/idemlab/docs/lessons")
	if err != nil || strings.Contains(out, "# Title") || !strings.Contains(out, "Title") {
		t.Fatalf("%v\n%q", err, out)
	}
}

// TestRenderLesson_LinksNameTheirFiles: a lesson's relative link is
// printed as the file it names, from the lesson's folder: the next lesson
// beside it, a page one folder up. Printed as glamour does without a base
// (/09-delivery.md, /grader.md), they name files that are not there.
func TestRenderLesson_LinksNameTheirFiles(t *testing.T) {
	md := "[Stage 9](09-delivery.md) and [the grader](../grader.md#the-scoreboard).\n"
	out, err := studentloop.RenderLesson([]byte(md), 200, "/home/you/idemlab/docs/lessons")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/home/you/idemlab/docs/lessons/09-delivery.md", "/home/you/idemlab/docs/grader.md#the-scoreboard"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendered lesson does not name %s:\n%q", want, out)
		}
	}
}

// TestDocs_Lang: --lang ja reads docs/lessons/ja, without the anchor
// lines that carry the English headings' anchors; an unknown language
// names the folder it looked in. Reading docs/lessons whatever --lang
// says, or printing the anchors, fails it.
func TestDocs_Lang(t *testing.T) {
	root := fakeLoop(t, passingS1, "")
	ja := filepath.Join(root, "docs", "lessons", "ja")
	if err := os.MkdirAll(ja, 0o755); err != nil {
		t.Fatal(err)
	}
	lesson := "<a id=\"stage-1--a-unique-constraint-decides\"></a>\n# ステージ 1 — UNIQUE 制約が決める\n\n<a id=\"the-race\"></a>\n## 競合\n\n```go\nx := 1\n```\n"
	if err := os.WriteFile(filepath.Join(ja, "01-claim.md"), []byte(lesson), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runLabCommand(t, "docs", "1", "--lang", "ja")
	if code != 0 || !strings.HasPrefix(out, "# ステージ 1") || !strings.Contains(out, "## 競合") || strings.Contains(out, "<a id") {
		t.Fatalf("lab docs 1 --lang ja: exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = runLabCommand(t, "docs", "1", "--lang", "en")
	if code != 0 || strings.Contains(out, "ステージ") {
		t.Fatalf("lab docs 1 --lang en: exit %d\n%.200s", code, out)
	}
	code, _, errs = runLabCommand(t, "docs", "1", "--lang", "xx")
	if code == 0 || !strings.Contains(errs, filepath.Join("docs", "lessons", "xx")) {
		t.Fatalf("lab docs 1 --lang xx: exit %d, stderr %q; want an error naming docs/lessons/xx", code, errs)
	}
}

// TestAnchorLine: only a line that is nothing but an anchor goes.
func TestAnchorLine(t *testing.T) {
	in := "<a id=\"the-race\"></a>\n## 競合\n\nsee <a id=\"x\"></a> inline\n<a id=\"crlf\"></a>\r\n## next\n"
	want := "## 競合\n\nsee <a id=\"x\"></a> inline\n## next\n"
	if got := string(anchorLine.ReplaceAll([]byte(in), nil)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPagerCommand: a lesson on a terminal goes through $PAGER when it is
// set, through no pager when it is set empty or to cat, and else through
// less if there is one, with colours kept (-R) and no pager for a lesson
// that fits the screen (-F); with no less, through none.
func TestPagerCommand(t *testing.T) {
	less := func(string) (string, error) { return "/usr/bin/less", nil }
	noLess := func(string) (string, error) { return "", errors.New("not found") }
	env := func(v string, set bool) func(string) (string, bool) {
		return func(string) (string, bool) { return v, set }
	}
	for _, c := range []struct {
		name     string
		env      func(string) (string, bool)
		lookPath func(string) (string, error)
		want     []string
	}{
		{"PAGER set", env("most -s", true), less, []string{"sh", "-c", "most -s"}},
		{"PAGER empty", env("", true), less, nil},
		{"PAGER cat", env("cat", true), less, nil},
		{"no PAGER", env("", false), less, []string{"/usr/bin/less", "-FRX"}},
		{"no PAGER, no less", env("", false), noLess, nil},
	} {
		if got := pagerCommand(c.env, c.lookPath); !slices.Equal(got, c.want) {
			t.Errorf("%s: pager %q, want %q", c.name, got, c.want)
		}
	}
}

// TestPage_WritesThroughThePager: the lesson reaches the terminal through
// the pager's output, whole; with $LESS not set, the pager is given
// LESS=FRX, so that a reader's PAGER=less keeps the colours.
func TestPage_WritesThroughThePager(t *testing.T) {
	for _, c := range []struct{ pager, lesson, want string }{
		{"tr a-z A-Z", "a lesson\n", "A LESSON\n"},
		{"echo $LESS", "", "FRX\n"},
	} {
		env := func(name string) (string, bool) { return c.pager, name == "PAGER" }
		var b strings.Builder
		if err := page(t.Context(), &b, c.lesson, env, exec.LookPath); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("through PAGER=%q: %q, want %q", c.pager, b.String(), c.want)
		}
	}
}
