package conform

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"idemlab/grader/conform/testdata/payserver"
)

// TestLoad_ErrorsSayWhatToFix: each mistake a newcomer makes in the
// payserver profile is refused with a message that names the place and
// what to write instead; a message that said only "invalid profile", or
// a mistake let through to the run, fails.
func TestLoad_ErrorsSayWhatToFix(t *testing.T) {
	good, err := os.ReadFile("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, old, new string
		says           []string
	}{
		{"a typo in a member", `"witness"`, `"witnes"`, []string{"witnes: unknown member", `did you mean "witness"?`}},
		{"a typo in a nested member", `"count": "/items"`, `"counts": "/items"`, []string{"witness.counts: unknown member", "witness has path, count, value, per_operation"}},
		{"a member a principal does not have", `"vars": {"who": "bob"}`, `"vars": {"who": "bob"}, "token": "x"`, []string{"principals[1].token: unknown member", "name, headers, vars"}},
		{"a doubled comma", `"edit": "cents",`, `"edit": "cents",,`, []string{"line 6, column 19"}},
		{"a number where a string goes", `"edit": "cents"`, `"edit": 7`, []string{"edit: a JSON number where a string, or a list of strings, is wanted"}},
		{"a JSON pointer without its slash", `"count": "/items"`, `"count": "items"`, []string{`count "items" is not a JSON pointer`, `"/items"`}},
		{"a dotted path for a pointer", `"count": "/items"`, `"count": "data.items"`, []string{`"/data/items"`}},
		{"an edit the body does not have", `"edit": "cents"`, `"edit": "amount"`, []string{`edit "amount": the body has nothing there`, "the members there: cents, note, payee"}},
		{"a listed edit the body does not have", `"edit": "cents"`, `"edit": ["cents", "amount"]`, []string{`edit "amount": the body has nothing there`, "the members there: cents, note, payee"}},
		{"a list of numbers for edit", `"edit": "cents"`, `"edit": [7]`, []string{"edit: a JSON list of numbers where a string, or a list of strings, is wanted"}},
		{"a misspelt placeholder", `{{amount}}`, `{{amout}}`, []string{"body: {{amout}} is not a placeholder", "{{amount}}, {{unique}}"}},
		{"a var a principal lacks", `"vars": {"who": "bob"}`, `"vars": {"whom": "bob"}`, []string{"uses {{var.who}}", "principals[1] (bob) has no vars.who"}},
		{"a restart without a witness", `"witness": {"path": "/v1/payments", "count": "/items"},`, `"restart": "systemctl restart payserver",`, []string{"restart: needs a witness"}},
		{"a read for the operation", `"method": "POST"`, `"method": "GET"`, []string{"method GET is safe", "name the operation that creates or pays"}},
		{"a method in lower case", `"method": "POST"`, `"method": "post"`, []string{`method "post": a method is case-sensitive`, `"POST"`}},
		{"days in the expiry", `"after": "24h"`, `"after": "1d"`, []string{`write days as hours, e.g. "24h"`}},
		{"an expiry that is no period", `"after": "24h"`, `"after": "a day"`, []string{`"24h" or "30m"`}},
	} {
		changed := strings.Replace(string(good), c.old, c.new, 1)
		if changed == string(good) {
			t.Fatalf("%s: %q is not in the profile", c.name, c.old)
		}
		path := filepath.Join(t.TempDir(), "profile.json")
		if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: taken, want an error saying %q", c.name, c.says)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v\n  does not say %q", c.name, err, s)
			}
		}
	}
}

// TestRun_AWitnessPointerToNothingSaysWhatIsThere: a witness pointer
// that names no member of what the API answers stops the run before it
// sends the operation, and names the members that are there.
func TestRun_AWitnessPointerToNothingSaysWhatIsThere(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Witness.Count = "/payments"
	ts := httptest.NewServer(payserver.New())
	defer ts.Close()
	_, err = Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 1, MaxOperations: 100, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `no member "payments" at /payments (the members there: items)`) {
		t.Fatalf("err %v, want one naming the members there", err)
	}
}

// TestRun_PrincipalsWithOneCredential: two principals whose headers come
// out the same (a copied principal, or two variables holding one key)
// are one caller to the API; the run stops before it sends anything
// instead of reporting a right API's answers to one caller as a leak
// between two.
func TestRun_PrincipalsWithOneCredential(t *testing.T) {
	p, err := Load("testdata/profiles/payserver.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Principals[1].Headers = map[string]string{"X-Api-Key": "{{env.CONFORM_TEST_KEY}}"}
	t.Setenv("CONFORM_TEST_KEY", "alice")
	ts := httptest.NewServer(payserver.New())
	defer ts.Close()
	_, err = Run(context.Background(), Options{URL: ts.URL, Profile: p, Seed: 1, MaxOperations: 100, Timeout: 10 * time.Second})
	if want := "alice and bob send the same headers"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want one saying %q", err, want)
	}
}

// TestLoad_ARootThatIsNoObject: a profile that is a JSON list says that a
// profile is one object, not ": a JSON array".
func TestLoad_ARootThatIsNoObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte("[1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := "a JSON array where a profile, one JSON object, is wanted"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ": :") {
		t.Fatalf("err %v, want one saying %q", err, want)
	}
}
