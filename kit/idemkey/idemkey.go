// Package idemkey reads the Idempotency-Key header. It accepts the IETF
// draft's form, an RFC 8941 sf-string (Idempotency-Key: "8e0f…"), and the
// common bare form (Idempotency-Key: 8e0f…); both name the same key.
package idemkey

import (
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"

	"idemlab/kit/problem"
)

// Header is the header's name.
const Header = "Idempotency-Key"

// MaxLen is the longest key accepted, in characters.
const MaxLen = 255

// FromRequest returns the request's key. It returns a problem error: 400
// missing-idempotency-key when there is no header, and 400
// invalid-idempotency-key when there is more than one field, or the key is
// malformed, empty or too long.
func FromRequest(r *http.Request) (string, error) {
	values := r.Header.Values(Header)
	switch len(values) {
	case 0:
		return "", problem.New(problem.MissingIdempotencyKey, "send an %s header; the same key on every retry of one operation", Header)
	case 1:
	default:
		return "", problem.New(problem.InvalidIdempotencyKey, "%d %s fields; send exactly one", len(values), Header)
	}
	return Parse(values[0])
}

// Parse reads one field value. Errors as for FromRequest.
func Parse(field string) (string, error) {
	v := strings.Trim(field, " \t")
	key := v
	if strings.HasPrefix(v, `"`) {
		item, err := httpsfv.UnmarshalItem([]string{v})
		if err != nil {
			return "", problem.New(problem.InvalidIdempotencyKey, "%s is not a valid quoted string", Header)
		}
		s, ok := item.Value.(string)
		if !ok || len(item.Params.Names()) > 0 {
			return "", problem.New(problem.InvalidIdempotencyKey, "%s must be a plain quoted string, without parameters", Header)
		}
		key = s
	}
	if err := Check(key); err != nil {
		return "", err
	}
	return key, nil
}

// Check returns nil if key, already unquoted (a member of a JSON body,
// such as a key in the core ledger's batch of postings), is a valid key,
// and else the problem error Parse returns for it.
func Check(key string) error {
	switch {
	case key == "":
		return problem.New(problem.InvalidIdempotencyKey, "%s is empty", Header)
	case len(key) > MaxLen:
		return problem.New(problem.InvalidIdempotencyKey, "%s is %d characters; the limit is %d", Header, len(key), MaxLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return problem.New(problem.InvalidIdempotencyKey,
				"%s may hold only printable ASCII (0x21 to 0x7E); byte %d is 0x%02X", Header, i, c)
		}
	}
	return nil
}
