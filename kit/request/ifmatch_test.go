package request_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"idemlab/kit/problem"
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
		{[]string{``, `"v3"`}, strong(`"v3"`), true},
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
		got, ok, err := request.IfMatch(h)
		if err != nil {
			t.Errorf("If-Match %q: %v; want no error", c.fields, err)
		}
		if ok != c.ok || got.Sent != c.want.Sent || got.Any != c.want.Any || !slices.Equal(got.Strong, c.want.Strong) {
			t.Errorf("If-Match %q: %+v, ok %v; want %+v, ok %v", c.fields, got, ok, c.want, c.ok)
		}
	}
}

// TestIfMatch_RefusesAListLongerThanTheLimit: a list of MaxIfMatchTags
// tags, weak ones and repeats counted, in one field or several, is read;
// one tag more is a 400 invalid-request that names the limit, however
// long the list: a server that checks the tags in one statement, one
// parameter each, stays far under the engine's own bound (tens of
// thousands), whatever bounds the headers.
func TestIfMatch_RefusesAListLongerThanTheLimit(t *testing.T) {
	list := func(n int) string {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = fmt.Sprintf(`"v%d"`, i%7)
		}
		tags[0] = `W/"v1"`
		return strings.Join(tags, ", ")
	}
	h := http.Header{"If-Match": {list(request.MaxIfMatchTags - 1), `"v9"`}}
	if p, ok, err := request.IfMatch(h); err != nil || !ok || len(p.Strong) != request.MaxIfMatchTags-1 {
		t.Errorf("%d tags in two fields: %d strong, ok %v, %v; want %d strong, ok, no error", request.MaxIfMatchTags, len(p.Strong), ok, err, request.MaxIfMatchTags-1)
	}
	for _, n := range []int{request.MaxIfMatchTags + 1, 70_000} {
		h := http.Header{"If-Match": {list(n)}}
		_, _, err := request.IfMatch(h)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Type != problem.InvalidRequest || !strings.Contains(pe.Detail, strconv.Itoa(request.MaxIfMatchTags)) {
			t.Errorf("%d tags: %v; want a 400 invalid-request that names the limit of %d", n, err, request.MaxIfMatchTags)
		}
	}
}

func strong(tags ...string) request.Precondition {
	return request.Precondition{Sent: true, Strong: append([]string{}, tags...)}
}
