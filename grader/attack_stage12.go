package grader

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"idemlab/grader/judging"
	"idemlab/kit/canonical"
)

// quoteKey writes key as an RFC 8941 sf-string, the IETF draft's form of
// the Idempotency-Key header: in double quotes, with every " and \ inside
// escaped by a backslash.
func quoteKey(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

// Staggered sends n requests one after another, request i leaving gaps[i]
// after request i-1 without waiting for any answer, and returns the
// responses in order. Arrivals a few milliseconds apart meet the first
// request at every point of its work (before its claim, inside its
// transaction, just after its commit), where a barrier burst meets it
// only at the start. The gaps shape the attack; the check waits for
// nothing with them.
func (t *T) Staggered(gaps []time.Duration, req func(i int) Request) []Response {
	out := make([]Response, len(gaps))
	var done sync.WaitGroup
	for i, gap := range gaps {
		if gap > 0 {
			pace := time.NewTimer(gap)
			select {
			case <-pace.C:
			case <-t.ctx.Done():
				pace.Stop()
			}
		}
		r := req(i)
		done.Add(1)
		go func() {
			defer done.Done()
			out[i] = t.send(fmt.Sprintf("client %d", i+1), r)
		}()
	}
	done.Wait()
	return out
}

// gaps draws n arrival gaps from the check's seed, in steps of 0.1 ms
// between 0 and most, the first 0. About one in four is 0: two requests
// leave together.
func (t *T) gaps(n int, most time.Duration) []time.Duration {
	const step = 100 * time.Microsecond
	out := make([]time.Duration, n)
	for i := 1; i < n; i++ {
		if t.Rand().IntN(4) > 0 {
			out[i] = step * time.Duration(t.Rand().Int64N(int64(most/step)+1))
		}
	}
	return out
}

// apart says gaps as Staggered sends by them, for a story: "0, 0, 1.8
// and 2.3 ms apart", each the wait before a request after the first.
func apart(gaps []time.Duration) string {
	ms := make([]string, len(gaps)-1)
	for i, g := range gaps[1:] {
		ms[i] = strconv.FormatFloat(float64(g)/float64(time.Millisecond), 'f', -1, 64)
	}
	if len(ms) < 2 {
		return strings.Join(ms, "") + " ms apart"
	}
	return strings.Join(ms[:len(ms)-1], ", ") + " and " + ms[len(ms)-1] + " ms apart"
}

// resourceID reads the id of the transfer or deposit a 201 answered with.
func resourceID(r Response) string {
	var v struct {
		ID string `json:"id"`
	}
	if r.Err != nil || json.Unmarshal(r.Body, &v) != nil {
		return ""
	}
	return v.ID
}

// mustExecute judges the answers rs to requests under keys never used
// before, each of which must execute (201 with a transfer or deposit of
// its own). record books one execution. ids holds the ids the check has
// seen, so that an answer carrying another operation's id is told apart.
// Money is judged first: the books are reconciled with the answers that
// ran; then the client of an answer that did not run is named: told
// "already done" (409), it was told duplicate and its request never ran;
// handed another operation's 201, it has the wrong answer.
func (t *T) mustExecute(sent string, rs []Response, op string, books *judging.Books, record func(), ids map[string]bool) error {
	var refused []Response
	for _, r := range rs {
		id := resourceID(r)
		if toldRan(r, op) && id != "" && !ids[id] {
			// Told that it ran: booked, whatever the status; another 2xx
			// than 201 is then judged below as an answer that is not one.
			ids[id] = true
			record()
			if r.Is(http.StatusCreated, "") {
				continue
			}
		}
		refused = append(refused, r)
	}
	books.Expect(op)
	if err := t.Reconcile(sent, Summarize(rs), books); err != nil || len(refused) == 0 {
		return err
	}
	const expected = "201 Created with a transfer of its own: a key never used before is a new operation"
	r := refused[0]
	switch {
	case r.Is(http.StatusConflict, ""):
		return t.toldDuplicate(sent, r.String(), expected)
	case r.Is(http.StatusCreated, ""):
		return t.Harmful(judging.WrongAnswer, sent, r.String(), expected+"; this answer is another operation's")
	}
	return t.Fail(sent, r.String(), expected)
}

// rfc8785Fingerprint is the fingerprint docs/api.md asks the key table to
// hold for a body, the lowercase hex SHA-256 of its RFC 8785 canonical
// form, and that form.
func rfc8785Fingerprint(body string) (fingerprint, canon string, err error) {
	c, err := canonical.Transform([]byte(body))
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), string(c), nil
}
