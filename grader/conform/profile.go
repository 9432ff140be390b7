package conform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Profile tells lab conform how to call one operation of an API and,
// optionally, how to see its effect. docs/conform.md walks through
// writing one.
type Profile struct {
	// Name names the API in the reports.
	Name string `json:"name"`
	// Operation is the call under test, which takes an Idempotency-Key.
	Operation Operation `json:"operation"`
	// Body is the request body's template: a JSON value whose strings may
	// hold placeholders (see expand). A string that is exactly
	// "{{amount}}" becomes a number.
	Body json.RawMessage `json:"body"`
	// ContentType is the body's media type; application/json if empty.
	ContentType string `json:"content_type"`
	// Amount is the range {{amount}} is drawn from, fresh for every
	// operation; 1 to 1000 if absent.
	Amount *Range `json:"amount"`
	// Edit names the members of the body that edited resubmissions
	// change, each on a resubmission of its own under the original's
	// key: a number gets one more, a string a fresh suffix.
	Edit Edits `json:"edit"`
	// Principals are the callers, each with its headers (authorisation)
	// and the values {{var.NAME}} takes for it. The first is used for
	// every scenario; a second one lets conform send one key as two
	// principals.
	Principals []Principal `json:"principals"`
	// Witness reads an operation's effect. Without it, the checks that
	// need one say "could not observe".
	Witness *Witness `json:"witness"`
	// Expiry is how long the API says it keeps a key, as its
	// documentation publishes it; without it, expiry-as-published is not
	// tried.
	Expiry *Expiry `json:"expiry"`
	// Restart, if set, is a shell command that restarts the API (a
	// staging server's, run with sh -c; {{env.NAME}} works in it):
	// retry-after-restart runs it between an operation and its retry.
	// Without it, that scenario is not tried: conform cannot restart a
	// server it does not run.
	Restart string `json:"restart"`
}

// Expiry is an API's published key retention.
type Expiry struct {
	// After is how long a key is kept after its first use: a Go
	// duration, "24h".
	After string `json:"after"`
	// Header, if the API tells when a key expires, names the response
	// header that does: an HTTP-date or an RFC 3339 time.
	Header string `json:"header"`
	// after is After, parsed by check.
	after time.Duration
}

// Operation is a method and a path (which may hold placeholders).
type Operation struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// Range is an inclusive range of whole numbers.
type Range struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Principal is one caller of the API.
type Principal struct {
	Name    string            `json:"name"`
	Headers map[string]string `json:"headers"`
	Vars    map[string]string `json:"vars"`
}

// Witness is a read that shows an operation's effect, made with the
// principal's headers before and after each scenario. Either Count (a
// JSON pointer to an array, each operation adding one item, or to a
// number that counts them, a total) or Value (a
// JSON pointer to a number that each operation moves by PerOperation:
// "amount" or "-amount", the operation's {{amount}}).
type Witness struct {
	Path         string `json:"path"`
	Count        string `json:"count"`
	Value        string `json:"value"`
	PerOperation string `json:"per_operation"`
}

// Load reads and checks the profile at path. It returns an error that
// says what is missing or wrong.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	var p Profile
	if err := decode(data, &p); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return &p, nil
}

func (p *Profile) check() error {
	switch {
	case p.Operation.Method == "" || !strings.HasPrefix(p.Operation.Path, "/"):
		return errors.New(`operation needs a method and a path starting with "/"`)
	case p.Operation.Method != strings.ToUpper(p.Operation.Method):
		return fmt.Errorf("operation: method %q: a method is case-sensitive (RFC 9110 §9.1), and the standard ones are in capitals: %q", p.Operation.Method, strings.ToUpper(p.Operation.Method))
	case slices.Contains([]string{"GET", "HEAD", "OPTIONS", "TRACE"}, p.Operation.Method):
		// A read creates nothing: every scenario would find each of its
		// operations answered 2xx and never executed, money harmed.
		return fmt.Errorf("operation: method %s is safe (RFC 9110 §9.2.1): it changes nothing, and every scenario would find its operations answered and never executed; name the operation that creates or pays (POST, PUT, PATCH…), and read what it did with the witness", p.Operation.Method)
	case len(p.Body) == 0:
		return errors.New("body: the template of a request body is missing")
	case len(p.Principals) == 0 || len(p.Principals) > 2:
		return errors.New("principals: give one or two")
	case p.Amount != nil && (p.Amount.Min < 1 || p.Amount.Max < p.Amount.Min):
		return errors.New("amount: min must be at least 1 and max at least min")
	}
	var body any
	if err := json.Unmarshal(p.Body, &body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if err := p.checkPlaceholders(); err != nil {
		return err
	}
	for _, edit := range p.Edit {
		v, err := lookup(body, editPointer(edit))
		if err != nil {
			return fmt.Errorf("edit %q: the body has nothing there to change: %w", edit, err)
		}
		switch v.(type) {
		case string, float64:
		default:
			return fmt.Errorf("edit %q: the body has an object or list there; point at a number or a string", edit)
		}
	}
	if p.Restart != "" && p.Witness == nil {
		return errors.New("restart: needs a witness, which conform reads to know the API is back and what it kept")
	}
	if e := p.Expiry; e != nil {
		d, err := time.ParseDuration(e.After)
		switch {
		case err != nil && strings.HasSuffix(e.After, "d"):
			return fmt.Errorf(`expiry: after %q: write days as hours, e.g. "24h" for a day, "168h" for a week`, e.After)
		case err != nil || d <= 0:
			return fmt.Errorf(`expiry: after %q is not a period such as "24h" or "30m"`, e.After)
		}
		e.after = d
	}
	if w := p.Witness; w != nil {
		switch {
		case !strings.HasPrefix(w.Path, "/"):
			return errors.New(`witness: path must start with "/"`)
		case (w.Count == "") == (w.Value == ""):
			return errors.New("witness: give count (a JSON pointer to a list, or to a number that counts its items) or value (a JSON pointer to a number), one of them")
		case w.Value != "" && w.PerOperation != "amount" && w.PerOperation != "-amount":
			return errors.New(`witness: with value, per_operation is "amount" or "-amount"`)
		case w.Value != "" && !strings.Contains(string(p.Body), "{{amount}}"):
			return fmt.Errorf(`witness: per_operation %q moves the witness by each operation's {{amount}}, and the body has no "{{amount}}"`, w.PerOperation)
		}
		for name, ptr := range map[string]string{"count": w.Count, "value": w.Value} {
			if ptr != "" && !strings.HasPrefix(ptr, "/") {
				return fmt.Errorf(`witness: %s %q is not a JSON pointer; it starts with "/": %q`, name, ptr, "/"+strings.ReplaceAll(ptr, ".", "/"))
			}
		}
	}
	return nil
}

// anyPlaceholder matches whatever is written as a placeholder, known or
// not.
var anyPlaceholder = regexp.MustCompile(`\{\{[^{}]*\}\}`)

// checkPlaceholders returns an error for a placeholder conform does not
// know, and for a {{var.NAME}} some principal has no value for.
func (p *Profile) checkPlaceholders() error {
	places := map[string]string{"body": string(p.Body), "operation.path": p.Operation.Path}
	if p.Witness != nil {
		places["witness.path"] = p.Witness.Path
	}
	for i, pr := range p.Principals {
		for k, v := range pr.Headers {
			places[fmt.Sprintf("principals[%d].headers.%s", i, k)] = v
		}
	}
	for _, where := range slices.Sorted(maps.Keys(places)) {
		for _, m := range anyPlaceholder.FindAllString(places[where], -1) {
			if !placeholder.MatchString(m) {
				return fmt.Errorf("%s: %s is not a placeholder; they are {{amount}}, {{unique}}, {{var.NAME}} and {{env.NAME}}", where, m)
			}
			if name, ok := strings.CutPrefix(m[2:len(m)-2], "var."); ok {
				for i, pr := range p.Principals {
					if _, has := pr.Vars[name]; !has {
						return fmt.Errorf("%s uses %s, and principals[%d] (%s) has no vars.%s", where, m, i, pr.Name, name)
					}
				}
			}
		}
	}
	return nil
}

// Edits is a profile's edit: a member of the body, by its top-level name
// or a JSON pointer, or a list of them.
type Edits []string

// UnmarshalJSON reads one string, or a list of strings; it returns an
// error that says so for anything else.
func (e *Edits) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*e = nil
		if one != "" {
			*e = Edits{one}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		what := "a JSON " + jsonKind(data)
		if strings.HasPrefix(strings.TrimSpace(string(data)), "[") {
			what = "a JSON list of " + jsonKind(bytes.TrimLeft(bytes.TrimSpace(data), "[ \t\r\n")) + "s"
		}
		return fmt.Errorf("edit: %s where a string, or a list of strings, is wanted", what)
	}
	*e = list
	return nil
}

// jsonKind names the kind of the JSON value data starts with.
func jsonKind(data []byte) string {
	switch b := bytes.TrimSpace(data); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "list"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "number"
}

// editPointer is edit as a JSON pointer: a top-level member's name is
// written as one.
func editPointer(edit string) string {
	if strings.HasPrefix(edit, "/") {
		return edit
	}
	return "/" + strings.ReplaceAll(strings.ReplaceAll(edit, "~", "~0"), "/", "~1")
}

// op is one operation conform makes up: a principal, a fresh amount and
// the body that carries it, and its {{unique}} value (which the body may
// not carry).
type op struct {
	principal int
	amount    int64
	body      []byte
	unique    string
}

// placeholder matches {{amount}}, {{unique}}, {{var.NAME}}, {{env.NAME}}.
var placeholder = regexp.MustCompile(`\{\{(amount|unique|var\.[A-Za-z0-9_]+|env\.[A-Za-z0-9_]+)\}\}`)

// newOp draws a fresh operation for principal i.
func (p *Profile) newOp(rng *rand.Rand, i int) (op, error) {
	r := Range{Min: 1, Max: 1000}
	if p.Amount != nil {
		r = *p.Amount
	}
	o := op{principal: i, amount: r.Min + rng.Int64N(r.Max-r.Min+1)}
	unique := fmt.Sprintf("%08x", rng.Uint32())
	o.unique = unique
	var tmpl any
	if err := json.Unmarshal(p.Body, &tmpl); err != nil {
		return op{}, err
	}
	var err error
	body := walk(tmpl, func(s string) any {
		if s == "{{amount}}" {
			return o.amount
		}
		out, e := p.expand(s, i, o.amount, unique)
		if e != nil && err == nil {
			err = e
		}
		return out
	})
	if err != nil {
		return op{}, err
	}
	o.body, err = json.Marshal(body)
	return o, err
}

// edited is o with the member edit names changed: a number gets one
// more (and, if it is the operation's amount, the amount with it), a
// string a suffix.
func (p *Profile) edited(o op, edit string) (op, error) {
	var doc any
	if err := json.Unmarshal(o.body, &doc); err != nil {
		return op{}, err
	}
	parent, last, err := parentOf(doc, editPointer(edit))
	if err != nil {
		return op{}, fmt.Errorf("edit %q: %w", edit, err)
	}
	var v any
	switch x := parent.(type) {
	case map[string]any:
		v = x[last]
	case []any:
		n, _ := strconv.Atoi(last)
		v = x[n]
	}
	switch x := v.(type) {
	case float64:
		v = x + 1
		if x == float64(o.amount) {
			o.amount++
		}
	case string:
		v = x + "-edited"
	default:
		return op{}, fmt.Errorf("edit %q: neither a number nor a string", edit)
	}
	switch x := parent.(type) {
	case map[string]any:
		x[last] = v
	case []any:
		n, _ := strconv.Atoi(last)
		x[n] = v
	}
	body, err := json.Marshal(doc)
	o.body = body
	return o, err
}

// parentOf returns the object or list that holds what pointer points
// at in doc, and the last token of the pointer (its member or index).
func parentOf(doc any, pointer string) (any, string, error) {
	i := strings.LastIndex(pointer, "/")
	if i < 0 {
		return nil, "", fmt.Errorf("%q is not a JSON pointer", pointer)
	}
	parent, err := lookup(doc, pointer[:i])
	if err != nil {
		return nil, "", err
	}
	last := unescapeToken(pointer[i+1:])
	if _, err := lookup(parent, "/"+pointer[i+1:]); err != nil {
		return nil, "", err
	}
	return parent, last, nil
}

// expand replaces the placeholders of s for principal i.
func (p *Profile) expand(s string, i int, amount int64, unique string) (string, error) {
	var err error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-2]
		switch {
		case name == "amount":
			return strconv.FormatInt(amount, 10)
		case name == "unique":
			return unique
		case strings.HasPrefix(name, "var."):
			v, ok := p.Principals[i].Vars[name[4:]]
			if !ok && err == nil {
				err = fmt.Errorf("principal %d has no var %q", i+1, name[4:])
			}
			// A var's value may come from the environment, never
			// from another var.
			v, e := expandEnv(v)
			if e != nil && err == nil {
				err = e
			}
			return v
		default:
			v, e := expandEnv(m)
			if e != nil && err == nil {
				err = e
			}
			return v
		}
	})
	return out, err
}

// envPlaceholder matches {{env.NAME}}.
var envPlaceholder = regexp.MustCompile(`\{\{env\.([A-Za-z0-9_]+)\}\}`)

// expandEnv replaces the {{env.NAME}} placeholders of s with the
// environment's values; it returns an error naming one that is not set.
func expandEnv(s string) (string, error) {
	var err error
	out := envPlaceholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[6 : len(m)-2]
		v, ok := os.LookupEnv(name)
		if !ok && err == nil {
			err = fmt.Errorf("the environment has no %s", name)
		}
		return v
	})
	return out, err
}

// walk rebuilds a decoded JSON value with every string passed through f.
func walk(v any, f func(string) any) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = walk(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for k, e := range x {
			out[k] = walk(e, f)
		}
		return out
	}
	return v
}

// headers sets principal i's headers on h.
func (p *Profile) headers(h http.Header, i int) error {
	for k, v := range p.Principals[i].Headers {
		x, err := p.expand(v, i, 0, "")
		if err != nil {
			return err
		}
		h.Set(k, x)
	}
	return nil
}
