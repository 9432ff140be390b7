// Package canonical writes JSON in the RFC 8785 canonical form (JCS):
// members sorted by their UTF-16 code units, no insignificant whitespace,
// strings with the minimal escapes, numbers as ECMAScript prints them.
// Two bodies that mean the same request have the same canonical bytes, so
// a fingerprint over them tells an edited request from a retry, and not
// from a retry whose client wrote its members in another order.
//
// It wraps github.com/gowebpki/jcs, which passes the RFC's reference
// vectors (see canonical_test.go); canonicalisation has enough corners
// (number formatting, UTF-16 ordering) that hand-written code is a risk.
package canonical

import (
	"fmt"

	"github.com/gowebpki/jcs"
)

// Transform returns the canonical form of one JSON value. It returns an
// error for input that is not JSON.
func Transform(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return out, nil
}

// Form returns what body says, the bytes to compare when two bodies are
// compared by value rather than by spelling: body's canonical form if it
// is one JSON value, body itself if it is not JSON (no body, one cut
// short, one with a second value after the first, plain text). Two bodies
// say the same exactly when their forms are equal: members in another
// order, other spacing, escapes or number spellings are other bytes of one
// value; a body that is not JSON is compared byte for byte, and never
// equals one that is, since a canonical form is JSON.
func Form(body []byte) []byte {
	if canon, err := Transform(body); err == nil {
		return canon
	}
	return body
}
