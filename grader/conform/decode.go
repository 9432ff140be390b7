package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// decode reads a profile from data, with errors that say where the
// mistake is and what to write instead: the line and column of a syntax
// error, the member whose value has the wrong type, and for a member the
// profile does not know (a typo, usually), the members it does know there.
func decode(data []byte, p *Profile) error {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line, col := position(data, syntax.Offset)
			return fmt.Errorf("line %d, column %d: %v (a profile is one JSON object)", line, col, syntax)
		}
		return err
	}
	if err := known(raw, reflect.TypeFor[Profile](), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(p); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			if typ.Field == "" {
				return fmt.Errorf("a JSON %s where a profile, one JSON object, is wanted", typ.Value)
			}
			return fmt.Errorf("%s: a JSON %s where %s is wanted", typ.Field, typ.Value, kind(typ.Type))
		}
		return err
	}
	return nil
}

// position is the line and column (from 1) of the byte a syntax error
// ends at, offset bytes into data.
func position(data []byte, offset int64) (line, col int) {
	read := data[:min(int(offset), len(data))]
	line = bytes.Count(read, []byte("\n")) + 1
	col = len(read) - bytes.LastIndexByte(read, '\n') - 1
	return line, col
}

// kind names what a Go type reads, for a person writing JSON.
func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Slice:
		return "a list"
	}
	return "an object"
}

// known returns an error naming the first member of v, at the JSON path
// at, that type t has no field for, with the members it has.
func known(v any, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case []any:
		if t.Kind() != reflect.Slice {
			return nil
		}
		for i, e := range x {
			if err := known(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil
		}
		fields := map[string]reflect.Type{}
		var names []string
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "" {
				fields[name] = f.Type
				names = append(names, name)
			}
		}
		for _, member := range slices.Sorted(maps.Keys(x)) {
			ft, ok := fields[member]
			where := strings.TrimPrefix(at+"."+member, ".")
			if !ok {
				hint := ""
				if near := nearest(member, names); near != "" {
					hint = fmt.Sprintf("; did you mean %q?", near)
				}
				return fmt.Errorf("%s: unknown member; %s has %s%s", where, orTop(at), strings.Join(names, ", "), hint)
			}
			if ft.Kind() == reflect.Struct || ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				if err := known(x[member], ft, where); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func orTop(at string) string {
	if at == "" {
		return "a profile"
	}
	return at
}

// nearest is the name among names closest to s, if one is within two
// edits of it (a typo), else "".
func nearest(s string, names []string) string {
	best, dist := "", 3
	for _, n := range names {
		if d := edits(strings.ToLower(s), n); d < dist {
			best, dist = n, d
		}
	}
	return best
}

// edits is the Levenshtein distance between a and b.
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
