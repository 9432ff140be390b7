// Package problem is the catalogue of RFC 9457 problem types the API
// answers with (docs/api.md, "Problem types"), one Go value per type, and
// the single place where an error becomes an HTTP response.
package problem

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Type is one entry of the catalogue.
type Type struct {
	// Name is the last segment of the type URI: /problems/{Name}.
	Name   string
	Status int
	Title  string
	// Explain is the text served at GET /problems/{Name}.
	Explain string
	// RetryAfter, when set, is the Retry-After every problem of this type
	// carries unless the Error names its own.
	RetryAfter time.Duration
}

// URI is the problem type as it appears in a response body.
func (t *Type) URI() string { return "/problems/" + t.Name }

// The catalogue.
var (
	MissingIdempotencyKey = &Type{Name: "missing-idempotency-key", Status: 400, Title: "Missing Idempotency-Key header",
		Explain: "The request moves money but carries no Idempotency-Key header, so the server could not tell a retry from a new request. Generate one key per logical operation (a UUID is fine), send it as `Idempotency-Key: \"<key>\"`, and send the same key again on every retry of that operation."}
	InvalidIdempotencyKey = &Type{Name: "invalid-idempotency-key", Status: 400, Title: "Invalid Idempotency-Key header",
		Explain: "The Idempotency-Key header must appear once and hold 1 to 255 printable ASCII characters (0x21 to 0x7E), either bare or as a quoted RFC 8941 string."}
	InvalidRequest = &Type{Name: "invalid-request", Status: 400, Title: "Invalid request",
		Explain: "The body is not a valid request: it must be one JSON object, valid UTF-8, with no duplicate or unknown members and members of the right types. The detail names the member and what is wrong. Nothing was stored and no money moved."}
	Unauthorized = &Type{Name: "unauthorized", Status: 401, Title: "Unauthorized",
		Explain: "Send `Authorization: Bearer <token>` with a customer token from the lab reset."}
	Forbidden = &Type{Name: "forbidden", Status: 403, Title: "Forbidden",
		Explain: "The account belongs to another customer. You can send money to anyone, but only from, and only deposit into, read or list your own accounts."}
	NotFound = &Type{Name: "not-found", Status: 404, Title: "Not found",
		Explain: "There is no such resource, or no such problem type."}
	MethodNotAllowed = &Type{Name: "method-not-allowed", Status: 405, Title: "Method not allowed",
		Explain: "This path exists but does not accept that method."}
	DuplicateRequest = &Type{Name: "duplicate-request", Status: 409, Title: "Duplicate request",
		Explain: "This Idempotency-Key was already used. The first request was executed; this one was not. (From stage 4 on the server answers a retry with the stored response instead.)"}
	DuplicateReference = &Type{Name: "duplicate-reference", Status: 409, Title: "Duplicate reference",
		Explain: "This customer already made a transfer with this reference (an invoice number, say): Location names it. A reference is paid once, whatever the Idempotency-Key and however long ago; nothing moved this time. To pay the same invoice again on purpose, use another reference. This answer is stored under the request's Idempotency-Key like any other, and a retry with that key gets it again."}
	RequestInProgress = &Type{Name: "request-in-progress", Status: 409, Title: "Request in progress",
		Explain: "A request with this Idempotency-Key is still being processed. Wait for the number of seconds in Retry-After and send the same request again with the same key: you will then get its result."}
	RequestTimeout = &Type{Name: "request-timeout", Status: 408, Title: "Request timeout",
		Explain: "The body did not arrive in full within 10 seconds of the headers, so the server stopped reading it and closed the connection. Nothing was stored and no money moved: send the same request again with the same key."}
	RequestTooLarge = &Type{Name: "request-too-large", Status: 413, Title: "Request too large",
		Explain: "The body is over 16 KiB. Nothing was stored and no money moved."}
	UnsupportedMediaType = &Type{Name: "unsupported-media-type", Status: 415, Title: "Unsupported media type",
		Explain: "Send the body as JSON with `Content-Type: application/json` (optionally `; charset=utf-8`)."}
	IdempotencyKeyReused = &Type{Name: "idempotency-key-reused", Status: 422, Title: "Idempotency-Key reused",
		Explain: "This Idempotency-Key was first used with a different request body. A key names one operation; an edited request (a new amount, another account) is a new operation and needs a new key. Members in another order, other whitespace or another spelling of the same number are the same request."}
	UnknownAccount = &Type{Name: "unknown-account", Status: 422, Title: "Unknown account",
		Explain: "An account named in the request does not exist."}
	PreconditionFailed = &Type{Name: "precondition-failed", Status: 412, Title: "Precondition failed",
		Explain: "The If-Match header names a version of the resource that is no longer the current one: someone changed it after you read it. Nothing was changed. Read it again (GET), apply your change to what you get, and send it with the new ETag in If-Match."}
	DailyLimitExceeded = &Type{Name: "daily-limit-exceeded", Status: 422, Title: "Daily limit exceeded",
		Explain: "This transfer would take the source account's transfers of the day (the lab clock's UTC day) over the account's daily_limit (GET /accounts/{id}/settings). No money moved. This is an answer, not a failure: like insufficient funds it is stored with the key, and a retry gets the same answer, even after the limit is raised; send the transfer again under a new key."}
	PreconditionRequired = &Type{Name: "precondition-required", Status: 428, Title: "Precondition required",
		Explain: "This PUT replaces a resource that others may be editing, so it must say which version it was based on: read the resource, and send its ETag in If-Match. If-Match: * is refused too: it would match whatever is there, and write over a change another clerk saved since you read. Nothing was changed."}
	InsufficientFunds = &Type{Name: "insufficient-funds", Status: 422, Title: "Insufficient funds",
		Explain: "The source account's balance is lower than the amount. This is an answer, not a failure: from stage 4 on it is stored with the key and a retry gets the same answer, even if money arrived since."}
	Internal = &Type{Name: "internal", Status: 500, Title: "Internal error",
		Explain: "The server failed. If the request carried an Idempotency-Key, retrying it with the same key is safe."}
	Unavailable = &Type{Name: "unavailable", Status: 503, Title: "Service unavailable",
		Explain: "The server could not reach its idempotency key store, so it refused to execute the request rather than risk executing it twice. Retry with the same key after Retry-After.", RetryAfter: time.Second}
)

// Catalogue lists every type, by status as docs/api.md's table does.
var Catalogue = []*Type{
	MissingIdempotencyKey, InvalidIdempotencyKey, InvalidRequest, Unauthorized,
	Forbidden, NotFound, MethodNotAllowed, RequestTimeout, DuplicateRequest, DuplicateReference, RequestInProgress,
	PreconditionFailed, RequestTooLarge, UnsupportedMediaType, IdempotencyKeyReused, UnknownAccount,
	InsufficientFunds, DailyLimitExceeded, PreconditionRequired, Internal, Unavailable,
}

// Lookup finds a type by name.
func Lookup(name string) (*Type, bool) {
	for _, t := range Catalogue {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Error is a problem as an error value: a type, the detail for this
// occurrence, and an optional Retry-After.
type Error struct {
	Type       *Type
	Detail     string
	RetryAfter time.Duration
	// Location, when set, is sent as the Location header: the resource the
	// problem is about (for duplicate-reference, the transfer that already
	// carries the reference).
	Location string
	// Err is the cause, logged but never shown to the client.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Type.Name, e.Detail, e.Err)
	}
	return e.Type.Name + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, problem.InsufficientFunds) work for any Error of that type.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Type)
	return ok && t == e.Type
}

// Error lets a *Type be used as a sentinel with errors.Is.
func (t *Type) Error() string { return t.Name }

// New returns an Error of type t with a detail.
func New(t *Type, format string, args ...any) *Error {
	return &Error{Type: t, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of type t that keeps err as its cause.
func Wrap(t *Type, err error, detail string) *Error {
	return &Error{Type: t, Detail: detail, Err: err}
}

// From finds the problem an error stands for. An error that is not a
// problem is an internal error; its text is not shown to the client.
func From(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var t *Type
	if errors.As(err, &t) {
		return &Error{Type: t, Detail: t.Title}
	}
	return &Error{Type: Internal, Detail: "the server failed; retrying with the same Idempotency-Key is safe", Err: err}
}

// Body is the RFC 9457 document.
type Body struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// ContentType is the media type of every problem response.
const ContentType = "application/problem+json"

// Marshal renders the problem document of err.
func Marshal(err error) (status int, body []byte) {
	pe := From(err)
	b, _ := json.Marshal(Body{Type: pe.Type.URI(), Title: pe.Type.Title, Status: pe.Type.Status, Detail: pe.Detail})
	return pe.Type.Status, append(b, '\n')
}

// CauseRecorder is implemented by a response writer that wants the cause
// of a problem, which the client never sees: the lab server logs the cause
// of every 5xx, so that "503 unavailable" can be traced to, say, a missing
// column.
type CauseRecorder interface {
	RecordCause(error)
}

// Write sends err as a problem response. It is the one place where errors
// meet HTTP.
func Write(w http.ResponseWriter, err error) {
	pe := From(err)
	if rc, ok := w.(CauseRecorder); ok && pe.Err != nil {
		rc.RecordCause(pe.Err)
	}
	status, body := Marshal(pe)
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	retry := pe.RetryAfter
	if retry == 0 {
		retry = pe.Type.RetryAfter
	}
	if retry > 0 {
		secs := int(retry.Round(time.Second) / time.Second)
		if secs < 1 {
			secs = 1
		}
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	if pe.Location != "" {
		h.Set("Location", pe.Location)
	}
	w.WriteHeader(status)
	w.Write(body)
}

// Handler serves GET /problems/{name} as markdown text.
func Handler(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	t, ok := Lookup(name)
	if !ok {
		Write(w, New(NotFound, "no problem type named %q", name))
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	fmt.Fprintf(w, "# %s (%d)\n\n%s\n", t.Title, t.Status, t.Explain)
}
