// Package dayplan is the day plan that lab gen writes and lab replay
// drives (docs/grader.md, "A day of faults"): a business day of
// money-moving requests written down before any server exists, with what
// the network and the people will do to each of them.
//
// A plan is JSON Lines. The first line is a Header (format, version, seed,
// parameters, the command that made it); every other line is one logical
// operation (an Op): when it starts, who sends it, to which endpoint, with
// which Idempotency-Key and body, and its Fate: the failure points its
// attempts meet, whether it is double-clicked, whether a clerk resubmits it
// with the same key and an edited amount, whether it is retried after the
// retention period. From version 2 on, a plan may also hold invoice
// payments (transfers that carry a reference, some paid again under
// another key) and settings edits by two clerks at once. The same seed
// gives the same bytes.
package dayplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"idemlab/kit/bank"
)

// Format and Version name the file format in every header. Version 2
// added invoice payments and settings edits; a plan that has neither is
// written, and read, as version 1, so that the plans made before them
// keep their bytes.
const (
	Format  = "idemlab-day-plan"
	Version = 2
)

// Point is one of the seven failure points of a remote call
// (docs/grader.md), as the client's side of the wire sees it.
type Point string

// The seven failure points, in the order docs/grader.md numbers them.
const (
	// ConnectFails: the connection cannot be made; nothing was sent.
	ConnectFails Point = "connect-fails"
	// NeverArrives: the request was sent but was lost before the server.
	NeverArrives Point = "never-arrives"
	// TruncatedBody: the server receives only part of the body. It must
	// answer 400 and execute nothing; the client sees the connection break.
	TruncatedBody Point = "truncated-body"
	// Shed503: a load balancer sheds the request with 503 before the server.
	Shed503 Point = "shed-503"
	// Server5xx: the server fails with a 500 before doing any work.
	Server5xx Point = "server-5xx"
	// ResetAfterProcessing: the server processed the request, then the
	// connection was reset before the client read the response.
	ResetAfterProcessing Point = "reset-after-processing"
	// ResponseWithheld: the server processed the request but the response
	// never came; the client gave up when its timeout expired.
	ResponseWithheld Point = "response-withheld"
)

// Points lists the seven failure points in the order docs/grader.md
// numbers them.
var Points = []Point{ConnectFails, NeverArrives, TruncatedBody, Shed503, Server5xx, ResetAfterProcessing, ResponseWithheld}

// Reached reports whether the server ran the request at this point; the
// points where it did, and the client does not know, are the ones that
// move money twice when the retry is executed again.
func (p Point) Reached() bool { return p == ResetAfterProcessing || p == ResponseWithheld }

// Valid reports whether p is one of the seven points.
func (p Point) Valid() bool {
	for _, q := range Points {
		if p == q {
			return true
		}
	}
	return false
}

// The endpoints a plan sends to.
const (
	Transfers = "/transfers"
	Deposits  = "/deposits"
	// Settings is GET and PUT /accounts/{id}/settings, for the account
	// Op.SettingsEdit names (version 2 on).
	Settings = "/accounts/{id}/settings"
)

// Header is a plan's first line.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Seed    uint64 `json:"seed"`
	Params  Params `json:"params"`
	// Command is the command that makes this plan again, byte for byte.
	Command string `json:"command"`
}

// Op is one logical operation of the day.
type Op struct {
	// N numbers the operations from 1 in the order they start.
	N int `json:"n"`
	// At is when the operation starts, from the start of the day.
	At Duration `json:"at"`
	// Op names the operation; the body carries it as metadata.op, which is
	// how the kit counts its executions.
	Op       string `json:"op"`
	Customer string `json:"customer"`
	// Endpoint is Transfers, Deposits or Settings.
	Endpoint string `json:"endpoint"`
	Key      string `json:"key"`
	// Body is the body of the first attempt, byte for byte; a settings
	// edit has none (its clerks' bodies depend on what they read).
	Body json.RawMessage `json:"body,omitempty"`
	// Amount is the body's amount, for readers and reconciliation.
	Amount int64 `json:"amount"`
	// Reference is the body's reference, for readers and reconciliation:
	// the invoice a transfer pays (version 2 on).
	Reference string `json:"reference,omitempty"`
	// Repays, when set, names the earlier operation whose invoice this
	// one pays again, under a key of its own: a clerk who did not know it
	// was paid. The body is that operation's, with its own memo and metadata.
	Repays string `json:"repays,omitempty"`
	// SettingsEdit is what the clerks of an operation on Settings do.
	SettingsEdit *SettingsEdit `json:"settings_edit,omitempty"`
	Fate         Fate          `json:"fate"`
}

// SettingsEdit is two clerks editing an account's settings at once, the
// way careful clients do (docs/api.md, "Account settings"): both read the
// settings; clerk A sets the daily limit; clerk B, from the copy it read
// before A saved, sets the nickname. Each sends If-Match with the ETag it
// read and, told 412, reads again and applies its own change to what it
// gets. A server that writes without comparing the ETag loses A's change.
type SettingsEdit struct {
	Account string `json:"account"`
	// DailyLimit is clerk A's new daily limit, in won.
	DailyLimit int64 `json:"daily_limit"`
	// Nickname is clerk B's new nickname.
	Nickname string `json:"nickname"`
}

// Fate is what will happen to an operation.
type Fate struct {
	// Faults are the failure points met by the first attempts, in order;
	// the attempt after the last one goes through.
	Faults []Point `json:"faults,omitempty"`
	// RetryBody, when set, is how retries spell the same request: another
	// client library's member order, whitespace, escapes and number form.
	// It is the same request in RFC 8785 canonical form.
	RetryBody string `json:"retry_body,omitempty"`
	// DoubleClick: a second, identical request leaves together with the first.
	DoubleClick bool `json:"double_click,omitempty"`
	// EditedAmount, when not zero, is the amount of a clerk's resubmission
	// with the same key after the operation is over: a different request.
	EditedAmount int64 `json:"edited_amount,omitempty"`
	// LateRetry: the same request is sent again after the retention period
	// (Params.LateAfter later), when the server may have forgotten the key.
	LateRetry bool `json:"late_retry,omitempty"`
	// Crash, when set, is a crash point of the server (labctl's
	// crash-in-transfer, crash-after-commit, crash-before-response) armed
	// just before the operation is sent: the next request to reach it
	// dies under the server, as if the process had.
	Crash string `json:"crash,omitempty"`
}

// Plan is a header and its operations.
type Plan struct {
	Header Header
	Ops    []Op
}

// Duration is a time.Duration written as Go writes it ("1h2m3.5s").
type Duration time.Duration

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string time.ParseDuration accepts.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Write writes the plan as JSON Lines. HTML characters are not escaped,
// so that bodies read as they are sent.
func (p *Plan) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p.Header); err != nil {
		return fmt.Errorf("write plan header: %w", err)
	}
	for i := range p.Ops {
		if err := enc.Encode(&p.Ops[i]); err != nil {
			return fmt.Errorf("write op %d: %w", p.Ops[i].N, err)
		}
	}
	return bw.Flush()
}

// Bytes is the plan as Write writes it.
func (p *Plan) Bytes() []byte {
	var b bytes.Buffer
	p.Write(&b) // writing to memory cannot fail
	return b.Bytes()
}

// Read reads a plan. It returns an error naming the line for a header of
// another format or version, or a line that is not an operation.
func Read(r io.Reader) (*Plan, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read plan: %w", err)
		}
		return nil, errors.New("read plan: empty file, want a header line")
	}
	var p Plan
	if err := json.Unmarshal(sc.Bytes(), &p.Header); err != nil {
		return nil, fmt.Errorf("plan line 1 (header): %w", err)
	}
	if p.Header.Format != Format || p.Header.Version < 1 || p.Header.Version > Version {
		return nil, fmt.Errorf("plan line 1: format %q version %d, want %q version 1 to %d (is this a day plan? lab gen makes one)",
			p.Header.Format, p.Header.Version, Format, Version)
	}
	for line := 2; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("plan line %d: %w", line, err)
		}
		for _, f := range op.Fate.Faults {
			if !f.Valid() {
				return nil, fmt.Errorf("plan line %d: unknown failure point %q", line, f)
			}
		}
		switch {
		case op.Endpoint == Settings && p.Header.Version >= 2:
			if op.SettingsEdit == nil {
				return nil, fmt.Errorf("plan line %d: a settings operation without settings_edit", line)
			}
		case op.Endpoint != Transfers && op.Endpoint != Deposits:
			return nil, fmt.Errorf("plan line %d: endpoint %q, want %s or %s", line, op.Endpoint, Transfers, Deposits)
		}
		if err := op.checkEdit(); err != nil {
			return nil, fmt.Errorf("plan line %d: %w", line, err)
		}
		p.Ops = append(p.Ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return &p, nil
}

// checkEdit refuses an edit the replay could not tell from its original:
// the reconciliation knows a transfer by its operation and amount, and an
// edited resubmission with the first amount is the same body again, a
// retry. A settings operation has no amount to edit.
func (o *Op) checkEdit() error {
	edited := o.Fate.EditedAmount
	if edited == 0 {
		return nil
	}
	if o.Endpoint == Settings {
		return fmt.Errorf("a settings operation with edited_amount %d: only a transfer or a deposit has an amount to edit", edited)
	}
	var b struct {
		Amount int64 `json:"amount"`
	}
	json.Unmarshal(o.Body, &b) // a body that does not read is the server's to refuse
	if edited == b.Amount || edited == o.Amount {
		return fmt.Errorf("edited_amount %d is the amount the operation was first sent with: an edit changes the amount (the same body again is a retry)", edited)
	}
	return nil
}

// Customers is the plan's population: the customers, tokens and accounts a
// lab reset with the plan's parameters creates.
func (p *Plan) Customers() []bank.Customer { return bank.Population(p.Header.Params.Reset) }
