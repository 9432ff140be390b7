package history

import (
	"strings"
	"testing"
)

func TestDescribe_OneLinePerRequest(t *testing.T) {
	long := strings.Repeat("x", 250)
	for _, c := range []struct {
		name, method, path string
		keys               []string
		body, want         string
	}{
		{"no key, no body", "GET", "/accounts", nil, "", "GET /accounts"},
		{"key and body", "POST", "/transfers", []string{"k1"}, `{"amount":1}`, `POST /transfers  Idempotency-Key: k1  {"amount":1}`},
		{"two keys", "POST", "/transfers", []string{`"a"`, `"b"`}, "", `POST /transfers  Idempotency-Key: "a"  Idempotency-Key: "b"`},
		{"long body cut", "POST", "/transfers", nil, long, "POST /transfers  " + long[:120] + "… (250 bytes)"},
	} {
		if got := Describe(c.method, c.path, c.keys, c.body); got != c.want {
			t.Errorf("%s: Describe = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestExecuted(t *testing.T) {
	for n, want := range map[int64]string{0: "never executed", 1: "executed once", 2: "executed twice", 5: "executed 5 times"} {
		if got := Executed(n); got != want {
			t.Errorf("Executed(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTimes(t *testing.T) {
	for n, want := range map[int64]string{0: "never", 1: "once", 2: "twice", 5: "5 times"} {
		if got := Times(n); got != want {
			t.Errorf("Times(%d) = %q, want %q", n, got, want)
		}
	}
}
