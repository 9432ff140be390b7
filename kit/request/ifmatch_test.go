package request_test

import (
	"net/http"
	"slices"
	"testing"

	"idemlab/kit/request"
)

// TestIfMatch_ReadsTheListAsRFC9110Does: every field joins one list, weak
// tags are read and left out, a comma inside a tag belongs to the tag, and
// anything that is not a list of entity tags is refused. A reader that
// takes the header as one tag refuses every list; one that keeps weak tags
// lets W/"v3" match; one that splits on commas breaks "a,b".
func TestIfMatch_ReadsTheListAsRFC9110Does(t *testing.T) {
	for _, c := range []struct {
		fields []string
		want   request.Precondition
		ok     bool
	}{
		{nil, request.Precondition{}, true},
		{[]string{"*"}, request.Precondition{Sent: true, Any: true}, true},
		{[]string{` * `}, request.Precondition{Sent: true, Any: true}, true},
		{[]string{`"v3"`}, strong(`"v3"`), true},
		{[]string{`"v1", "v3"`}, strong(`"v1"`, `"v3"`), true},
		{[]string{`"v1"`, `"v3"`}, strong(`"v1"`, `"v3"`), true},
		{[]string{`W/"v3", "v1"`}, strong(`"v1"`), true},
		{[]string{`W/"v3"`}, strong(), true},
		{[]string{`"a,b" ,, "c"`}, strong(`"a,b"`, `"c"`), true},
		{[]string{`""`}, strong(`""`), true},
		{[]string{``}, request.Precondition{Sent: true}, false},
		{[]string{`v3`}, request.Precondition{Sent: true}, false},
		{[]string{`"v3`}, request.Precondition{Sent: true}, false},
		{[]string{`"v3" "v4"`}, request.Precondition{Sent: true}, false},
		{[]string{`"v3", *`}, request.Precondition{Sent: true}, false},
		{[]string{`w/"v3"`}, request.Precondition{Sent: true}, false},
		{[]string{`"v 3"`}, request.Precondition{Sent: true}, false},
		{[]string{`,`}, request.Precondition{Sent: true}, false},
	} {
		h := http.Header{}
		for _, f := range c.fields {
			h.Add("If-Match", f)
		}
		got, ok := request.IfMatch(h)
		if ok != c.ok || got.Sent != c.want.Sent || got.Any != c.want.Any || !slices.Equal(got.Strong, c.want.Strong) {
			t.Errorf("If-Match %q: %+v, ok %v; want %+v, ok %v", c.fields, got, ok, c.want, c.ok)
		}
	}
}

func strong(tags ...string) request.Precondition {
	return request.Precondition{Sent: true, Strong: append([]string{}, tags...)}
}
