package studentloop

import (
	"path/filepath"
	"strings"

	"charm.land/glamour/v2"
)

// RenderLesson renders a lesson's markdown for a terminal of the given
// width (glamour's dark style, links and code blocks kept readable). dir
// is the folder the lesson is in, as an absolute path: a relative link
// is printed as the file it names there (without it glamour prints
// 09-delivery.md as /09-delivery.md, and ../grader.md as /grader.md, files
// that are not there). It returns an error if the markdown cannot be
// rendered.
func RenderLesson(markdown []byte, width int, dir string) (string, error) {
	if width <= 0 {
		width = 100
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(width),
		glamour.WithBaseURL(strings.TrimSuffix(filepath.ToSlash(dir), "/")+"/"))
	if err != nil {
		return "", err
	}
	return r.Render(string(markdown))
}
