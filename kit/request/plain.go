package request

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// plainObject reads raw as the bodies clients send nearly always are:
// valid UTF-8 and valid JSON, one object and nothing after it, no member
// named twice at any depth, and no member name that holds an escape. For
// such a body it returns the top-level members, the bytes of each value as
// json.Unmarshal into a map[string]json.RawMessage gives them, and true.
// For any other body it returns false, and the caller reads it with the
// token walk (checkStructure) and json.Unmarshal, which refuse it in their
// own words or accept it. So plainObject only ever answers "plainly
// well formed", and the refusals, and every escaped name, stay theirs.
//
// It exists for its cost: the token walk allocates for every name and
// value it reads (json.Decoder's Token), and it ran for every transfer,
// deposit and posting. Here the bytes are checked once by json.Valid and
// walked once, and only the top-level names are copied.
func plainObject(raw []byte) (map[string]json.RawMessage, bool) {
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, false
	}
	w := walker{raw: raw}
	w.space()
	if w.i == len(w.raw) || w.raw[w.i] != '{' {
		return nil, false
	}
	members := map[string]json.RawMessage{}
	if !w.object(members) {
		return nil, false
	}
	return members, true
}

// walker steps through JSON that json.Valid has accepted, so it checks
// only what validity does not: the names of each object.
type walker struct {
	raw []byte
	i   int
}

func (w *walker) space() {
	for w.i < len(w.raw) {
		switch w.raw[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value steps over the value at w.i, walking the objects inside it. It
// returns false if one of them names a member twice or in an escape.
func (w *walker) value() bool {
	switch w.raw[w.i] {
	case '{':
		return w.object(nil)
	case '[':
		if w.open(']') {
			return true
		}
		for {
			if !w.value() {
				return false
			}
			if w.next(']') {
				return true
			}
		}
	case '"':
		w.str()
		return true
	}
	// A number, true, false or null: it ends where a delimiter starts.
	for w.i < len(w.raw) && !delimiter(w.raw[w.i]) {
		w.i++
	}
	return true
}

func delimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str steps over the string at w.i and returns its contents, between the
// quotes, and whether they hold an escape.
func (w *walker) str() (contents []byte, escaped bool) {
	start := w.i + 1
	for w.i = start; w.raw[w.i] != '"'; w.i++ {
		if w.raw[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	w.i++
	return w.raw[start : w.i-1], escaped
}

// object steps over the object at w.i. It returns false if the object,
// or one inside it, names a member twice or in an escape. If members is
// not nil, it gets the object's members.
func (w *walker) object(members map[string]json.RawMessage) bool {
	if w.open('}') {
		return true
	}
	// Most objects have a few members: comparing each name with the ones
	// before it is cheaper than a map until there are many.
	var few [16][]byte
	names := few[:0]
	var many map[string]bool
	for {
		name, escaped := w.str()
		if escaped {
			return false
		}
		if many != nil {
			if many[string(name)] {
				return false
			}
			many[string(name)] = true
		} else {
			for _, seen := range names {
				if bytes.Equal(seen, name) {
					return false
				}
			}
			names = append(names, name)
			if len(names) == len(few) {
				many = map[string]bool{}
				for _, n := range names {
					many[string(n)] = true
				}
			}
		}
		w.space()
		w.i++ // the colon
		w.space()
		start := w.i
		if !w.value() {
			return false
		}
		if members != nil {
			members[string(name)] = w.raw[start:w.i:w.i]
		}
		if w.next('}') {
			return true
		}
	}
}

// open steps into the object or array at w.i, and reports whether it is
// empty, closed at once by end, which it then steps over too.
func (w *walker) open(end byte) bool {
	w.i++
	w.space()
	if w.raw[w.i] == end {
		w.i++
		return true
	}
	return false
}

// next steps over what follows a member or an element: the container's
// end, or a comma and the space after it. It reports whether it was the
// end.
func (w *walker) next(end byte) bool {
	w.space()
	c := w.raw[w.i]
	w.i++
	if c == end {
		return true
	}
	w.space()
	return false
}
