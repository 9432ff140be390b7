// Package accesslog is the server-side access log of a lab server, one
// JSON record per request, and the report stage 0's Tally makes of it.
package accesslog

import (
	"encoding/json"
	"io"
	"sync"
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
}

// Writer appends records to a stream; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write appends one record and returns the stream's error, if any.
func (l *Writer) Write(rec Record) error {
	line, err := json.Marshal(rec)
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
	// Executed is how many POST /transfers the server executed (answered 201).
	Executed int `json:"executed"`
	// Groups is how many (customer, Idempotency-Key) pairs were executed
	// more than once.
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
