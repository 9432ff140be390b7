package idemkey_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"idemlab/kit/idemkey"
	"idemlab/kit/problem"
)

func TestFromRequest(t *testing.T) {
	long := strings.Repeat("k", 255)
	cases := []struct {
		name   string
		fields []string
		key    string
		want   *problem.Type
	}{
		{"bare", []string{"8e0f-11"}, "8e0f-11", nil},
		{"quoted names the same key", []string{`"8e0f-11"`}, "8e0f-11", nil},
		{"surrounding spaces", []string{`  "abc"  `}, "abc", nil},
		{"255 characters", []string{long}, long, nil},
		{"missing", nil, "", problem.MissingIdempotencyKey},
		{"two fields", []string{"a", "b"}, "", problem.InvalidIdempotencyKey},
		{"empty bare", []string{""}, "", problem.InvalidIdempotencyKey},
		{"empty quoted", []string{`""`}, "", problem.InvalidIdempotencyKey},
		{"256 characters", []string{long + "k"}, "", problem.InvalidIdempotencyKey},
		{"space inside bare", []string{"a b"}, "", problem.InvalidIdempotencyKey},
		{"space inside quoted", []string{`"a b"`}, "", problem.InvalidIdempotencyKey},
		{"unterminated quote", []string{`"abc`}, "", problem.InvalidIdempotencyKey},
		{"quoted with parameters", []string{`"abc";x=1`}, "", problem.InvalidIdempotencyKey},
		{"non-ASCII", []string{"키"}, "", problem.InvalidIdempotencyKey},
		{"control character", []string{"a\x01b"}, "", problem.InvalidIdempotencyKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest("POST", "/transfers", nil)
			for _, f := range tc.fields {
				r.Header.Add(idemkey.Header, f)
			}
			key, err := idemkey.FromRequest(r)
			if tc.want == nil {
				if err != nil || key != tc.key {
					t.Fatalf("got %q, %v; want %q", key, err, tc.key)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %q, %v; want problem %s", key, err, tc.want.Name)
			}
		})
	}
}
