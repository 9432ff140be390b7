package request

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unicode/utf8"
)

// FuzzPlainObject holds plainObject to the reader it stands in for: a body
// it takes is one the token walk takes, with the members json.Unmarshal
// reads. A body it passes over costs only time, so that is not checked;
// TestPlainObject_PassesOverWhatItCannotVouchFor names the bodies it must.
func FuzzPlainObject(f *testing.F) {
	for _, body := range []string{
		`{}`, ` {"a":1} `, `{"from":"acc_a","to":"acc_b","amount":3e5,"memo":"caf\u00e9","metadata":{"op":"o1"}}`,
		`{"a":{"b":[1,{"c":null,"d":[true,false]},"x"]},"e":[]}`, `{"a":"\"","b":"\\"}`, `{"a":1,"a":2}`,
		`{"a":{"x":1,"x":2}}`, `{"a":[{"x":1,"y":{"x":2}},{"x":3}]}`, `{"\u0061":1}`, `{"a":1,"\u0061":2}`,
		`{"a":1}{"b":2}`, `{"a":1} x`, `[1]`, `"x"`, `{"a":1,}`, `{"a" 1}`, "{\"a\":\"\xff\"}", `{"a":-0.5e-3}`,
		`{"é":1,"e":2,"é":3}`, "{\t\"a\"\n:\r1 }",
	} {
		f.Add([]byte(body))
	}
	// The bodies the transfer and deposit fuzz targets start from.
	for _, dir := range []string{"FuzzTransfer", "FuzzDeposit"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		for _, file := range files {
			if body, ok := corpusBody(f, file); ok {
				f.Add(body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPlainObject(t, raw) })
}

// checkPlainObject fails t if plainObject takes raw and the token walk
// refuses it, or json.Unmarshal reads other members from it. It reports
// whether plainObject took it.
func checkPlainObject(t *testing.T, raw []byte) bool {
	t.Helper()
	members, ok := plainObject(raw)
	if !ok {
		return false
	}
	if !utf8.Valid(raw) {
		t.Fatalf("took %q, which is not valid UTF-8", raw)
	}
	if err := checkStructure(raw); err != nil {
		t.Fatalf("took %q, which the token walk refuses: %v", raw, err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("took %q, which json.Unmarshal refuses: %v", raw, err)
	}
	if !maps.EqualFunc(members, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("read %q as %q, json.Unmarshal as %q", raw, members, want)
	}
	return true
}

// corpusBody reads the body of a FuzzTransfer or FuzzDeposit corpus file:
// its second value, after the Content-Type.
func corpusBody(f *testing.F, file string) ([]byte, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) < 3 {
		return nil, false
	}
	lit, ok := bytes.CutPrefix(lines[2], []byte("[]byte("))
	if !ok {
		return nil, false
	}
	s, err := strconv.Unquote(string(bytes.TrimSuffix(lit, []byte(")"))))
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}

func TestPlainObject_PassesOverWhatItCannotVouchFor(t *testing.T) {
	for _, body := range []string{
		`{"a":1,"a":2}`,         // a name twice
		`{"a":{"x":1,"x":2}}`,   // twice, deeper
		`{"a":[{"x":1,"x":2}]}`, // twice, in an array
		`{"\u0061":1}`,          // an escaped name, which only unescaping can compare
		`{"a":1}{"b":2}`,        // a second value
		`[1]`,                   // not an object
		"{\"a\":\"\xff\"}",      // not UTF-8
		`{"a":1,}`,              // not JSON
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":17}`, // twice, among many
	} {
		if members, ok := plainObject([]byte(body)); ok {
			t.Errorf("took %s, as %q", body, members)
		}
	}
}

func TestPlainObject_ReadsTheMembersAsSent(t *testing.T) {
	body := `{ "from" : "acc_a" , "amount":3e5,"metadata":{"op":"o1", "n":[1, 2]},"memo":"caf\u00e9" }`
	members, ok := plainObject([]byte(body))
	if !ok {
		t.Fatalf("passed over %s", body)
	}
	want := map[string]string{"from": `"acc_a"`, "amount": `3e5`, "metadata": `{"op":"o1", "n":[1, 2]}`, "memo": `"caf\u00e9"`}
	if len(members) != len(want) {
		t.Fatalf("read %q, want %q", members, want)
	}
	for name, v := range want {
		if string(members[name]) != v {
			t.Errorf("%s read as %s, want %s", name, members[name], v)
		}
	}
}

// TestPlainObject_AgreesOnGeneratedBodies runs FuzzPlainObject's check on
// bodies built to reach its corners, which random bytes seldom do: nested
// objects and arrays, names that repeat at one depth or at two, escaped
// names and values, whitespace everywhere JSON allows it, and each of them
// again with one byte changed, dropped or doubled.
func TestPlainObject_AgreesOnGeneratedBodies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checked, taken := 0, 0
	for range 20000 {
		body := genObject(rng, 0)
		for _, raw := range [][]byte{body, mutate(rng, body)} {
			checked++
			if checkPlainObject(t, raw) {
				taken++
			}
		}
	}
	// The generator must reach both answers often.
	if taken < checked/5 || taken > checked*4/5 {
		t.Fatalf("took %d of %d generated bodies; the generator no longer covers both answers", taken, checked)
	}
}

func genSpace(rng *rand.Rand) string {
	return []string{"", "", "", " ", "\n", "\t ", "\r\n"}[rng.IntN(7)]
}

func genString(rng *rand.Rand) string {
	return []string{`"a"`, `"b"`, `"op"`, `"é"`, `"\u0061"`, `"a\"b"`, `"\\"`, `""`, `"\n"`, `"a b"`}[rng.IntN(10)]
}

func genValue(rng *rand.Rand, depth int) []byte {
	switch n := rng.IntN(10); {
	case n < 2 && depth < 4:
		return genObject(rng, depth+1)
	case n < 3 && depth < 4:
		var b bytes.Buffer
		b.WriteString("[" + genSpace(rng))
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString(genSpace(rng) + "," + genSpace(rng))
			}
			b.Write(genValue(rng, depth+1))
		}
		b.WriteString(genSpace(rng) + "]")
		return b.Bytes()
	case n < 6:
		return []byte(genString(rng))
	}
	return []byte([]string{"1", "-0", "3e5", "300000.0", "-1.5E-3", "true", "false", "null"}[rng.IntN(8)])
}

func genObject(rng *rand.Rand, depth int) []byte {
	var b bytes.Buffer
	b.WriteString(genSpace(rng) + "{" + genSpace(rng))
	for i := range rng.IntN(5) {
		if i > 0 {
			b.WriteString(genSpace(rng) + "," + genSpace(rng))
		}
		b.WriteString(genString(rng) + genSpace(rng) + ":" + genSpace(rng))
		b.Write(genValue(rng, depth))
	}
	b.WriteString(genSpace(rng) + "}" + genSpace(rng))
	return b.Bytes()
}

// mutate changes, drops or doubles one byte of body.
func mutate(rng *rand.Rand, body []byte) []byte {
	i := rng.IntN(len(body))
	out := bytes.Clone(body)
	switch rng.IntN(3) {
	case 0:
		out[i] = `{}[]":,\ a1é`[rng.IntN(13)]
	case 1:
		out = append(out[:i], out[i+1:]...)
	default:
		out = append(out[:i+1], out[i:]...)
	}
	return out
}
