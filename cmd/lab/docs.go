package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

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
	return page(ctx, in.stdout, out, os.LookupEnv, exec.LookPath)
}

// page writes a rendered lesson to a terminal through a pager, so that
// a lesson longer than the screen starts at its first line: $PAGER if it
// is set ("" or "cat" for none), else less if there is one (-F: no pager
// for a lesson that fits the screen; -R: keep the colours; -X: leave the
// lesson on the screen after q; the same in $LESS when it is not set).
// Without a pager it writes the lesson as it is. It returns the pager's
// error, or the write's.
func page(ctx context.Context, w io.Writer, text string, lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) error {
	argv := pagerCommand(lookupEnv, lookPath)
	if argv == nil {
		_, err := io.WriteString(w, text)
		return err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(text), w, os.Stderr
	if _, set := lookupEnv("LESS"); !set {
		// As git does: a PAGER=less of the reader's own keeps the
		// colours too.
		cmd.Env = append(os.Environ(), "LESS=FRX")
	}
	return cmd.Run()
}

// pagerCommand is the pager page runs, as an argv, or nil for none.
func pagerCommand(lookupEnv func(string) (string, bool), lookPath func(string) (string, error)) []string {
	if p, set := lookupEnv("PAGER"); set {
		if f := strings.Fields(p); len(f) > 0 && f[0] != "cat" {
			// A command line, as git runs it.
			return []string{"sh", "-c", p}
		}
		return nil
	}
	less, err := lookPath("less")
	if err != nil {
		return nil
	}
	return []string{less, "-FRX"}
}

// anchorLine is a line that only gives the heading below it an explicit
// anchor, as the translated lessons do (<a id="the-race"></a> before
// "## 競合", so that a check's #the-race opens it). A link target means
// nothing in a terminal: the lesson is printed and rendered without them.
var anchorLine = regexp.MustCompile(`(?m)^<a id="[^"]*"></a>[ \t]*\r?\n`)
