package canonical_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"idemlab/kit/canonical"
)

// vectors is where the RFC 8785 reference vectors live: testdata/jcs, with
// their licence and a README that says where each file comes from.
func vectors(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "jcs")
	if _, err := os.Stat(filepath.Join(dir, "numbers.txt")); err != nil {
		t.Fatalf("RFC 8785 vectors not found at %s: %v", dir, err)
	}
	return dir
}

func TestTransform_ReferenceVectors(t *testing.T) {
	dir := vectors(t)
	inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no input vectors in %s", dir)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "output", name))
			if err != nil {
				t.Fatal(err)
			}
			hexWant, err := os.ReadFile(filepath.Join(dir, "outhex", strings.TrimSuffix(name, ".json")+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonical.Transform(raw)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != strings.TrimRight(string(want), "\n") {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			wantBytes, err := hex.DecodeString(strings.Join(strings.Fields(string(hexWant)), ""))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(wantBytes) {
				t.Errorf("bytes differ from outhex for %s", name)
			}
		})
	}
}

// numberVectors is how many lines testdata/jcs/numbers.txt holds.
const numberVectors = 12024

func TestTransform_NumberVectors(t *testing.T) {
	f, err := os.Open(filepath.Join(vectors(t), "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, failures := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		bitsHex, want, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			t.Fatalf("line %d: malformed %q", lines+1, sc.Text())
		}
		lines++
		var b [8]byte
		if _, err := hex.Decode(b[:], []byte(bitsHex)); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b[:]))
		// Feed the number through JSON in its shortest round-trip form,
		// so the test exercises Transform's own number formatting.
		got, err := canonical.Transform([]byte(strconv.FormatFloat(f, 'g', -1, 64)))
		if err != nil || string(got) != want {
			failures++
			if failures <= 10 {
				t.Errorf("line %d: %s → %q (%v), want %q", lines, bitsHex, got, err, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// A truncated file would pass on the lines it kept.
	if lines != numberVectors {
		t.Fatalf("read %d number vectors, want %d", lines, numberVectors)
	}
	if failures > 0 {
		t.Fatalf("%d of %d number vectors failed", failures, lines)
	}
}

// Form compares JSON bodies by value and every other body by its bytes:
// a respelled body says the same (a line break after the value is
// spacing), another value does not, and a body that is not JSON (none,
// one cut short, one with bytes after its value) equals only the same
// bytes, never a JSON one.
func TestForm_JSONByValueOtherBodiesByBytes(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"id":"t-1","amount":300000}`, "{\n  \"amount\": 3e5,\n  \"id\": \"t-\\u0031\"\n}", true},
		{`{"id":"t-1","amount":300000}`, `{"id":"t-1","amount":300001}`, false},
		{"", "", true},
		{"", "{}", false},
		{`{"id":"t-1"}`, `{"id":"t-1"`, false},
		{`{"id":"t-1"}`, `{"id":"t-1"}{"id":"t-2"}`, false},
		{`{"id":"t-1"}`, "{\"id\":\"t-1\"}\n", true},
		{`{"id":"t-1"}`, `{"id":"t-1"}x`, false},
		{`{"id":"t-1"}x`, `{"id":"t-1"}x`, true},
		{`{"id":"t-1"}x`, `{"id":"t-1"} x`, false},
		{"ok\n", "ok\n", true},
		{"ok\n", "ok", false},
		{`"ok"`, "ok", false},
	}
	for _, tc := range tests {
		if got := bytes.Equal(canonical.Form([]byte(tc.a)), canonical.Form([]byte(tc.b))); got != tc.same {
			t.Errorf("Form(%q) == Form(%q): %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
