// Package request reads and validates the bodies of POST /transfers and
// POST /deposits exactly as docs/api.md says, before anything is
// claimed, stored or moved.
//
// Strict means: one JSON object and nothing after it, valid UTF-8 (and no
// \u escape that is half of a surrogate pair), no member name twice at
// any depth, no unknown top-level member, the right type for every member,
// and an amount that is an integer however it is spelled (300000, 3e5 and
// 300000.0 are the same amount).
package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"idemlab/kit/bank"
	"idemlab/kit/problem"

	"golang.org/x/text/unicode/norm"
)

// Limits the API publishes (docs/api.md, "Published figures").
const (
	MaxBody          = 16 << 10
	MaxAmount        = 1_000_000_000
	MaxMemo          = 140
	MaxMetadata      = 16
	MaxMetadataKey   = 40
	MaxMetadataValue = 64
	MaxReference     = 64
)

// Transfer reads a POST /transfers body. It returns the request and the
// body's raw bytes (what a fingerprint is computed over), or a problem
// error: 415, 413 or 400 invalid-request.
func Transfer(r *http.Request) (bank.TransferRequest, []byte, error) {
	raw, members, err := read(r, "from", "to", "amount", "memo", "metadata", "reference")
	if err != nil {
		return bank.TransferRequest{}, nil, err
	}
	var req bank.TransferRequest
	d := decoder{members: members}
	req.From = d.account("from")
	req.To = d.account("to")
	req.Amount = d.amount("amount")
	req.Memo = d.memo("memo")
	req.Metadata = d.metadata("metadata")
	req.Reference = d.reference("reference")
	d.distinct(req.From, req.To)
	if d.err != nil {
		return bank.TransferRequest{}, nil, d.err
	}
	return req, raw, nil
}

// Deposit reads a POST /deposits body. Errors as for Transfer.
func Deposit(r *http.Request) (bank.DepositRequest, []byte, error) {
	raw, members, err := read(r, "account", "amount", "memo", "metadata")
	if err != nil {
		return bank.DepositRequest{}, nil, err
	}
	var req bank.DepositRequest
	d := decoder{members: members}
	req.Account = d.account("account")
	req.Amount = d.amount("amount")
	req.Memo = d.memo("memo")
	req.Metadata = d.metadata("metadata")
	if d.err != nil {
		return bank.DepositRequest{}, nil, d.err
	}
	return req, raw, nil
}

func invalid(format string, args ...any) error {
	return problem.New(problem.InvalidRequest, format, args...)
}

// read checks the media type and size, reads the body, checks it is one
// well-formed JSON object without duplicate names, and returns its
// top-level members. Unknown members are refused here.
func read(r *http.Request, known ...string) ([]byte, map[string]json.RawMessage, error) {
	raw, err := readBody(r, MaxBody)
	if err != nil {
		return nil, nil, err
	}
	members, err := parse(raw, known...)
	if err != nil {
		return nil, nil, err
	}
	return raw, members, nil
}

// readBody checks the media type and reads a body of at most limit
// bytes: 415, 413, 408 or 400 if it cannot.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if r.ContentLength > limit {
		return nil, problem.New(problem.RequestTooLarge, "the body is %d bytes; the limit is %d", r.ContentLength, limit)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A client too slow to send its body: it may well send it in time
		// on a retry, so the answer says to retry, unlike a body refused.
		return nil, problem.New(problem.RequestTimeout, "the body did not arrive in full in time; nothing was executed")
	}
	if err != nil {
		// A body shorter than its Content-Length ends here: a truncated
		// request must never be executed.
		return nil, invalid("the body could not be read in full (%v); nothing was executed", err)
	}
	if int64(len(raw)) > limit {
		return nil, problem.New(problem.RequestTooLarge, "the body is over the limit of %d bytes", limit)
	}
	return raw, nil
}

// parse checks that raw is one well-formed JSON object, valid UTF-8,
// without duplicate names and without members other than known, and
// returns its top-level members.
func parse(raw []byte, known ...string) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("the body is empty; send a JSON object")
	}
	members, ok := plainObject(raw)
	if !ok {
		if err := Object(raw); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &members); err != nil {
			return nil, invalid("the body must be a JSON object")
		}
	} else if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	// In name order, so that a body with several unknown members is
	// refused in the same words each time it is sent.
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !slices.Contains(known, name) {
			return nil, invalid("unknown member %q; the members are %s", name, strings.Join(known, ", "))
		}
	}
	return members, nil
}

// Object checks that raw is one JSON object and nothing after it, valid
// UTF-8, with no \u escape that is half of a UTF-16 surrogate pair and no
// member name twice at any depth, whatever its members: what every body
// the kit reads is, the lab's control bodies included. It returns a 400
// invalid-request problem error that says what is wrong.
func Object(raw []byte) error {
	if !utf8.Valid(raw) {
		return invalid("the body is not valid UTF-8")
	}
	if err := checkStructure(raw); err != nil {
		return err
	}
	return checkSurrogates(raw)
}

func checkMediaType(header string) error {
	if header == "" {
		return problem.New(problem.UnsupportedMediaType, "no Content-Type; send application/json")
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return problem.New(problem.UnsupportedMediaType, "Content-Type %q; send application/json", header)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return problem.New(problem.UnsupportedMediaType, "Content-Type parameter %s=%s; only charset=utf-8 is accepted", k, v)
		}
	}
	return nil
}

// checkStructure walks the token stream: exactly one value, an object at
// the top, and no object anywhere that names a member twice. Names are
// compared after unescaping, so "a" and "\u0061" are the same name.
func checkStructure(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	if first != json.Delim('{') {
		return invalid("the body must be a JSON object")
	}
	if err := walkObject(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("the body holds more than one JSON value")
	}
	return nil
}

func walkObject(dec *json.Decoder, path string) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("the body is not valid JSON: %v", syntaxDetail(err))
		}
		name := tok.(string)
		member := joinPath(path, name)
		if seen[name] {
			return invalid("member %q appears more than once", member)
		}
		seen[name] = true
		if err := walkValue(dec, member); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	return nil
}

func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, path)
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return invalid("the body is not valid JSON: %v", syntaxDetail(err))
		}
	}
	return nil
}

// checkSurrogates refuses a \u escape that is half of a UTF-16 surrogate
// pair: it is no character. encoding/json would read it as U+FFFD, so the
// request stored would not be the one sent, and RFC 8785 gives it no
// canonical form, so it could not be fingerprinted or tallied. raw is
// valid JSON, so every backslash in it starts an escape.
func checkSurrogates(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
			if low := hex4(raw[i+3:]); low >= 0xdc00 && low <= 0xdfff {
				i += 6
				continue
			}
		}
		return invalid("the body holds \\u%04x, half of a UTF-16 surrogate pair, which is no character", r)
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func syntaxDetail(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends too early"
	}
	return err.Error()
}

// decoder reads typed members and keeps the first error.
type decoder struct {
	members map[string]json.RawMessage
	err     error
}

func (d *decoder) fail(member, format string, args ...any) {
	if d.err == nil {
		d.err = invalid("%s %s", member, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) str(name string, required bool) (string, bool) {
	raw, ok := d.members[name]
	if !ok {
		if required {
			d.fail(name, "is required")
		}
		return "", false
	}
	s, ok := stringValue(raw)
	if !ok {
		d.fail(name, "must be a string, got %s", kind(raw))
		return "", false
	}
	return s, true
}

// stringValue reads raw, a member's value from a body that is valid
// UTF-8 and valid JSON, as a string. A string without an escape is the
// bytes between its quotes, as json.Unmarshal would read it; one with an
// escape is read by json.Unmarshal.
func stringValue(raw json.RawMessage) (string, bool) {
	if raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func (d *decoder) account(name string) string {
	s, ok := d.str(name, true)
	if ok && (!strings.HasPrefix(s, "acc_") || len(s) > 64) {
		d.fail(name, "must be an account id such as acc_7fk2m9qa, got %q", s)
	}
	if ok {
		d.noNUL(name, s)
	}
	return s
}

// distinct refuses a to that names the from account: money moves between
// two accounts. It says nothing if another member was wrong already.
func (d *decoder) distinct(from, to string) {
	if d.err == nil && from == to {
		d.fail("to", "must differ from from (%s)", from)
	}
}

func (d *decoder) memo(name string) string {
	s, _ := d.str(name, false)
	if n := utf8.RuneCountInString(s); n > MaxMemo {
		d.fail(name, "is %d characters; the limit is %d", n, MaxMemo)
	}
	d.noNUL(name, s)
	return s
}

// noNUL refuses a string that holds U+0000: PostgreSQL's text columns
// cannot store it, nor a query compare one with it, so a transfer whose
// memo, or account id, held one would fail inside its transaction with a
// 5xx, and every retry again, on one engine and not the other. Other
// control characters are stored as sent.
func (d *decoder) noNUL(name, s string) {
	if strings.ContainsRune(s, 0) {
		d.fail(name, "must not hold the character U+0000 (NUL)")
	}
}

// reference reads an optional business key, such as an invoice number:
// 1 to MaxReference printable characters (unicode.IsPrint: letters,
// marks, digits, punctuation, symbols and the ASCII space), with no space
// at either end, so that "INV-7" and "INV-7 " cannot be two references to
// one invoice. It is returned in Unicode normalisation form C: "café-7"
// typed with a precomposed é and sent by another keyboard as e and a
// combining accent is one reference, so that a stage compares references
// exactly and two spellings of one invoice cannot both pay it. Every
// other difference (case, a look-alike letter from another script, a
// full-width digit) stays: those are other references.
func (d *decoder) reference(name string) string {
	s, ok := d.str(name, false)
	if !ok {
		return ""
	}
	s = norm.NFC.String(s)
	if n := utf8.RuneCountInString(s); n == 0 || n > MaxReference {
		d.fail(name, "must be 1 to %d characters, got %d", MaxReference, n)
		return ""
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			d.fail(name, "must hold printable characters only, got %q", s)
			return ""
		}
	}
	if strings.TrimSpace(s) != s {
		d.fail(name, "must not start or end with a space, got %q", s)
		return ""
	}
	return s
}

func (d *decoder) metadata(name string) map[string]string {
	raw, ok := d.members[name]
	if !ok {
		return nil
	}
	if raw[0] != '{' {
		d.fail(name, "must be an object of strings, got %s", kind(raw))
		return nil
	}
	fields, ok := plainObject(raw)
	if !ok {
		if err := json.Unmarshal(raw, &fields); err != nil {
			d.fail(name, "must be an object of strings")
			return nil
		}
	}
	if len(fields) > MaxMetadata {
		d.fail(name, "has %d members; the limit is %d", len(fields), MaxMetadata)
		return nil
	}
	out := make(map[string]string, len(fields))
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		member := name + "." + k
		s, ok := stringValue(v)
		if !ok {
			d.fail(member, "must be a string, got %s", kind(v))
			return nil
		}
		if n := utf8.RuneCountInString(k); n == 0 || n > MaxMetadataKey {
			d.fail(name, "member names must be 1 to %d characters, got %q", MaxMetadataKey, k)
			return nil
		}
		if n := utf8.RuneCountInString(s); n > MaxMetadataValue {
			d.fail(member, "is %d characters; the limit is %d", n, MaxMetadataValue)
			return nil
		}
		d.noNUL(name+" member names", k)
		d.noNUL(member, s)
		if d.err != nil {
			return nil
		}
		out[k] = s
	}
	return out
}

func (d *decoder) amount(name string) int64 { return d.won(name, 1, MaxAmount) }

// won reads a required member that is a whole number of won in lo..hi.
func (d *decoder) won(name string, lo, hi int64) int64 {
	raw, ok := d.members[name]
	if !ok {
		d.fail(name, "is required")
		return 0
	}
	n, err := Integer(string(raw))
	if err != nil {
		d.fail(name, "%v", err)
		return 0
	}
	if n < lo || n > hi {
		d.fail(name, "must be between %d and %d won, got %s", lo, hi, raw)
		return 0
	}
	return n
}

// Integer reads a JSON number whose value is an integer, however it is
// written: 300000, 3e5, 300000.0 and 3.0E+5 all give 300000. A fraction, a
// non-number, or a value outside int64 is an error.
func Integer(lit string) (int64, error) {
	if lit == "" || !(lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') {
		return 0, fmt.Errorf("must be a number, got %s", kind([]byte(lit)))
	}
	// Guard the exponent before big.Rat sees it: "1e999999999" is eleven
	// bytes of JSON and would otherwise ask for a number of a billion digits.
	mantissa, exp := lit, int64(0)
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mantissa = lit[:i]
		e, err := strconv.ParseInt(strings.TrimPrefix(lit[i+1:], "+"), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("must be a whole number of won, got %s", lit)
		}
		exp = e
	}
	if exp > 30 || exp < -30 {
		if isZero(mantissa) {
			return 0, nil
		}
		if exp > 0 {
			return 0, fmt.Errorf("is out of range, got %s", lit)
		}
		return 0, fmt.Errorf("must be a whole number of won, got %s", lit)
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return 0, fmt.Errorf("must be a number, got %s", lit)
	}
	if !r.IsInt() {
		return 0, fmt.Errorf("must be a whole number of won, got %s", lit)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("is out of range, got %s", lit)
	}
	return r.Num().Int64(), nil
}

func isZero(mantissa string) bool {
	return strings.Trim(mantissa, "-+0.") == ""
}

// kind names the JSON type of a raw value, for error details.
func kind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
