package replay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// seenContext is a RoundTripper that keeps the context its request came
// with, and answers with a body or fails.
type seenContext struct {
	ctx  context.Context
	fail bool
}

func (s *seenContext) RoundTrip(req *http.Request) (*http.Response, error) {
	s.ctx = req.Context()
	if s.fail {
		return nil, errors.New("connection refused")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// TestTimeLimit_TheBodyIsReadUnderTheLimit: the request goes out with a
// deadline requestLimit away, which lasts until its body is closed (a
// body that stalls is read under it) and no longer; a request that fails
// ends its context as it returns. A context ended when RoundTrip returns
// would cut every body short; one never ended would keep its timer for a
// minute after each request.
func TestTimeLimit_TheBodyIsReadUnderTheLimit(t *testing.T) {
	base := &seenContext{}
	req, err := http.NewRequest(http.MethodGet, "http://lab.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := timeLimit{base}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	deadline, ok := base.ctx.Deadline()
	if !ok || deadline.Before(start.Add(requestLimit)) || deadline.After(time.Now().Add(requestLimit)) {
		t.Errorf("the request went out with deadline %v (set: %v); want %v after it left", deadline, ok, requestLimit)
	}
	if err := base.ctx.Err(); err != nil {
		t.Errorf("the request's context ended before its body was read: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if base.ctx.Err() == nil {
		t.Error("the request's context still runs once its body is closed")
	}

	base.fail = true
	if _, err := (timeLimit{base}).RoundTrip(req); err == nil {
		t.Fatal("a failing transport's request succeeded")
	}
	if base.ctx.Err() == nil {
		t.Error("the context of a request that failed still runs")
	}
}
