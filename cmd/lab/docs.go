package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"idemlab/studentloop"
)

func runDocs(ctx context.Context, in *invocation) error {
	lang := in.String("lang", "en", "the lesson's language: en, or the name of a folder under docs/lessons")
	plain := in.Bool("plain", false, "print the markdown as it is, even on a terminal")
	width := in.Int("width", 100, "wrap the rendered lesson at this many columns")
	st, done, err := startLoop(in)
	if done {
		return err
	}
	root, n := st.root, st.n
	path, err := studentloop.LessonPath(root, n, *lang)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err
	}
	raw = anchorLine.ReplaceAll(raw, nil)
	if *plain || !isTerminal(in.stdout) {
		_, err = in.stdout.Write(raw)
		return err
	}
	out, err := studentloop.RenderLesson(raw, *width, filepath.Dir(filepath.Join(root, path)))
	if err != nil {
		return err
	}
	_, err = io.WriteString(in.stdout, out)
	return err
}

// anchorLine is a line that only gives the heading below it an explicit
// anchor, as the translated lessons do (<a id="the-race"></a> before
// "## 競合", so that a check's #the-race opens it). A link target means
// nothing in a terminal: the lesson is printed and rendered without them.
var anchorLine = regexp.MustCompile(`(?m)^<a id="[^"]*"></a>[ \t]*\r?\n`)
