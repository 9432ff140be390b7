package request

import (
	"net/http"
	"strings"

	"idemlab/kit/problem"
)

// MaxIfMatchTags is how many entity tags an If-Match list may hold, weak
// ones and repeats counted: a client lists the ETags of the copies it
// holds, a handful. A server that checks them in one statement binds one
// parameter for each, and every engine bounds how many one statement may
// have (32,766 on SQLite, 65,535 on PostgreSQL): the lab's bound on
// headers (16 KiB, about 3,000 tags) keeps a list under it today, and
// this one keeps it far under whatever bounds the headers, with a 400
// that says why.
const MaxIfMatchTags = 100

// Precondition is an If-Match header as RFC 9110 §13.1.1 reads it: absent,
// "*", or a list of entity tags, every If-Match field of the request
// joined into one list.
type Precondition struct {
	// Sent is false when the request has no If-Match at all.
	Sent bool
	// Any is true for If-Match: * (any current representation).
	Any bool
	// Strong are the list's strong entity tags, quotes included ("v3"),
	// in the order sent. Weak tags (W/"v3") are left out: If-Match
	// compares strongly, and a weak tag never matches.
	Strong []string
}

// IfMatch reads the If-Match fields of h. A field that is not "*" or a
// comma-separated list of entity tags (a bare word, a quote left open,
// "*" inside a list) names no version of anything; it returns ok false.
// A list of more than MaxIfMatchTags tags is an invalid request: it
// returns a problem.InvalidRequest error that names the limit.
func IfMatch(h http.Header) (p Precondition, ok bool, err error) {
	fields := h.Values("If-Match")
	if len(fields) == 0 {
		return Precondition{}, true, nil
	}
	p.Sent = true
	list := strings.Trim(strings.Join(fields, ","), " \t")
	if list == "*" {
		p.Any = true
		return p, true, nil
	}
	p.Strong = []string{}
	// Empty elements between commas are allowed (RFC 9110 §5.6.1); at
	// least one tag is not.
	tags := 0
	for rest := list; ; {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			return p, tags > 0, nil
		}
		weak := strings.HasPrefix(rest, "W/")
		if weak {
			rest = rest[2:]
		}
		tag, after, found := opaqueTag(rest)
		if !found {
			return Precondition{Sent: true}, false, nil
		}
		if tags++; tags > MaxIfMatchTags {
			return Precondition{Sent: true}, false, problem.New(problem.InvalidRequest,
				"If-Match lists more than %d entity tags; list at most %d, the ETags of the copies you hold", MaxIfMatchTags, MaxIfMatchTags)
		}
		if !weak {
			p.Strong = append(p.Strong, tag)
		}
		rest = strings.TrimLeft(after, " \t")
		if rest != "" && rest[0] != ',' {
			return Precondition{Sent: true}, false, nil
		}
	}
}

// opaqueTag reads the quoted string at the start of s (RFC 9110 §8.8.3:
// a double quote, any visible character but a double quote, a double
// quote). It returns the tag, quotes included, and what follows it.
func opaqueTag(s string) (tag, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[:i+1], s[i+1:], true
		case c < 0x21 || c == 0x7f:
			return "", s, false
		}
	}
	return "", s, false
}
