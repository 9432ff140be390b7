package idemkey_test

import (
	"errors"
	"strings"
	"testing"

	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
)

// FuzzParse holds Parse to docs/api.md for any field value: an accepted
// key is 1 to 255 printable ASCII characters, the bare and the quoted form
// of it name the same key, the spaces around a field are not part of it,
// and anything refused is 400 invalid-idempotency-key. The seeds in
// testdata/fuzz are the keys a careless or hostile client sends.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, field string) {
		key, err := idemkey.Parse(field)
		padded, paddedErr := idemkey.Parse(" \t" + field + "\t ")
		if (err == nil) != (paddedErr == nil) || padded != key {
			t.Errorf("%q gives %q, %v; with spaces around it %q, %v", field, key, err, padded, paddedErr)
		}
		if err != nil {
			if !errors.Is(err, problem.InvalidIdempotencyKey) {
				t.Fatalf("%q refused with %v, want %s", field, err, problem.InvalidIdempotencyKey.Name)
			}
			return
		}
		if len(key) < 1 || len(key) > idemkey.MaxLen {
			t.Errorf("accepted a key of %d characters: %q", len(key), key)
		}
		for i := 0; i < len(key); i++ {
			if c := key[i]; c < 0x21 || c > 0x7e {
				t.Errorf("accepted %q, whose byte %d is 0x%02X", key, i, c)
			}
		}
		if v := strings.Trim(field, " \t"); !strings.HasPrefix(v, `"`) && key != v {
			t.Errorf("the bare field %q read as %q", field, key)
		}
		// A key that starts with a quote can only be sent quoted; every
		// other key can be sent both ways.
		if !strings.HasPrefix(key, `"`) {
			if bare, err := idemkey.Parse(key); err != nil || bare != key {
				t.Errorf("the bare form of %q reads as %q, %v", key, bare, err)
			}
		}
		if quoted, err := idemkey.Parse(sfString(key)); err != nil || quoted != key {
			t.Errorf("the quoted form %s of %q reads as %q, %v", sfString(key), key, quoted, err)
		}
	})
}

// sfString writes s as an RFC 8941 sf-string: in quotes, with quote and
// backslash escaped.
func sfString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
