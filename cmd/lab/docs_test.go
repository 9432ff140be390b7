package main

import (
	"os"
	"path/filepath"
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
