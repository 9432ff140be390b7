package grader

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"idemlab/kit/labctl"
)

// strand leaves req's key in progress the way a crash does: it arms
// crash-in-transfer and sends req, whose business write dies before its
// commit (in process the request is aborted; a child process exits and is
// restarted). It returns what the client heard, and fails if it was a
// success.
func (t *T) strand(req Request) (Response, error) {
	if err := t.Arm(labctl.CrashInTransfer, 1); err != nil {
		return Response{}, err
	}
	r := t.Do(req)
	if r.Is(http.StatusCreated, "") {
		return r, t.Fail(req.String()+"\n(armed: crash-in-transfer)", r.String(), "no answer: the process died inside the business write")
	}
	if t.target.Child != nil {
		exited, err := t.Crashed(10 * time.Second)
		if err != nil {
			return r, err
		}
		if !exited {
			return r, fmt.Errorf("crash-in-transfer was armed and the request sent, but the server did not exit")
		}
		if err := t.Restart(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// lease reads the lease period in force.
func (t *T) lease() (time.Duration, error) {
	st, err := t.State()
	if err != nil {
		return 0, err
	}
	return time.ParseDuration(st.Config.Lease)
}

// retryUntilDone retries req as a client does after losing its answer:
// the same key and body, until it gets a final answer (anything but a 5xx,
// a dropped connection or 409 request-in-progress). Instead of waiting
// out Retry-After it moves the lab clock past the lease, as if the
// client had waited. It returns the final answer and the story of the
// attempts.
func (t *T) retryUntilDone(req Request, lease time.Duration) (Response, string, error) {
	var story strings.Builder
	var r Response
	for attempt := 1; attempt <= 5; attempt++ {
		r = t.Do(req)
		fmt.Fprintf(&story, "\nretry %d  →  %s", attempt, r.Short())
		switch {
		case r.Is(http.StatusConflict, pInProgress):
			if err := t.Advance(lease + time.Second); err != nil {
				return r, story.String(), err
			}
			fmt.Fprintf(&story, ", then %v of lab time", lease+time.Second)
		case r.ServerFailed():
		default:
			return r, story.String(), nil
		}
	}
	return r, story.String(), nil
}
