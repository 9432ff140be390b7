package stage9

import (
	"crypto/sha256"
	"encoding/hex"

	"idemlab/kit/canonical"
	"idemlab/kit/problem"
)

// fingerprint names what a request asks for: the hex SHA-256 of its
// body's RFC 8785 canonical form. Two bodies that differ only in member
// order, whitespace, string escapes (\u0041 for A) or the spelling of a
// number (3e5 for 300000) have one canonical form, so a retry matches its
// original; an edited amount does not. It returns 400 invalid-request for
// a body that is not JSON.
func fingerprint(raw []byte) (string, error) {
	canon, err := canonical.Transform(raw)
	if err != nil {
		return "", problem.Wrap(problem.InvalidRequest, err, "the body could not be put in canonical form")
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
