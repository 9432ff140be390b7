package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docExample is one sh block of docs/api.md and the status line of the
// http block under it.
type docExample struct {
	line   int      // where the sh block starts, for messages
	script []string // logical lines: continuations joined
	status int      // 0 for a block without curl
	// replayed: the documented answer carries Idempotent-Replayed: true.
	replayed bool
}

// readDocExamples extracts the examples of a markdown file: every ```sh
// block, and for a block that runs curl, the status of the ```http block
// that follows it.
func readDocExamples(t *testing.T, path string) []docExample {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	var lang string
	var block []string
	var start int
	expectAnswer := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block, start = strings.TrimPrefix(line, "```"), nil, n
		case lang != "" && line == "```":
			switch {
			case lang == "sh":
				if expectAnswer {
					t.Fatalf("docs/api.md:%d: the curl example above has no ```http block with its answer", start)
				}
				ex := docExample{line: start, script: joinContinuations(block)}
				for _, l := range ex.script {
					if strings.HasPrefix(l, "curl ") {
						expectAnswer = true
					}
				}
				out = append(out, ex)
			case lang == "http" && expectAnswer:
				if len(block) == 0 {
					t.Fatalf("docs/api.md:%d: empty answer", start)
				}
				f := strings.Fields(block[0])
				status, err := strconv.Atoi(f[min(1, len(f)-1)])
				if err != nil || !strings.HasPrefix(block[0], "HTTP/") {
					t.Fatalf("docs/api.md:%d: the answer must start with a status line, got %q", start, block[0])
				}
				out[len(out)-1].status = status
				for _, h := range block[1:] {
					if strings.EqualFold(h, "Idempotent-Replayed: true") {
						out[len(out)-1].replayed = true
					}
				}
				expectAnswer = false
			}
			lang = ""
		case lang != "":
			block = append(block, line)
		}
	}
	if expectAnswer {
		t.Fatal("docs/api.md: the last curl example has no answer")
	}
	return out
}

func joinContinuations(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`)
			continue
		}
		out = append(out, strings.TrimSpace(cur+l))
		cur = ""
	}
	return out
}

var assignment = regexp.MustCompile(`^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(\S*)$`)

// TestAPIDoc_ExamplesAnswerAsDocumented runs every example of docs/api.md
// in order against lab serve --stage 6 --solution, as a reader would, and
// checks each answer's status against the one documented under it. It
// runs them with the machine's curl when there is one, and always also
// by translating each curl command line into a Go request.
func TestAPIDoc_ExamplesAnswerAsDocumented(t *testing.T) {
	examples := readDocExamples(t, "../../docs/api.md")
	curls := 0
	for _, ex := range examples {
		if ex.status != 0 {
			curls++
		}
	}
	if curls < 10 {
		t.Fatalf("found only %d curl examples in docs/api.md", curls)
	}
	modes := []string{"translated"}
	if _, err := exec.LookPath("curl"); err == nil {
		modes = append(modes, "curl")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			url, _ := serveUntilReady(t, "--stage", strconv.Itoa(lastStage), "--solution", "--admin-token", "adm_demo")
			env := map[string]string{}
			var last []byte // the last answer's body, for pasted values
			for _, ex := range examples {
				for _, line := range ex.script {
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					if m := assignment.FindStringSubmatch(line); m != nil {
						env[m[1]] = pasted(t, ex, strings.ReplaceAll(m[2], "http://127.0.0.1:8080", url), last)
						continue
					}
					if !strings.HasPrefix(line, "curl ") {
						t.Fatalf("docs/api.md:%d: %q is neither an assignment nor a curl command", ex.line, line)
					}
					var status int
					var header http.Header
					var err error
					if mode == "curl" {
						status, header, last, err = runCurl(line, env)
					} else {
						status, header, last, err = translateCurl(line, env)
					}
					if err != nil {
						t.Fatalf("docs/api.md:%d: %s: %v", ex.line, line, err)
					}
					if status != ex.status {
						t.Errorf("docs/api.md:%d: %s\n  answered %d %s\n  documented %d", ex.line, line, status, last, ex.status)
					}
					if replayed := header.Get("Idempotent-Replayed") == "true"; replayed != ex.replayed {
						t.Errorf("docs/api.md:%d: %s\n  answered with Idempotent-Replayed %v, documented %v", ex.line, line, replayed, ex.replayed)
					}
				}
			}
		})
	}
}

// pasted is an assigned value, or, for a value with "…" in it (the doc's
// "paste the id your server answered"), the "id" of the last answer.
func pasted(t *testing.T, ex docExample, value string, last []byte) string {
	if !strings.Contains(value, "…") {
		return value
	}
	var v struct {
		ID string `json:"id"`
	}
	prefix, _, _ := strings.Cut(value, "…")
	if json.Unmarshal(last, &v) != nil || !strings.HasPrefix(v.ID, prefix) {
		t.Fatalf("docs/api.md:%d: %s asks to paste an id, but the last answer has none: %s", ex.line, value, last)
	}
	return v.ID
}

// runCurl runs a command line with sh and the machine's curl, and reads
// the status line curl -i prints.
func runCurl(line string, env map[string]string) (int, http.Header, []byte, error) {
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil {
		return 0, nil, nil, err
	}
	head, body, _ := bytes.Cut(out, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	f := strings.Fields(lines[0])
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return 0, nil, nil, fmt.Errorf("no status line in curl's output (use curl -si so readers see it): %q", out)
	}
	header := http.Header{}
	for _, l := range lines[1:] {
		if name, value, ok := strings.Cut(l, ":"); ok {
			header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	status, err := strconv.Atoi(f[1])
	return status, header, body, err
}

// translateCurl sends the request a curl command line describes, for a
// machine without curl. It knows the flags docs/api.md uses and refuses
// any other, so that the doc cannot drift from what this test checks.
func translateCurl(line string, env map[string]string) (int, http.Header, []byte, error) {
	words, err := shellWords(line, env)
	if err != nil {
		return 0, nil, nil, err
	}
	method, url, header, body := "", "", http.Header{}, ""
	hasBody := false
	for i := 1; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s needs a value", w)
			}
			i++
			return words[i], nil
		}
		switch {
		case w == "-s" || w == "-i" || w == "-si" || w == "-is" || w == "-sS":
		case w == "-X":
			if method, err = next(); err != nil {
				return 0, nil, nil, err
			}
		case w == "-H":
			h, err := next()
			if err != nil {
				return 0, nil, nil, err
			}
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				return 0, nil, nil, fmt.Errorf("header %q has no colon", h)
			}
			header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		case w == "-d" || w == "--data" || w == "--data-raw":
			if body, err = next(); err != nil {
				return 0, nil, nil, err
			}
			hasBody = true
		case strings.HasPrefix(w, "http://"):
			url = w
		default:
			return 0, nil, nil, fmt.Errorf("the translation does not know the curl argument %q", w)
		}
	}
	if method == "" {
		method = "GET"
		if hasBody {
			method = "POST"
		}
	}
	if hasBody && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
	}
	var rd io.Reader
	if hasBody {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// shellWords splits a command line as sh would, for the quoting the doc
// uses: 'single' (literal), "double" (with $VAR), bare words (with $VAR),
// and backslash escapes.
func shellWords(line string, env map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(s string, i int) int { // s[i] == '$'; returns the index after the name
		j := i + 1
		braced := j < len(s) && s[j] == '{'
		if braced {
			j++
		}
		k := j
		for k < len(s) && (s[k] == '_' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= 'a' && s[k] <= 'z' || s[k] >= '0' && s[k] <= '9') {
			k++
		}
		cur.WriteString(env[s[j:k]])
		if braced && k < len(s) && s[k] == '}' {
			k++
		}
		return k
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			inWord = true
			i++
			for i < len(line) && line[i] != '"' {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`, line[i+1]) >= 0:
					cur.WriteByte(line[i+1])
					i += 2
				case line[i] == '$':
					i = expand(line, i)
				default:
					cur.WriteByte(line[i])
					i++
				}
			}
			if i >= len(line) {
				return nil, fmt.Errorf(`unterminated " in %q`, line)
			}
			i++
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			inWord, i = true, i+2
		case c == '$':
			inWord, i = true, expand(line, i)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	env := map[string]string{"LAB": "http://x", "TOKEN": "tok_1"}
	for _, c := range []struct {
		line string
		want []string
	}{
		{`curl -si $LAB/a`, []string{"curl", "-si", "http://x/a"}},
		{`-H "Authorization: Bearer $TOKEN"`, []string{"-H", "Authorization: Bearer tok_1"}},
		{`-d '{"memo":"\u0072ent $LAB"}'`, []string{"-d", `{"memo":"\u0072ent $LAB"}`}},
		{`-H 'Idempotency-Key: "k"'`, []string{"-H", `Idempotency-Key: "k"`}},
		{`a\ b "c\"d" ${TOKEN}x`, []string{"a b", `c"d`, "tok_1x"}},
	} {
		got, err := shellWords(c.line, env)
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: got %q (%v), want %q", c.line, got, err, c.want)
		}
	}
}
