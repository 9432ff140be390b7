package studentloop

import (
	"charm.land/glamour/v2"
)

// RenderLesson renders a lesson's markdown for a terminal of the given
// width (glamour's dark style, links and code blocks kept readable). It
// returns an error if the markdown cannot be rendered.
func RenderLesson(markdown []byte, width int) (string, error) {
	if width <= 0 {
		width = 100
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(width))
	if err != nil {
		return "", err
	}
	return r.Render(string(markdown))
}
