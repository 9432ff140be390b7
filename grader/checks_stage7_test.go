package grader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"idemlab/grader"
	"idemlab/grader/judging"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/solutions/stage7"
)

// settingsBodies serves stage 7's solution, with the body of every PUT
// of the settings passed through change first: nil lets the request
// through as it is, an error answers it.
func settingsBodies(t *testing.T, change func([]byte) ([]byte, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/settings") {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				if body, err = change(body); err != nil {
					problem.Write(w, err)
					return
				}
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// cleaned is the nickname "cleaned up" instead of refused: the
// characters a reader cannot see taken out, and what is not UTF-8 turned
// into U+FFFD, as encoding/json does.
func cleaned(body []byte) ([]byte, error) {
	body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	return bytes.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp) {
			return -1
		}
		return r
	}, body), nil
}

// noJoiners refuses every body with U+200D, an emoji sequence's joiner
// included.
func noJoiners(body []byte) ([]byte, error) {
	if bytes.ContainsRune(body, '\u200d') {
		return nil, problem.New(problem.InvalidRequest, "nickname: U+200D is invisible")
	}
	return body, nil
}

// TestSettingsHiddenCharacters_CatchesCleanedAndOvershootingNicknames:
// S7.settings-hidden-characters fails a server that cleans a hidden
// character out of a nickname and saves the rest, and one that refuses
// the joiner of an emoji sequence; the same harness letting the bodies
// through passes.
func TestSettingsHiddenCharacters_CatchesCleanedAndOvershootingNicknames(t *testing.T) {
	c, ok := grader.Lookup("S7.settings-hidden-characters")
	if !ok {
		t.Fatal("no check S7.settings-hidden-characters")
	}
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	asIs := func(body []byte) ([]byte, error) { return body, nil }
	for _, tc := range []struct {
		name   string
		change func([]byte) ([]byte, error)
		got    string // what the failure's got line says; "" for a pass
	}{
		{"the bodies as sent", asIs, ""},
		{"hidden characters cleaned out", cleaned, "200"},
		{"every joiner refused", noJoiners, "400 /problems/invalid-request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := grader.RunCheck(context.Background(), subject, c, 11, serveWrapped(t, stage7.New, settingsBodies(t, tc.change)))
			var f *judging.Failure
			switch {
			case tc.got == "" && r.Err != nil:
				t.Fatalf("the solution behind the harness failed: %v", r.Err)
			case tc.got == "":
			case !errors.As(r.Err, &f):
				t.Fatalf("the check did not fail: %v", r.Err)
			case !strings.HasPrefix(f.Got, tc.got):
				t.Errorf("got %q, want it to start %q", f.Got, tc.got)
			}
		})
	}
}

// firstValue reads the body as encoding/json's Decoder does: the first
// value, and whatever follows it left unread.
func firstValue(body []byte) ([]byte, error) {
	var first json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&first); err != nil {
		return body, nil
	}
	return first, nil
}

// TestSettingsContract_CatchesABodyReadToItsFirstValue: a server that
// reads a PUT body's first JSON value and ignores what follows saves a
// body the contract refuses; S7.settings-contract fails it.
func TestSettingsContract_CatchesABodyReadToItsFirstValue(t *testing.T) {
	c, ok := grader.Lookup("S7.settings-contract")
	if !ok {
		t.Fatal("no check S7.settings-contract")
	}
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	r := grader.RunCheck(context.Background(), subject, c, 11, serveWrapped(t, stage7.New, settingsBodies(t, firstValue)))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("the check did not fail: %v", r.Err)
	}
	if !strings.Contains(f.Sent, "a second object after the first") || !strings.HasPrefix(f.Got, "200") {
		t.Errorf("failed on %q with %q, want the second object answered 200", f.Sent, f.Got)
	}
}

// alreadyThere answers a PUT of the settings that the solution refuses
// 412 as lesson 07's "A retried PUT" allows (RFC 9110: the change is
// already there): if a GET then shows the settings the PUT sent, 200
// with them and their current ETag.
func alreadyThere(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/settings") {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		put := httptest.NewRecorder()
		next.ServeHTTP(put, r)
		answer := put
		if put.Code == http.StatusPreconditionFailed {
			get := httptest.NewRecorder()
			read := r.Clone(r.Context())
			read.Method, read.Body, read.ContentLength = http.MethodGet, http.NoBody, 0
			read.Header.Del("If-Match")
			next.ServeHTTP(get, read)
			var sent, now bank.Settings
			if get.Code == http.StatusOK && json.Unmarshal(body, &sent) == nil &&
				json.Unmarshal(get.Body.Bytes(), &now) == nil && sent == now {
				answer = get
			}
		}
		maps.Copy(w.Header(), answer.Header())
		w.WriteHeader(answer.Code)
		w.Write(answer.Body.Bytes())
	})
}

// TestStage7_AChangeAlreadyThereIsAnswered200: a server that answers a
// PUT whose change is already there 200, with the current ETag, as lesson
// 07 allows, passes the stage-7 checks of lost updates; the many clerks'
// PUTs each carry a change of their own, so none of them finds its change
// there before it made it.
func TestStage7_AChangeAlreadyThereIsAnswered200(t *testing.T) {
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	for _, id := range []string{"S7.many-clerks", "S7.retried-put", "S7.two-clerks"} {
		t.Run(id, func(t *testing.T) {
			c, ok := grader.Lookup(id)
			if !ok {
				t.Fatal("no check " + id)
			}
			for _, seed := range []uint64{1, 7} {
				if r := grader.RunCheck(context.Background(), subject, c, seed, serveWrapped(t, stage7.New, alreadyThere)); r.Err != nil {
					t.Errorf("seed %d: %v", seed, r.Err)
				}
			}
		})
	}
}

// TestStage7_ManyClerksCountsTheGETApart: S7.many-clerks' got line
// counts the five PUTs' first answers apart from the sixth clerk's GET;
// "6× 200" read as six PUTs told 200. The server behind the harness
// saves every PUT over whatever version is current (it sends the current
// ETag in place of the clerk's If-Match), so every PUT is told 200.
func TestStage7_ManyClerksCountsTheGETApart(t *testing.T) {
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	c, ok := grader.Lookup("S7.many-clerks")
	if !ok {
		t.Fatal("no check S7.many-clerks")
	}
	overwrite := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut {
				next.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			var answer *httptest.ResponseRecorder
			for range 20 {
				get := httptest.NewRecorder()
				read := r.Clone(r.Context())
				read.Method, read.Body, read.ContentLength = http.MethodGet, http.NoBody, 0
				read.Header.Del("If-Match")
				next.ServeHTTP(get, read)
				put := r.Clone(r.Context())
				put.Body, put.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				put.Header.Set("If-Match", get.Header().Get("ETag"))
				answer = httptest.NewRecorder()
				next.ServeHTTP(answer, put)
				if answer.Code != http.StatusPreconditionFailed {
					break
				}
			}
			maps.Copy(w.Header(), answer.Header())
			w.WriteHeader(answer.Code)
			w.Write(answer.Body.Bytes())
		})
	}
	r := grader.RunCheck(context.Background(), subject, c, 1, serveWrapped(t, stage7.New, overwrite))
	var f *judging.Failure
	if !errors.As(r.Err, &f) {
		t.Fatalf("the check did not fail: %v", r.Err)
	}
	if want := "first PUTs: 5× 200; clerk 6's GET: 200; 6 successful PUTs"; !strings.HasPrefix(f.Got, want) {
		t.Errorf("got %q, want it to start %q", f.Got, want)
	}
}

// S7.daily-limit reads the settings while a raise waits on the core's
// confirmation (2 s, twice: half of it, then three quarters) every
// 20 ms, not every few milliseconds: a write it is there to catch stays
// written, and a read a few milliseconds apart only loads the machine the
// server shares. The check passes as before, with at most about 130
// reads of the settings in those waits (and a handful besides); polling
// every 3 ms, as before, it sent several hundred.
func TestDailyLimit_ReadsTheSettingsGently(t *testing.T) {
	c, ok := grader.Lookup("S7.daily-limit")
	if !ok {
		t.Fatal("no check S7.daily-limit")
	}
	var reads atomic.Int64
	start := serveWrapped(t, stage7.New, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/settings") {
				reads.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	subject := grader.Subject{Stage: 7, Name: "solutions/stage7", New: stage7.New}
	if err := grader.RunCheck(context.Background(), subject, c, 7, start).Err; err != nil {
		t.Fatalf("solutions/stage7: %v", err)
	}
	if n := reads.Load(); n > 250 {
		t.Errorf("%d reads of the settings, want about 130 at most: the reads while the core confirms come every 20 ms", n)
	}
}
