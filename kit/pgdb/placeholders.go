package pgdb

import "strings"

// The stages write SQL once, with SQLite's ? placeholders, and PostgreSQL
// numbers its parameters ($1, $2, …). Rather than have every stage write
// each statement twice, the connections rewrite a statement's ? marks into
// $n before PostgreSQL sees it. A ? inside a string literal, a quoted name,
// a comment or a dollar-quoted body is text, not a parameter, and stays.
// (PostgreSQL's jsonb operators ?, ?| and ?& would be read as parameters:
// the lab's SQL does not use them.)

// numberPlaceholders returns query with its ? parameters numbered $1, $2, ….
func numberPlaceholders(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(itoa(n))
			i++
			continue
		case c == '\'' || c == '"':
			end := closing(query, i+1, string(c))
			b.WriteString(query[i:end])
			i = end
			continue
		case strings.HasPrefix(query[i:], "--"):
			end := closing(query, i+2, "\n")
			b.WriteString(query[i:end])
			i = end
			continue
		case strings.HasPrefix(query[i:], "/*"):
			end := closing(query, i+2, "*/")
			b.WriteString(query[i:end])
			i = end
			continue
		case c == '$':
			if tag, ok := dollarTag(query[i:]); ok {
				end := closing(query, i+len(tag), tag)
				b.WriteString(query[i:end])
				i = end
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// closing returns the index just past the first occurrence of end in
// query at or after from, or len(query) if there is none. A doubled quote
// inside a literal ('it”s') reads as its end followed by a new literal,
// which gives the same result.
func closing(query string, from int, end string) int {
	if i := strings.Index(query[from:], end); i >= 0 {
		return from + i + len(end)
	}
	return len(query)
}

// dollarTag reports the opening $tag$ of a dollar-quoted string at the
// start of s ($$ or $name$), as opposed to a numbered parameter ($1).
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || j > 1 && '0' <= c && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
