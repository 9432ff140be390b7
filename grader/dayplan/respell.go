package dayplan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// A spelling is how one client library lays out JSON.
type spelling struct {
	// open, sep and close surround and separate members at depth d.
	open, sep, close func(depth int) string
	colon            string
}

var spellings = []spelling{
	// Python's json.dumps: ", " and ": ".
	{open: fixed("{"), sep: fixed(", "), close: fixed("}"), colon: ": "},
	// Pretty-printed with two spaces, as many JavaScript clients log and send.
	{open: indented("{\n", "  "), sep: indented(",\n", "  "), close: closing("  "), colon: ": "},
	// Tabs and a space before the colon.
	{open: indented("{\n", "\t"), sep: indented(",\n", "\t"), close: closing("\t"), colon: " : "},
}

func fixed(s string) func(int) string { return func(int) string { return s } }

func indented(s, unit string) func(int) string {
	return func(d int) string { return s + strings.Repeat(unit, d+1) }
}

func closing(unit string) func(int) string {
	return func(d int) string { return "\n" + strings.Repeat(unit, d) + "}" }
}

// respell writes the same JSON object as body the way another client
// library might: members in another order, other whitespace, some letters
// as \u escapes, the amount as 3e5 or 300000.0. The RFC 8785 canonical form
// is unchanged, so a server that fingerprints canonical bytes sees one
// request, and one that compares raw bytes sees two.
func respell(r *rand.Rand, body []byte) string {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		panic(fmt.Sprintf("respell %s: %v", body, err)) // plan bodies are generated objects
	}
	return spellObject(r, members, spellings[r.IntN(len(spellings))], 0)
}

func spellObject(r *rand.Rand, members map[string]json.RawMessage, sp spelling, depth int) string {
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names) // a fixed order before the shuffle keeps the draw deterministic
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = quote(n) + sp.colon + spellValue(r, members[n], sp, depth)
	}
	var b strings.Builder
	b.WriteString(sp.open(depth))
	for i, p := range parts {
		if i > 0 {
			b.WriteString(sp.sep(depth))
		}
		b.WriteString(p)
	}
	b.WriteString(sp.close(depth))
	return b.String()
}

func spellValue(r *rand.Rand, raw json.RawMessage, sp spelling, depth int) string {
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		json.Unmarshal(raw, &m)
		return spellObject(r, m, sp, depth+1)
	case '"':
		var s string
		json.Unmarshal(raw, &s)
		if r.IntN(3) == 0 {
			return escapeOneLetter(s)
		}
		return quote(s)
	default:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return string(raw)
		}
		return spellNumber(r, n)
	}
}

// spellNumber writes an integer as one of the spellings of the same
// amount that docs/api.md accepts (300000, 3e5, 300000.0).
func spellNumber(r *rand.Rand, n int64) string {
	mantissa, exp := n, 0
	for mantissa%10 == 0 && mantissa != 0 {
		mantissa, exp = mantissa/10, exp+1
	}
	switch {
	case exp >= 2 && r.IntN(2) == 0:
		return fmt.Sprintf("%de%d", mantissa, exp)
	case exp >= 2 && r.IntN(2) == 0:
		return fmt.Sprintf("%dE+%d", mantissa, exp)
	case r.IntN(2) == 0:
		return fmt.Sprintf("%d.0", n)
	default:
		return strconv.FormatInt(n, 10)
	}
}

// escapeOneLetter quotes s with its first ASCII letter written as a \u
// escape, as some encoders do ("\u0072ent" is "rent").
func escapeOneLetter(s string) string {
	q := quote(s)
	for i := 1; i < len(q)-1; i++ {
		c := q[i]
		if q[i-1] != '\\' && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return q[:i] + fmt.Sprintf(`\u%04x`, c) + q[i+1:]
		}
	}
	return q
}

func quote(s string) string {
	return string(encode(s))
}
