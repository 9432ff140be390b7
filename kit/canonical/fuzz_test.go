package canonical_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"idemlab/kit/canonical"
)

// FuzzTransform holds Transform to what a fingerprint needs of it, for any
// input: it accepts only JSON; its output is JSON and its own canonical
// form; and the same value written another way (members in another order,
// other whitespace, every character as a \u escape, numbers in another
// spelling) has the same canonical form. The seeds in testdata/fuzz are
// the hostile documents: duplicate members, escaped names, numbers no
// double holds, invalid UTF-8, lone surrogates, deep nesting.
func FuzzTransform(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := canonical.Transform(raw)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Errorf("accepted %q, which is not JSON, as %q", raw, out)
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("the canonical form of %q is not UTF-8 JSON: %q", raw, out)
		}
		again, err := canonical.Transform(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form %q is not its own canonical form: %q, %v", out, again, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("the canonical form %q does not decode: %v", out, err)
		}
		var other bytes.Buffer
		if err := writeOtherwise(&other, v); err != nil {
			t.Fatal(err)
		}
		got, err := canonical.Transform(other.Bytes())
		if err != nil || !bytes.Equal(got, out) {
			t.Errorf("the same value written otherwise, %q, canonicalises to %q, %v; want %q", other.Bytes(), got, err, out)
		}
	})
}

// writeOtherwise writes a decoded JSON value as unlike its canonical form
// as the grammar allows: members in reverse order, whitespace between
// every token, every character of every string as a \u escape, and every
// number in exponent form.
func writeOtherwise(w *bytes.Buffer, v any) error {
	const space = "\r\n\t "
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		slices.Reverse(names)
		w.WriteString("{" + space)
		for i, name := range names {
			if i > 0 {
				w.WriteString(space + "," + space)
			}
			writeEscaped(w, name)
			w.WriteString(space + ":" + space)
			if err := writeOtherwise(w, v[name]); err != nil {
				return err
			}
		}
		w.WriteString(space + "}")
	case []any:
		w.WriteString("[" + space)
		for i, e := range v {
			if i > 0 {
				w.WriteString(space + "," + space)
			}
			if err := writeOtherwise(w, e); err != nil {
				return err
			}
		}
		w.WriteString(space + "]")
	case string:
		writeEscaped(w, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return fmt.Errorf("canonical number %s: %w", v, err)
		}
		w.WriteString(strconv.FormatFloat(f, 'E', -1, 64))
	case bool:
		w.WriteString(strconv.FormatBool(v))
	case nil:
		w.WriteString("null")
	default:
		return fmt.Errorf("unexpected %T in a decoded JSON value", v)
	}
	return nil
}

// writeEscaped writes s as a JSON string of \u escapes only, as UTF-16
// code units (a surrogate pair for a character beyond U+FFFF).
func writeEscaped(w *bytes.Buffer, s string) {
	w.WriteByte('"')
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(w, `\u%04x`, u)
	}
	w.WriteByte('"')
}
