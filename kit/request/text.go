package request

import "unicode"

// hidden finds the first character of s that a reader cannot see for what
// it is: its position (from 1, in characters), the character, and why it
// is refused; at is 0 if there is none. Every character must be graphic
// (unicode.IsGraphic: letters, marks, numbers, punctuation, symbols and
// spaces). Refused are control characters; format characters such as
// U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE and U+FEFF, which
// are invisible and can hide or reorder the text around them, so that two
// names that look alike differ; line and paragraph separators (U+2028),
// which break a line in one display and not in another; private-use and
// unassigned code points. The joiners U+200C and U+200D are let through
// between two visible characters, where Persian words and emoji sequences
// (👨‍👩‍👧) need them. A transfer's reference keeps to a stricter rule of the
// same kind (unicode.IsPrint: no space but the ASCII one, no joiner).
func hidden(s string) (at int, c rune, why string) {
	chars := []rune(s)
	for i, c := range chars {
		switch {
		case unicode.IsGraphic(c):
			continue
		case joins(chars, i):
			continue
		case unicode.IsControl(c):
			why = "a control character"
		case unicode.Is(unicode.Cf, c):
			why = "an invisible format character, which can hide or reorder the text around it"
		case unicode.In(c, unicode.Zl, unicode.Zp):
			why = "a line or paragraph separator"
		case unicode.Is(unicode.Co, c):
			why = "a private-use character"
		default:
			why = "a code point Unicode does not assign"
		}
		return i + 1, c, why
	}
	return 0, 0, ""
}

// joins reports whether chars[i] is a zero-width joiner or non-joiner
// with a visible character on either side.
func joins(chars []rune, i int) bool {
	if chars[i] != '\u200c' && chars[i] != '\u200d' || i == 0 || i == len(chars)-1 {
		return false
	}
	visible := func(c rune) bool { return unicode.IsGraphic(c) && !unicode.IsSpace(c) }
	return visible(chars[i-1]) && visible(chars[i+1])
}
