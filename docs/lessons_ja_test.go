package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"idemlab/grader"
)

// The Japanese lessons (docs/lessons/ja) are the English ones translated.
// A check's Lesson names docs/lessons/0N-….md#anchor, the English slug;
// each Japanese heading carries that slug as an explicit <a id> on the
// line before it, so the same #anchor opens the same section in both.
const jaLessons = "docs/lessons/ja"

// heading is an ATX heading: its level and its GitHub anchor, or, in a
// translation, the explicit <a id> on the line before it ("" if none).
type heading struct {
	level  int
	anchor string
}

func (h heading) String() string { return strings.Repeat("#", h.level) + " #" + h.anchor }

var explicitAnchor = regexp.MustCompile(`^<a id="([^"]+)"></a>$`)

// anchors gives headings the anchors GitHub gives them: a repeated one
// gets -1, -2, … in the order they come.
type anchors map[string]int

func (seen anchors) anchor(heading string) string {
	a := githubAnchor(heading)
	n := seen[a]
	seen[a]++
	if n > 0 {
		return fmt.Sprintf("%s-%d", a, n)
	}
	return a
}

// headingLevel is how many #s open an ATX heading's line.
func headingLevel(line string) int {
	trimmed := strings.TrimLeft(line, " ")
	return len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
}

// mdOutline reads a markdown file and returns its headings in order with
// the anchors GitHub gives them (a repeated one gets -1, -2, …), the
// explicit <a id> anchors in order, and the anchors that sit on no
// heading (an <a id> line not followed by one).
func mdOutline(path string) (heads []heading, ids []heading, stray []string, err error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("lesson file: %w", err)
	}
	count := anchors{}
	var fence fences
	pending := ""
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		if fence.step(line) {
			continue
		}
		if pending != "" {
			if _, ok := atxHeading(line); !ok {
				stray = append(stray, pending)
				pending = ""
			}
		}
		if m := explicitAnchor.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		text, ok := atxHeading(line)
		if !ok {
			continue
		}
		level, a := headingLevel(line), count.anchor(text)
		heads = append(heads, heading{level, a})
		if pending != "" {
			ids = append(ids, heading{level, pending})
			pending = ""
		}
	}
	if pending != "" {
		stray = append(stray, pending)
	}
	return heads, ids, stray, sc.Err()
}

// translationProblems compares a translation with its English lesson:
// every English heading must have a heading of the same level in the
// translation, in the same order, with the English anchor as its <a id>;
// the translation has no <a id> the English lacks, none off a heading,
// and its fenced blocks (code, SQL, commands, FAIL reports) are the
// English ones, character for character.
func translationProblems(enPath, jaPath string) []string {
	en, _, _, err := mdOutline(enPath)
	if err != nil {
		return []string{err.Error()}
	}
	jaHeads, ja, stray, err := mdOutline(jaPath)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, a := range stray {
		problems = append(problems, fmt.Sprintf(`<a id="%s"> is not on the line before a heading`, a))
	}
	if len(jaHeads) != len(en) {
		problems = append(problems, fmt.Sprintf("%d headings, the English lesson has %d", len(jaHeads), len(en)))
	}
	enSet := map[string]bool{}
	for _, h := range en {
		enSet[h.anchor] = true
	}
	jaSet := map[string]bool{}
	for _, h := range ja {
		jaSet[h.anchor] = true
		if !enSet[h.anchor] {
			problems = append(problems, fmt.Sprintf(`<a id="%s">: the English lesson has no heading with that anchor`, h.anchor))
		}
	}
	for _, h := range en {
		if !jaSet[h.anchor] {
			problems = append(problems, fmt.Sprintf(`no <a id="%s"></a> before the translation of the English heading %s`, h.anchor, h))
		}
	}
	if len(problems) == 0 && !slices.Equal(ja, en) {
		problems = append(problems, fmt.Sprintf("anchors in the order %v, the English headings are %v", ja, en))
	}
	enRaw, err1 := os.ReadFile(enPath)
	jaRaw, err2 := os.ReadFile(jaPath)
	if err1 == nil && err2 == nil {
		// A student whose check failed looks for its ID in the lesson.
		for _, id := range slices.Compact(slices.Sorted(slices.Values(checkIDPattern.FindAllString(string(enRaw), -1)))) {
			if !strings.Contains(string(jaRaw), id) {
				problems = append(problems, fmt.Sprintf("the English lesson names the check %s, the translation never does", id))
			}
		}
		enBlocks, jaBlocks := fencedBlocks(string(enRaw)), fencedBlocks(string(jaRaw))
		if len(enBlocks) != len(jaBlocks) {
			problems = append(problems, fmt.Sprintf("%d fenced blocks, the English lesson has %d", len(jaBlocks), len(enBlocks)))
		} else {
			for i := range enBlocks {
				if enBlocks[i] != jaBlocks[i] {
					problems = append(problems, fmt.Sprintf("fenced block %d differs from the English one:\n%s\nwant\n%s", i+1, jaBlocks[i], enBlocks[i]))
				}
			}
		}
	}
	return problems
}

// checkIDPattern matches a check's ID, such as S9.poison.
var checkIDPattern = regexp.MustCompile(`S[0-9]\.[a-z0-9]+(-[a-z0-9]+)*`)

// fencedBlocks returns each fenced block of a markdown text, fences
// included.
func fencedBlocks(md string) []string {
	var blocks []string
	var cur strings.Builder
	fence := ""
	for line := range strings.Lines(md) {
		trimmed := strings.TrimSpace(line)
		f := fenceOf(trimmed)
		switch {
		case fence == "" && f != "":
			fence = f
			cur.Reset()
			cur.WriteString(line)
		case fence != "":
			cur.WriteString(line)
			if f != "" && closes(trimmed, fence) {
				blocks = append(blocks, cur.String())
				fence = ""
			}
		}
	}
	return blocks
}

func lessonFiles(t *testing.T, dir string) []string {
	t.Helper()
	// A lesson is NN-name.md; docs/lessons/ja also holds the glossary.
	paths, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(dir), "[0-9][0-9]-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

// TestLessonsJa_SameFilesSameAnchors: the Japanese set has the English
// set's files, and each follows its English lesson heading for heading.
func TestLessonsJa_SameFilesSameAnchors(t *testing.T) {
	en, ja := lessonFiles(t, "docs/lessons"), lessonFiles(t, jaLessons)
	if len(en) == 0 || !slices.Equal(en, ja) {
		t.Fatalf("docs/lessons has %v, %s has %v", en, jaLessons, ja)
	}
	for _, name := range en {
		enPath := filepath.Join(repoRoot, "docs", "lessons", name)
		jaPath := filepath.Join(repoRoot, filepath.FromSlash(jaLessons), name)
		for _, p := range translationProblems(enPath, jaPath) {
			t.Errorf("%s/%s: %s", jaLessons, name, p)
		}
	}
}

// TestLessonsJa_EveryCheckAnchorResolves: a check's Lesson anchor opens
// its section in the English lesson and in the Japanese one.
func TestLessonsJa_EveryCheckAnchorResolves(t *testing.T) {
	for _, c := range grader.Catalogue() {
		file, anchor, _ := strings.Cut(c.Lesson, "#")
		dir, name := filepath.Split(filepath.FromSlash(file))
		for _, path := range []string{filepath.Join(dir, name), filepath.Join(dir, "ja", name)} {
			heads, ids, _, err := mdOutline(filepath.Join(repoRoot, path))
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			if !slices.ContainsFunc(slices.Concat(heads, ids), func(h heading) bool { return h.anchor == anchor }) {
				t.Errorf("%s: %s has no anchor #%s", c.ID, filepath.ToSlash(path), anchor)
			}
		}
	}
}

var relLink = regexp.MustCompile(`\]\(([^)#:]+\.md)(#[^)]*)?\)`)

// TestLessonsJa_LinksResolve: a Japanese lesson's links to other docs
// reach them from docs/lessons/ja, its links to lessons stay in the
// Japanese set, and each lesson but the last links to the next one.
func TestLessonsJa_LinksResolve(t *testing.T) {
	names := lessonFiles(t, jaLessons)
	dir := filepath.Join(repoRoot, filepath.FromSlash(jaLessons))
	for i, name := range names {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		next := false
		for _, m := range relLink.FindAllStringSubmatch(string(raw), -1) {
			target := filepath.Join(dir, filepath.FromSlash(m[1]))
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which is not there from %s", name, m[1], jaLessons)
			}
			if slices.Contains(names, filepath.Base(m[1])) && filepath.Dir(target) != dir {
				t.Errorf("%s links to the English lesson %s; link the Japanese one", name, m[1])
			}
			next = next || (i+1 < len(names) && m[1] == names[i+1])
		}
		if i+1 < len(names) && !next {
			t.Errorf("%s does not link to the next lesson, [...](%s)", name, names[i+1])
		}
	}
}

// TestTranslationProblems: the comparison catches a heading added to the
// English lesson and not translated, an anchor the English lacks, one in
// the wrong order or off a heading, and an edited code block.
func TestTranslationProblems(t *testing.T) {
	en := "# Stage 1 — a title\n\n## The race\n\n```sh\n# not a heading\nmake stage-1\n```\n\n### Why `BEGIN IMMEDIATE`\n\n## The exercise\n"
	ja := "<a id=\"stage-1--a-title\"></a>\n# ステージ 1 — 題\n\n<a id=\"the-race\"></a>\n## 競合\n\n```sh\n# not a heading\nmake stage-1\n```\n\n<a id=\"why-begin-immediate\"></a>\n### `BEGIN IMMEDIATE` の理由\n\n<a id=\"the-exercise\"></a>\n## 演習\n"
	tests := []struct {
		name   string
		en, ja string
		want   string // a fragment of the one problem expected; "" for none
	}{
		{"a faithful translation", en, ja, ""},
		{"a heading added to the English lesson only", en + "\n## What comes later\n", ja, `no <a id="what-comes-later"></a>`},
		{"an anchor the English lacks", en, ja + "\n<a id=\"the-window\"></a>\n## 窓\n", `<a id="the-window">: the English lesson has no heading`},
		{"anchors in another order", en,
			strings.NewReplacer(`"the-race"`, `"the-exercise"`, `"the-exercise"`, `"the-race"`).Replace(ja),
			"anchors in the order"},
		{"an anchor on no heading", en, strings.Replace(ja, "<a id=\"the-race\"></a>\n## 競合", "<a id=\"the-race\"></a>\n\n## 競合", 1), `<a id="the-race"> is not on the line before a heading`},
		{"a heading at another level", en, strings.Replace(ja, "### `BEGIN", "## `BEGIN", 1), "anchors in the order"},
		{"a translated command", en, strings.Replace(ja, "make stage-1", "make ステージ-1", 1), "fenced block 1 differs"},
		{"a check named in English only", en + "\nA relay that drops it fails `S1.concurrent-first` (see S1.concurrent-first.html).\n", ja,
			"names the check S1.concurrent-first, the translation never does"},
		{"a check named in both", en + "\nIt fails `S1.concurrent-first`.\n", ja + "\n失敗します（`S1.concurrent-first`）。\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			enPath, jaPath := filepath.Join(dir, "en.md"), filepath.Join(dir, "ja.md")
			os.WriteFile(enPath, []byte(tc.en), 0o644)
			os.WriteFile(jaPath, []byte(tc.ja), 0o644)
			got := translationProblems(enPath, jaPath)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want)):
				t.Errorf("problems %q, want one saying %q", got, tc.want)
			}
		})
	}
}
