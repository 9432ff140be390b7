package request_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"idemlab/kit/canonical"
	"idemlab/kit/problem"
	"idemlab/kit/request"
)

// The fuzz targets below hold the decoders to what docs/api.md promises
// for any body and any Content-Type: either a request within every
// published limit, whose body can be fingerprinted, or a problem the API
// documents for a refused body. The seeds in testdata/fuzz are the hostile
// bodies a client could send; plain go test replays them.

func FuzzTransfer(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req, raw, err := request.Transfer(fuzzPost("/transfers", contentType, body))
		if err != nil {
			checkRefusal(t, contentType, body, err)
			return
		}
		fields := checkAccepted(t, contentType, body, raw, "from", "to", "amount", "memo", "metadata")
		checkAccount(t, "from", req.From, fields)
		checkAccount(t, "to", req.To, fields)
		if req.From == req.To {
			t.Errorf("from and to are both %q", req.From)
		}
		checkCommon(t, req.Amount, req.Memo, req.Metadata, fields)

		// The decoder accepts its own reading of the body, as another
		// client would write it, and reads the same request from it.
		again, _, err := request.Transfer(fuzzPost("/transfers", "application/json", mustMarshal(t, req)))
		if err != nil {
			t.Fatalf("the accepted request %+v, written again, is refused: %v", req, err)
		}
		if again.From != req.From || again.To != req.To || again.Amount != req.Amount ||
			again.Memo != req.Memo || !maps.Equal(again.Metadata, req.Metadata) {
			t.Errorf("read %+v, then %+v from the same request written again", req, again)
		}
	})
}

func FuzzDeposit(f *testing.F) {
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req, raw, err := request.Deposit(fuzzPost("/deposits", contentType, body))
		if err != nil {
			checkRefusal(t, contentType, body, err)
			return
		}
		fields := checkAccepted(t, contentType, body, raw, "account", "amount", "memo", "metadata")
		checkAccount(t, "account", req.Account, fields)
		checkCommon(t, req.Amount, req.Memo, req.Metadata, fields)

		again, _, err := request.Deposit(fuzzPost("/deposits", "application/json", mustMarshal(t, req)))
		if err != nil {
			t.Fatalf("the accepted request %+v, written again, is refused: %v", req, err)
		}
		if again.Account != req.Account || again.Amount != req.Amount ||
			again.Memo != req.Memo || !maps.Equal(again.Metadata, req.Metadata) {
			t.Errorf("read %+v, then %+v from the same request written again", req, again)
		}
	})
}

func fuzzPost(path, contentType string, body []byte) *http.Request {
	r := httptest.NewRequest("POST", path, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// checkRefusal: a refused body gets one of the problems docs/api.md lists
// for a body (415, 413, 400 invalid-request), and the right one of them
// when the cause is plain.
func checkRefusal(t *testing.T, contentType string, body []byte, err error) {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) {
		t.Fatalf("refused with %v, which is no problem type", err)
	}
	switch pe.Type {
	case problem.InvalidRequest, problem.RequestTooLarge, problem.UnsupportedMediaType:
	default:
		t.Fatalf("refused with %s, which is not a problem of the body", pe.Type.Name)
	}
	if contentType == "application/json" && pe.Type == problem.UnsupportedMediaType {
		t.Errorf("application/json refused as unsupported: %v", err)
	}
	if contentType == "application/json" && len(body) > request.MaxBody && pe.Type != problem.RequestTooLarge {
		t.Errorf("a body of %d bytes refused with %s, want %s", len(body), pe.Type.Name, problem.RequestTooLarge.Name)
	}
}

// checkAccepted: an accepted body came as JSON, within the size limit, is
// one JSON object of known members in valid UTF-8, is returned byte for
// byte, and has the canonical form a fingerprint is computed over. It
// returns the body's members as encoding/json reads them, for the checks
// of each member.
func checkAccepted(t *testing.T, contentType string, body, raw []byte, known ...string) map[string]any {
	t.Helper()
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
		t.Errorf("accepted Content-Type %q", contentType)
	}
	if !bytes.Equal(raw, body) {
		t.Errorf("returned %q as the raw body of %q", raw, body)
	}
	if len(body) > request.MaxBody {
		t.Errorf("accepted a body of %d bytes", len(body))
	}
	if !utf8.Valid(body) || !json.Valid(body) {
		t.Fatalf("accepted %q, which is not valid UTF-8 JSON", body)
	}
	if _, err := canonical.Transform(raw); err != nil {
		t.Errorf("accepted %q, which has no canonical form, so no fingerprint: %v", body, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		t.Fatalf("accepted %q, which is not a JSON object: %v", body, err)
	}
	for name := range fields {
		if !slices.Contains(known, name) {
			t.Errorf("accepted the unknown member %q", name)
		}
	}
	return fields
}

func checkAccount(t *testing.T, member, got string, fields map[string]any) {
	t.Helper()
	if want, _ := fields[member].(string); got != want {
		t.Errorf("%s read as %q, the body says %q", member, got, want)
	}
	if !strings.HasPrefix(got, "acc_") {
		t.Errorf("%s %q is no account id", member, got)
	}
}

// checkCommon checks the members transfers and deposits share against
// the limits docs/api.md publishes and against the body.
func checkCommon(t *testing.T, amount int64, memo string, metadata map[string]string, fields map[string]any) {
	t.Helper()
	if amount < 1 || amount > request.MaxAmount {
		t.Errorf("amount %d is out of 1..%d", amount, request.MaxAmount)
	}
	// Every amount in range is exact as a float64, so the body's number,
	// however it is spelled, must parse to it.
	lit, _ := fields["amount"].(json.Number)
	if f, err := strconv.ParseFloat(string(lit), 64); err != nil || f != float64(amount) {
		t.Errorf("amount %s read as %d", lit, amount)
	}
	if want, _ := fields["memo"].(string); memo != want {
		t.Errorf("memo read as %q, the body says %q", memo, want)
	}
	if n := utf8.RuneCountInString(memo); n > request.MaxMemo {
		t.Errorf("memo of %d characters accepted", n)
	}
	want, _ := fields["metadata"].(map[string]any)
	if len(metadata) != len(want) || len(metadata) > request.MaxMetadata {
		t.Errorf("metadata read as %d members, the body has %d, the limit is %d", len(metadata), len(want), request.MaxMetadata)
	}
	for k, v := range metadata {
		if n := utf8.RuneCountInString(k); n < 1 || n > request.MaxMetadataKey {
			t.Errorf("metadata name %q of %d characters accepted", k, n)
		}
		if n := utf8.RuneCountInString(v); n > request.MaxMetadataValue {
			t.Errorf("metadata.%s of %d characters accepted", k, n)
		}
		if w, _ := want[k].(string); v != w {
			t.Errorf("metadata.%s read as %q, the body says %q", k, v, w)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
