package request_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"idemlab/kit/problem"
	"idemlab/kit/request"
)

func post(body, contentType string) *http.Request {
	r := httptest.NewRequest("POST", "/transfers", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

func TestTransfer_AcceptsEverySpellingOfAnInteger(t *testing.T) {
	for _, amount := range []string{"300000", "3e5", "3E5", "3e+5", "300000.0", "3.0e5", "30000000e-2"} {
		body := `{"from":"acc_a","to":"acc_b","amount":` + amount + `}`
		req, raw, err := request.Transfer(post(body, "application/json; charset=UTF-8"))
		if err != nil {
			t.Errorf("amount %s: %v", amount, err)
			continue
		}
		if req.Amount != 300000 {
			t.Errorf("amount %s read as %d", amount, req.Amount)
		}
		if string(raw) != body {
			t.Errorf("raw body changed: %q", raw)
		}
	}
}

func TestTransfer_RefusesWithTheRightProblem(t *testing.T) {
	const ok = `"from":"acc_a","to":"acc_b"`
	cases := []struct {
		name, body, contentType string
		want                    *problem.Type
		detail                  string
	}{
		{"fraction", `{` + ok + `,"amount":0.5}`, "", problem.InvalidRequest, "whole number"},
		{"negative", `{` + ok + `,"amount":-1}`, "", problem.InvalidRequest, "between 1"},
		{"too large", `{` + ok + `,"amount":1e12}`, "", problem.InvalidRequest, "between 1"},
		{"int64 overflow", `{` + ok + `,"amount":99999999999999999999}`, "", problem.InvalidRequest, "out of range"},
		{"huge exponent", `{` + ok + `,"amount":1e999999999}`, "", problem.InvalidRequest, "out of range"},
		{"tiny exponent", `{` + ok + `,"amount":1e-999999999}`, "", problem.InvalidRequest, "whole number"},
		{"zero with huge exponent", `{` + ok + `,"amount":0e999999999}`, "", problem.InvalidRequest, "between 1"},
		{"string amount", `{` + ok + `,"amount":"5"}`, "", problem.InvalidRequest, "a string"},
		{"duplicate nested", `{` + ok + `,"amount":5,"metadata":{"a":"1","\u0061":"2"}}`, "", problem.InvalidRequest, "metadata.a"},
		{"unknown member", `{` + ok + `,"amount":5,"fee":1}`, "", problem.InvalidRequest, `"fee"`},
		{"same account", `{"from":"acc_a","to":"acc_a","amount":5}`, "", problem.InvalidRequest, "must differ"},
		{"not an account id", `{"from":"a","to":"acc_b","amount":5}`, "", problem.InvalidRequest, "account id"},
		{"null memo", `{` + ok + `,"amount":5,"memo":null}`, "", problem.InvalidRequest, "memo"},
		{"invalid UTF-8", "{" + ok + `,"amount":5,"memo":"` + "\xff" + `"}`, "", problem.InvalidRequest, "UTF-8"},
		{"lone high surrogate", `{` + ok + `,"amount":5,"memo":"\ud800"}`, "", problem.InvalidRequest, `\ud800`},
		{"lone low surrogate", `{` + ok + `,"amount":5,"metadata":{"op":"\udc00x"}}`, "", problem.InvalidRequest, `\udc00`},
		{"surrogates reversed", `{` + ok + `,"amount":5,"memo":"\ude00\ud83d"}`, "", problem.InvalidRequest, `\ude00`},
		{"reference not a string", `{` + ok + `,"amount":5,"reference":7}`, "", problem.InvalidRequest, "reference must be a string"},
		{"null reference", `{` + ok + `,"amount":5,"reference":null}`, "", problem.InvalidRequest, "reference"},
		{"empty reference", `{` + ok + `,"amount":5,"reference":""}`, "", problem.InvalidRequest, "1 to 64"},
		{"reference too long", `{` + ok + `,"amount":5,"reference":"` + strings.Repeat("가", 65) + `"}`, "", problem.InvalidRequest, "1 to 64"},
		{"control character in reference", `{` + ok + `,"amount":5,"reference":"INV\u0007"}`, "", problem.InvalidRequest, "printable"},
		{"NUL in an account id", `{"from":"acc_a\u0000","to":"acc_b","amount":5}`, "", problem.InvalidRequest, "from must not hold the character U+0000"},
		{"NUL in memo", `{` + ok + `,"amount":5,"memo":"rent\u0000"}`, "", problem.InvalidRequest, "memo must not hold the character U+0000"},
		{"NUL in a metadata value", `{` + ok + `,"amount":5,"metadata":{"op":"a\u0000b"}}`, "", problem.InvalidRequest, "metadata.op must not hold the character U+0000"},
		{"NUL in a metadata name", `{` + ok + `,"amount":5,"metadata":{"o\u0000p":"a"}}`, "", problem.InvalidRequest, "U+0000"},
		{"reference ends with a space", `{` + ok + `,"amount":5,"reference":"INV-7 "}`, "", problem.InvalidRequest, "space"},
		{"no content type", `{` + ok + `,"amount":5}`, "-", problem.UnsupportedMediaType, "Content-Type"},
		{"form", `a=b`, "application/x-www-form-urlencoded", problem.UnsupportedMediaType, ""},
		{"other parameter", `{` + ok + `,"amount":5}`, "application/json; version=2", problem.UnsupportedMediaType, "version"},
		{"over 16 KiB", `{` + ok + `,"amount":5,"memo":"` + strings.Repeat("a", 16<<10) + `"}`, "", problem.RequestTooLarge, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.contentType
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			_, _, err := request.Transfer(post(tc.body, ct))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %s", err, tc.want.Name)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("detail %q does not say %q", err, tc.detail)
			}
		})
	}
}

// A body with several unknown members, or several bad metadata members,
// is refused in the same words each time it is sent: the first in name
// order is named. Caught: the members read in a map's order, which named
// one or another from one send to the next.
func TestTransfer_NamesTheSameBadMemberEachTime(t *testing.T) {
	const ok = `"from":"acc_a","to":"acc_b","amount":5`
	cases := []struct{ body, detail string }{
		{`{` + ok + `,"zeta":1,"fee":1,"mid":1,"extra":1}`, `unknown member "extra"`},
		{`{` + ok + `,"metadata":{"z":1,"b":2,"y":3,"c":4}}`, `metadata.b must be a string`},
	}
	for _, tc := range cases {
		for range 50 {
			_, _, err := request.Transfer(post(tc.body, "application/json"))
			if err == nil || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("%s: err = %v, want it to say %q every time", tc.body, err, tc.detail)
			}
		}
	}
}

func TestTransfer_TruncatedBodyIsRefused(t *testing.T) {
	body := `{"from":"acc_a","to":"acc_b","amount":5}`
	r := post(body[:20], "application/json")
	r.ContentLength = int64(len(body))
	r.Body = io.NopCloser(truncated{strings.NewReader(body[:20])})
	if _, _, err := request.Transfer(r); !errors.Is(err, problem.InvalidRequest) {
		t.Fatalf("err = %v, want invalid-request", err)
	}
}

// truncated ends early, as a body cut off by a dropped connection does.
type truncated struct{ r *strings.Reader }

func (t truncated) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil {
		return n, io.ErrUnexpectedEOF
	}
	return n, nil
}

func TestDeposit_ReadsMetadata(t *testing.T) {
	req, _, err := request.Deposit(post(`{"account":"acc_a","amount":10,"memo":"월세","metadata":{"op":"x"}}`, "application/json"))
	if err != nil {
		t.Fatal(err)
	}
	if req.Account != "acc_a" || req.Amount != 10 || req.Memo != "월세" || req.Metadata["op"] != "x" {
		t.Fatalf("got %+v", req)
	}
}

// TestTransfer_ReferenceInNFC: "café-7" with a precomposed é (NFC) and
// with e and a combining accent (NFD) are one invoice, so both read as the
// precomposed form; case, a look-alike letter of another script and
// full-width digits stay other references. A decoder that passes the
// reference on as sent lets both spellings pay the invoice; one that folds
// case or compatibility forms (NFKC) merges invoices that differ.
func TestTransfer_ReferenceInNFC(t *testing.T) {
	const nfc, nfd = "caf\u00e9-7", "cafe\u0301-7"
	for _, c := range []struct{ sent, want string }{
		{nfc, "café-7"},
		{nfd, "café-7"},
		{`CAF\u00c9-7`, "CAFÉ-7"},
		{`caf\u00e9-\uff17`, "café-７"},
		{`\u0441af\u00e9-7`, "сafé-7"},
	} {
		body := `{"from":"acc_a","to":"acc_b","amount":5,"reference":"` + c.sent + `"}`
		req, _, err := request.Transfer(post(body, "application/json"))
		if err != nil || req.Reference != c.want {
			t.Errorf("reference %s: read %q (% x), err %v; want %q (% x)", c.sent, req.Reference, req.Reference, err, c.want, c.want)
		}
	}
	// 64 characters once composed: the limit counts what is compared.
	long := strings.Repeat("e\u0301", request.MaxReference)
	if _, _, err := request.Transfer(post(`{"from":"acc_a","to":"acc_b","amount":5,"reference":"`+long+`"}`, "application/json")); err != nil {
		t.Errorf("%d decomposed é: %v; want accepted, they are %d characters in NFC", request.MaxReference, err, request.MaxReference)
	}
}

func TestTransfer_ReadsReference(t *testing.T) {
	for body, want := range map[string]string{
		`{"from":"acc_a","to":"acc_b","amount":5,"reference":"INV-2026-0042"}`: "INV-2026-0042",
		`{"from":"acc_a","to":"acc_b","amount":5,"reference":"청구서 7"}`:         "청구서 7",
		`{"from":"acc_a","to":"acc_b","amount":5}`:                             "",
	} {
		req, _, err := request.Transfer(post(body, "application/json"))
		if err != nil || req.Reference != want {
			t.Errorf("%s: reference %q, err %v; want %q", body, req.Reference, err, want)
		}
	}
	if _, _, err := request.Deposit(post(`{"account":"acc_a","amount":5,"reference":"INV-1"}`, "application/json")); !errors.Is(err, problem.InvalidRequest) {
		t.Errorf("a deposit with a reference: err %v, want invalid-request (only transfers carry one)", err)
	}
}
