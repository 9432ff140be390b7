// Package accesslog is the server-side access log of a lab server, one
// JSON record per request, and the report stage 0's Tally makes of it.
package accesslog

import (
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"
)

// Record is one line of the access log: what the server log of a real
// payment API would hold.
type Record struct {
	Time       string  `json:"time"`
	Customer   string  `json:"customer,omitempty"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Key        string  `json:"idempotency_key,omitempty"`
	Status     int     `json:"status"`
	Type       string  `json:"type,omitempty"`
	Replayed   bool    `json:"replayed,omitempty"`
	Op         string  `json:"op,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Body is the request body exactly as received.
	Body string `json:"body,omitempty"`
	// Cut names the fields that were longer than their limit (MaxPath,
	// MaxBody, MaxField) and hold only its first bytes.
	Cut []string `json:"cut,omitempty"`
}

// Limits on what a record holds of each field a client chooses, so that a
// line stays small whatever the client sends. A field over its limit is
// cut to it, at a character boundary, and named in Record.Cut.
const (
	// MaxPath is the most of the path a record holds.
	MaxPath = 1 << 10
	// MaxBody is the largest body a lab server accepts
	// (kit/request.MaxBody): every body it executed is whole.
	MaxBody = 16 << 10
	// MaxField is the most a record holds of the method, the customer,
	// the Idempotency-Key, the problem type and the op.
	MaxField = 256
)

// bounded returns rec with every field the client chooses cut to its limit.
func (rec Record) bounded() Record {
	rec.Cut = nil
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{
		{"method", &rec.Method, MaxField},
		{"path", &rec.Path, MaxPath},
		{"customer", &rec.Customer, MaxField},
		{"idempotency_key", &rec.Key, MaxField},
		{"type", &rec.Type, MaxField},
		{"op", &rec.Op, MaxField},
		{"body", &rec.Body, MaxBody},
	} {
		if len(*f.v) > f.max {
			*f.v = cut(*f.v, f.max)
			rec.Cut = append(rec.Cut, f.name)
		}
	}
	return rec
}

// cut returns s's first n bytes, or fewer so as not to split a UTF-8
// sequence (s need not be valid UTF-8: a client chose it).
func cut(s string, n int) string {
	for back := 0; back < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); back++ {
		n--
	}
	return s[:n]
}

// Writer appends records to a stream; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write appends one record, its client-chosen fields cut to their limits,
// and returns the stream's error, if any.
func (l *Writer) Write(rec Record) error {
	line, err := json.Marshal(rec.bounded())
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(line, '\n'))
	return err
}

// Report is what stage 0's Tally finds in a day's access log.
type Report struct {
	// Executed is how many POST /transfers the server executed (answered
	// 201), with or without an Idempotency-Key.
	Executed int `json:"executed"`
	// Groups is how many (customer, Idempotency-Key) pairs were executed
	// more than once. A transfer sent without a key is in no group: no
	// retry can be matched to it, so it is never counted as a double.
	Groups int `json:"groups"`
	// DoubleTransfers is how many executions came after the first of their
	// group: each one moved money the customer meant to move once.
	DoubleTransfers int `json:"double_transfers"`
	// ExactDuplicates are the double transfers whose body is the same
	// request as the group's first (the same RFC 8785 canonical form).
	ExactDuplicates int `json:"exact_duplicates"`
	// EditedResubmissions are the double transfers whose body differs from
	// the group's first: the same key reused for an edited request.
	EditedResubmissions int `json:"edited_resubmissions"`
	// MoneySentTwice is the sum, in won, of the double transfers' amounts.
	MoneySentTwice int64 `json:"money_sent_twice"`
}
