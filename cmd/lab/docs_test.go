package main

import (
	"strings"
	"testing"

	"idemlab/studentloop"
)

// TestDocs_PlainWhenNotATerminal: into a pipe, the lesson is its markdown
// as written; --lang picks the translation.
func TestDocs_PlainWhenNotATerminal(t *testing.T) {
	fakeLoop(t, passingS1, "")
	code, out, errs := runLabCommand(t, "docs", "1")
	if code != 0 || !strings.HasPrefix(out, "# ") || !strings.Contains(out, "```go") {
		t.Fatalf("exit %d %s\n%.200s", code, errs, out)
	}
}

// TestRenderLesson_Styles: rendered for a terminal, the markdown's
// heading marks are gone.
func TestRenderLesson_Styles(t *testing.T) {
	out, err := studentloop.RenderLesson([]byte("# Title\n\nSome `code`.\n"), 60)
	if err != nil || strings.Contains(out, "# Title") || !strings.Contains(out, "Title") {
		t.Fatalf("%v\n%q", err, out)
	}
}
