package grader_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/solutions/stage7"
)

// etagScheme serves stage 7's solution with ETags of another form: every
// ETag it sends ("vN") is replaced by tag(account, "vN"), and every tag
// of an If-Match is put back as the solution wrote it only if the scheme
// gave it out for that account; any other (a tag of another account, or
// one spelled otherwise) names no version. The solution's writes and
// their conditions are left as they are: only the spelling of the tags
// changes, as in a student's server that names its versions another way.
func etagScheme(tag func(account, etag string) string) func(http.Handler) http.Handler {
	// versions maps a tag given out for an account to the solution's own.
	type given struct{ account, tag string }
	var mu sync.Mutex
	versions := map[given]string{}
	quoted := regexp.MustCompile(`"[^"]*"`)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rest, ok := strings.CutPrefix(r.URL.Path, "/accounts/")
			account, isSettings := strings.CutSuffix(rest, "/settings")
			if !ok || !isSettings {
				next.ServeHTTP(w, r)
				return
			}
			if values := r.Header.Values("If-Match"); len(values) > 0 {
				r.Header.Del("If-Match")
				for _, v := range values {
					r.Header.Add("If-Match", quoted.ReplaceAllStringFunc(v, func(t string) string {
						mu.Lock()
						defer mu.Unlock()
						if v, ok := versions[given{account, t}]; ok {
							return v
						}
						return `"unknown"`
					}))
				}
			}
			answer := httptest.NewRecorder()
			next.ServeHTTP(answer, r)
			if v := answer.Header().Get("ETag"); v != "" {
				t := tag(account, v)
				mu.Lock()
				versions[given{account, t}] = v
				mu.Unlock()
				answer.Header().Set("ETag", t)
			}
			maps.Copy(w.Header(), answer.Header())
			w.WriteHeader(answer.Code)
			w.Write(answer.Body.Bytes())
		})
	}
}

// numberAlone is the solution's ETag without its v: "3" for "v3".
func numberAlone(_, etag string) string { return strings.Replace(etag, `"v`, `"`, 1) }

// readAsNumbers reads every tag of an If-Match as a number, as a server
// that parses its version out of the tag does: its leading zeros go, so
// that "03" names the version of "3".
func readAsNumbers(next http.Handler) http.Handler {
	zeros := regexp.MustCompile(`"0+([0-9])`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if values := r.Header.Values("If-Match"); len(values) > 0 {
			r.Header.Del("If-Match")
			for _, v := range values {
				r.Header.Add("If-Match", zeros.ReplaceAllString(v, `"$1`))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestIfMatchList_CatchesATagReadAsANumber: behind tags that are the
// number alone, a server that reads the number out of a tag lets "03"
// match "3", a tag it never sent; S7.if-match-list fails it, whatever
// the tags' spelling, and says why that mistake matters, not why every
// mistake with a list does.
func TestIfMatchList_CatchesATagReadAsANumber(t *testing.T) {
	loose := func(next http.Handler) http.Handler { return readAsNumbers(etagScheme(numberAlone)(next)) }
	f := ifMatchListFailure(t, loose)
	if !strings.HasPrefix(f.Got, "200") || !strings.Contains(f.Sent, "a 0 put in before its first digit") {
		t.Errorf("failed on %q with %q, want the padded tag answered 200", f.Sent, f.Got)
	}
	if !strings.Contains(f.Why, "reads the version out of a tag as a number") {
		t.Errorf("why: %q, want the one that speaks of tags read as numbers", f.Why)
	}
}

// TestStage7_AnotherETagSchemePasses: the checks of stage 7 judge the
// versions a server keeps, not how it spells their tags. The solution
// behind tags of other forms (the number alone, a hash, a random token)
// passes every check of the stage that can run against one process.
func TestStage7_AnotherETagSchemePasses(t *testing.T) {
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	var tokens sync.Map
	for _, scheme := range []struct {
		name string
		tag  func(account, etag string) string
	}{
		{"the number alone", numberAlone},
		{"a hash", func(a, v string) string {
			sum := sha256.Sum256([]byte(a + v))
			return `"` + hex.EncodeToString(sum[:8]) + `"`
		}},
		{"a random token", func(a, v string) string {
			fresh := make([]byte, 8)
			rand.Read(fresh)
			t, _ := tokens.LoadOrStore(a+v, fmt.Sprintf(`"%x"`, fresh))
			return t.(string)
		}},
	} {
		t.Run(scheme.name, func(t *testing.T) {
			for _, c := range grader.Catalogue() {
				if c.Stage != 7 {
					continue
				}
				r := grader.RunCheck(context.Background(), subject, c, 11, serveWrapped(t, stage7.New, etagScheme(scheme.tag)))
				switch {
				case r.Caught():
					t.Errorf("%s failed the solution behind tags spelled as %s:\n%s", c.ID, scheme.name, grader.Format(r, ""))
				case !r.Passed():
					t.Logf("%s could not run: %v", c.ID, r.Err)
				}
			}
		})
	}
}

// emptyAsAbsent takes an If-Match whose fields hold no tag at all for no
// If-Match, as a server that joins the fields and tests the result for
// "" does: a list in two fields, one of them empty, is still read, but an
// If-Match that is there and empty gets 428, and nothing is written.
func emptyAsAbsent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if values := r.Header.Values("If-Match"); len(values) > 0 && strings.TrimSpace(strings.Join(values, "")) == "" {
			r.Header.Del("If-Match")
		}
		next.ServeHTTP(w, r)
	})
}

// TestIfMatchList_AnEmptyIfMatchRefusedOtherwise: a server that answers
// an empty If-Match with 428 writes nothing; S7.if-match-list fails it,
// and its why speaks of the refusal it chose, not of a write over a
// version.
func TestIfMatchList_AnEmptyIfMatchRefusedOtherwise(t *testing.T) {
	f := ifMatchListFailure(t, emptyAsAbsent)
	if !strings.HasPrefix(f.Got, "428") || !strings.Contains(f.Sent, "there and empty") {
		t.Errorf("failed on %q with %q, want the empty If-Match answered 428", f.Sent, f.Got)
	}
	if strings.Contains(f.Why, "writes over") || !strings.Contains(f.Why, "428") {
		t.Errorf("why: %q, want the one that speaks of a 428 for a header that was sent", f.Why)
	}
}

// ifMatchListFailure runs S7.if-match-list (seed 11) on stage 7's
// solution behind wrap, and returns the failure it must report.
func ifMatchListFailure(t *testing.T, wrap func(http.Handler) http.Handler) *judging.Failure {
	t.Helper()
	c, ok := grader.Lookup("S7.if-match-list")
	if !ok {
		t.Fatal("no check S7.if-match-list")
	}
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	r := grader.RunCheck(context.Background(), subject, c, 11, serveWrapped(t, stage7.New, wrap))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("the check did not fail: %v", r.Err)
	}
	return f
}
