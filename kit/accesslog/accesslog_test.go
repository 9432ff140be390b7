package accesslog_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"idemlab/kit/accesslog"
)

// TestWriter_LinesAreBoundedWhateverTheClientSends: a client chooses the
// method, the path, the key, the op and the body, and could make each a
// megabyte; a line holds at most each field's limit and says what was cut.
func TestWriter_LinesAreBoundedWhateverTheClientSends(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	var out bytes.Buffer
	w := accesslog.NewWriter(&out)
	if err := w.Write(accesslog.Record{Method: huge, Path: "/" + huge, Customer: huge, Key: huge,
		Status: 401, Type: huge, Op: huge, Body: huge}); err != nil {
		t.Fatal(err)
	}
	limit := accesslog.MaxPath + accesslog.MaxBody + 5*accesslog.MaxField + 512
	if out.Len() > limit {
		t.Fatalf("a line of %d bytes; the limits allow about %d", out.Len(), limit)
	}
	var rec accesslog.Record
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	want := []string{"method", "path", "customer", "idempotency_key", "type", "op", "body"}
	if !slices.Equal(rec.Cut, want) {
		t.Errorf("cut = %v, want %v", rec.Cut, want)
	}
	if len(rec.Path) != accesslog.MaxPath || !strings.HasPrefix(huge, rec.Path[1:]) {
		t.Errorf("the path kept %d bytes, want its first %d", len(rec.Path), accesslog.MaxPath)
	}
}

func TestWriter_KeepsWhatFitsWhole(t *testing.T) {
	var out bytes.Buffer
	body := strings.Repeat("b", accesslog.MaxBody)
	accesslog.NewWriter(&out).Write(accesslog.Record{Method: "POST", Path: "/transfers", Key: "k-1", Status: 201, Body: body})
	var rec accesslog.Record
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Cut != nil || rec.Body != body || rec.Path != "/transfers" {
		t.Fatalf("a record within the limits was changed: cut %v, path %q, body of %d bytes", rec.Cut, rec.Path, len(rec.Body))
	}
}

func TestWriter_CutsAtACharacterBoundary(t *testing.T) {
	var out bytes.Buffer
	path := "/" + strings.Repeat("한", accesslog.MaxPath) // 3 bytes each
	accesslog.NewWriter(&out).Write(accesslog.Record{Method: "GET", Path: path, Status: 404})
	var rec accesslog.Record
	json.Unmarshal(out.Bytes(), &rec)
	if strings.ContainsRune(rec.Path, '\uFFFD') || !strings.HasPrefix(path, rec.Path) || len(rec.Path) > accesslog.MaxPath {
		t.Fatalf("the cut path is not a whole-character prefix of at most %d bytes: ends %q", accesslog.MaxPath, rec.Path[len(rec.Path)-4:])
	}
}
