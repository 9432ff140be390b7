package grader_test

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"idemlab/grader"
)

// repoRoot is where the lessons' paths start: go test runs in grader/.
const repoRoot = ".."

// A failing check prints its Lesson, so a student can open the section
// that explains it. A lesson renamed, a heading reworded or a file not
// written yet would send them to nothing.
func TestLessons_EveryCheckAnchorIsAHeading(t *testing.T) {
	anchors := map[string]map[string]bool{}
	for _, c := range grader.Catalogue() {
		file, anchor, ok := strings.Cut(c.Lesson, "#")
		if !ok || file == "" || anchor == "" {
			t.Errorf("%s: Lesson %q is not a file#anchor", c.ID, c.Lesson)
			continue
		}
		have, seen := anchors[file]
		if !seen {
			var err error
			have, err = headingAnchors(filepath.Join(repoRoot, filepath.FromSlash(file)))
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
			}
			anchors[file] = have
		}
		if have != nil && !have[anchor] {
			t.Errorf("%s: %s has no heading whose anchor is #%s (its anchors: %s)",
				c.ID, file, anchor, strings.Join(slices.Sorted(maps.Keys(have)), ", "))
		}
	}
}

// The lessons are a path: each one ends by sending the student to the
// next stage's lesson.
func TestLessons_EachLinksToTheNext(t *testing.T) {
	var files []string
	for _, c := range grader.Catalogue() {
		file, _, _ := strings.Cut(c.Lesson, "#")
		if !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	// Lessons are numbered (00-naive.md, 01-claim.md, …): name order is
	// stage order.
	slices.Sort(files)
	if len(files) < 2 {
		t.Fatalf("the catalogue names %d lesson files; expected one per stage", len(files))
	}
	for i, file := range files[:len(files)-1] {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil {
			t.Errorf("read lesson: %v", err)
			continue
		}
		next := filepath.Base(files[i+1])
		link := regexp.MustCompile(`\]\(` + regexp.QuoteMeta(next) + `(#[^)]*)?\)`)
		if !link.Match(text) {
			t.Errorf("%s does not link to the next lesson, [...](%s)", file, next)
		}
	}
}

func TestGitHubAnchor(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"The window", "the-window"},
		{"No key, no money", "no-key-no-money"},
		{"Where Go's `encoding/json` differs", "where-gos-encodingjson-differs"},
		{"Stage 1 — a UNIQUE constraint decides", "stage-1--a-unique-constraint-decides"},
		{"The `in_progress` state", "the-in_progress-state"},
		{"See [the API](../api.md)", "see-the-api"},
		{"Retry-After", "retry-after"},
	}
	for _, tc := range tests {
		if got := githubAnchor(tc.heading); got != tc.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestHeadingAnchors_SkipsCodeAndNumbersDuplicates(t *testing.T) {
	md := "# Title\n\n```sh\n# not a heading\n```\n\n## Same\n\ntext\n\n## Same\n\n#no space, not a heading\n"
	path := filepath.Join(t.TempDir(), "lesson.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := headingAnchors(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"same", "same-1", "title"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("anchors %v, want %v", keys, want)
	}
}

// headingAnchors reads a markdown file and returns the anchors GitHub
// gives its ATX headings (# to ######), skipping fenced code blocks. A
// repeated anchor gets -1, -2, … as on GitHub.
func headingAnchors(path string) (map[string]bool, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lesson file: %w", err)
	}
	anchors := map[string]bool{}
	count := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		trimmed := strings.TrimLeft(line, " ")
		if f := fenceOf(trimmed); f != "" && len(line)-len(trimmed) < 4 {
			switch {
			case fence == "":
				fence = f
			case closes(trimmed, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		heading, ok := atxHeading(line)
		if !ok {
			continue
		}
		a := githubAnchor(heading)
		if n := count[a]; n > 0 {
			count[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			count[a] = 1
		}
		anchors[a] = true
	}
	return anchors, sc.Err()
}

// fenceOf returns the fence (``` or ~~~, or longer) a line opens or
// closes with, or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// closes reports whether line closes the block opened by fence: the same
// character, at least as many, and nothing else.
func closes(line, fence string) bool {
	return len(line) >= len(fence) && strings.Trim(line, fence[:1]) == ""
}

// atxHeading returns the text of a line such as "## The window", without
// its closing #s.
func atxHeading(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return "", false
	}
	level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
	rest := trimmed[level:]
	if level < 1 || level > 6 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if stripped := strings.TrimRight(rest, "#"); stripped == "" || strings.HasSuffix(stripped, " ") {
		rest = strings.TrimSpace(stripped)
	}
	return rest, true
}

var mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// githubAnchor is the fragment GitHub gives a heading: its text as
// rendered (links become their text, code spans lose their backticks),
// lower-cased, every character that is not a letter, mark, digit,
// underscore, hyphen or space dropped, and each space turned into a
// hyphen.
func githubAnchor(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
