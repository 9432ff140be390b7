package main

import (
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// reportWidth is the width a report printed on w is wrapped to: the
// terminal's, or 80 columns when w is not a terminal (a pipe, a file, a
// CI log read in a browser of any width).
func reportWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if width, _, err := term.GetSize(f.Fd()); err == nil && width > 0 {
			return width
		}
	}
	return 80
}

// labelled is a line's indent and a label set apart from its text by two
// spaces or more ("      expected  409 …"): its text's column.
var labelled = regexp.MustCompile(`^ *\S+  +`)

// wrapReport writes text to w with every line wrapped at word boundaries
// to width, behind a hanging indent: a labelled line's continuations start
// under its text ("      saw       …"), a claim's under what follows its
// name ("  ✓ clean   missing-key: …"), any other line's four columns past
// its own indent. The
// spaces between words stay as they were (the marks' padding lines the
// claims up); a word longer than the room is cut, so that no line wraps
// on the terminal.
func wrapReport(w io.Writer, text string, width int) error {
	width = max(width, 20)
	var out strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		body := strings.TrimSuffix(line, "\n")
		if ansi.StringWidth(body) <= width {
			out.WriteString(line)
			continue
		}
		lead := body[:len(body)-len(strings.TrimLeft(body, " "))]
		indent := len(lead) + 4
		if m := labelled.FindString(body); m != "" {
			indent = ansi.StringWidth(m)
		} else if i := strings.Index(body, ": "); i > 0 && ansi.StringWidth(body[:i+2]) <= width/2 {
			indent = ansi.StringWidth(body[:i+2])
		}
		pad := strings.Repeat(" ", min(indent, width/2))
		cur := lead
		for _, word := range words.FindAllString(body[len(lead):], -1) {
			bare := strings.TrimLeft(word, " ")
			if cur != lead && cur != pad && ansi.StringWidth(cur+word) > width {
				out.WriteString(cur + "\n")
				cur, word = pad, bare
			}
			for ansi.StringWidth(cur+word) > width {
				// A word longer than the room (a URL, a body): cut.
				room := width - ansi.StringWidth(cur)
				if room <= 0 {
					out.WriteString(cur + "\n")
					cur = pad
					continue
				}
				out.WriteString(cur + ansi.Cut(word, 0, room) + "\n")
				cur, word = pad, ansi.Cut(word, room, ansi.StringWidth(word))
			}
			cur += word
		}
		out.WriteString(cur + line[len(body):])
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// words are a line's words, each with the spaces before it.
var words = regexp.MustCompile(` *[^ ]+`)
