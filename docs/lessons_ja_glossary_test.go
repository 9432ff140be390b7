package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// jaGlossary is the glossary the Japanese lessons are written with.
const jaGlossary = jaLessons + "/glossary.md"

// glossary is what the lessons must not say: each term's avoided words
// (allowed only inside the term's first-mention form, as スキャフォールド
// is in 雛形（スキャフォールド）), and the literal renderings of English.
type glossary struct {
	avoid   []avoided
	literal []string
}

type avoided struct {
	word, unless string
}

// readGlossary reads the glossary's two tables: 用語 (English, the term,
// its first-mention form, the avoided words separated by 、) and 直訳調の
// 言い回し (the literal phrase, the natural one).
func readGlossary(path string) (glossary, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return glossary{}, fmt.Errorf("glossary: %w", err)
	}
	var g glossary
	section := ""
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case section == "用語" && len(cells) == 4 && cells[0] != "English":
			for _, w := range strings.Split(cells[3], "、") {
				if w != "" {
					g.avoid = append(g.avoid, avoided{word: w, unless: cells[2]})
				}
			}
		case section == "直訳調の言い回し" && len(cells) == 2 && cells[0] != "直訳調":
			g.literal = append(g.literal, cells[0])
		}
	}
	if len(g.avoid) == 0 || len(g.literal) == 0 {
		return g, fmt.Errorf("glossary %s: no avoided words or no literal renderings read (tables 用語 and 直訳調の言い回し)", path)
	}
	return g, nil
}

// prose returns the lines of a lesson a reader reads as sentences, with
// their line numbers: not fenced blocks, not <a id> lines.
func prose(md string) (lines []string, numbers []int) {
	var fence fences
	n := 0
	for line := range strings.Lines(md) {
		n++
		line = strings.TrimRight(line, "\n")
		if fence.step(line) || explicitAnchor.MatchString(strings.TrimSpace(line)) {
			continue
		}
		lines = append(lines, line)
		numbers = append(numbers, n)
	}
	return lines, numbers
}

// fences follows a markdown text's fenced blocks line by line.
type fences struct{ open string }

// step takes the next line and reports whether it is not text: a fence
// (indented less than a code block), or a line inside a fenced block.
func (f *fences) step(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	if fence := fenceOf(trimmed); fence != "" && len(line)-len(trimmed) < 4 {
		switch {
		case f.open == "":
			f.open = fence
		case closes(trimmed, f.open):
			f.open = ""
		}
		return true
	}
	return f.open != ""
}

var (
	// link is a link, its text (group 1) and its target: a reader sees
	// the text alone, and the spacing rule holds beside it as beside
	// any other text.
	link = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// jaLetter is a kana or a kanji: full-width text that is not
	// punctuation.
	jaLetter = `[\p{Hiragana}\p{Katakana}\p{Han}ー]`
	// spacedAlnum is a space between such a letter and a half-width
	// letter or digit, either way round.
	spacedAlnum = regexp.MustCompile(jaLetter + ` +[A-Za-z0-9]|[A-Za-z0-9] +` + jaLetter)
	inlineSpan  = regexp.MustCompile("`[^`]*`")
	isJaLetter  = regexp.MustCompile("^" + jaLetter + "$")
	// katakanaWord is a word in katakana only.
	katakanaWord = regexp.MustCompile(`^[\p{Katakana}ー]+$`)
	// italics is emphasis by one asterisk (*自分の*), an English device:
	// Japanese says it with word order or 「」. Bold (**) is a term's
	// definition and stays.
	italics = regexp.MustCompile(`(?:^|[^*])\*[^*\s][^*]*\*(?:[^*]|$)`)
)

// tightCode returns the first inline code span of line that touches a
// kana or a kanji, with that letter, or "".
func tightCode(line string) string {
	for _, span := range inlineSpan.FindAllStringIndex(line, -1) {
		before, _ := utf8.DecodeLastRuneInString(line[:span[0]])
		after, _ := utf8.DecodeRuneInString(line[span[1]:])
		if isJaLetter.MatchString(string(before)) || isJaLetter.MatchString(string(after)) {
			return strings.TrimSpace(string(before) + line[span[0]:span[1]] + string(after))
		}
	}
	return ""
}

// jaPunct is full-width punctuation or a bracket: inline code beside one
// takes no space.
const jaPunct = "、。，．：；！？（）「」『』【】"

// spacedCode returns the first inline code span of line with a space
// between it and full-width punctuation or a bracket, with the two, or
// "".
func spacedCode(line string) string {
	for _, span := range inlineSpan.FindAllStringIndex(line, -1) {
		head := strings.TrimRight(line[:span[0]], " ")
		before, _ := utf8.DecodeLastRuneInString(head)
		if len(head) < span[0] && strings.ContainsRune(jaPunct, before) {
			return string(before) + line[len(head):span[1]]
		}
		tail := strings.TrimLeft(line[span[1]:], " ")
		after, _ := utf8.DecodeRuneInString(tail)
		if len(tail) < len(line)-span[1] && strings.ContainsRune(jaPunct, after) {
			return line[span[0]:len(line)-len(tail)] + string(after)
		}
	}
	return ""
}

// containsWord reports whether text says word. A word in katakana is
// not said by a longer katakana word that begins with it: ダブル is
// avoided, ダブルクリック is not.
func containsWord(text, word string) bool {
	if !katakanaWord.MatchString(word) {
		return strings.Contains(text, word)
	}
	for i := strings.Index(text, word); i >= 0; {
		after, _ := utf8.DecodeRuneInString(text[i+len(word):])
		if !katakanaWord.MatchString(string(after)) {
			return true
		}
		next := strings.Index(text[i+len(word):], word)
		if next < 0 {
			return false
		}
		i += len(word) + next
	}
	return false
}

// styleProblems lists what a Japanese lesson says against the glossary:
// an avoided word outside its term's first-mention form, a literal
// rendering (spaces aside), italics, a space between Japanese and
// half-width letters or digits (a link read as its text, as a reader
// sees it), inline code without a space beside
// Japanese, and inline code with one beside punctuation or a bracket.
func styleProblems(md string, g glossary) []string {
	var problems []string
	lines, numbers := prose(md)
	for i, line := range lines {
		at := fmt.Sprintf("line %d", numbers[i])
		for _, a := range g.avoid {
			rest := line
			if a.unless != "" {
				rest = strings.ReplaceAll(rest, a.unless, "")
			}
			if containsWord(rest, a.word) {
				problems = append(problems, fmt.Sprintf("%s: %q is an avoided word (glossary): %s", at, a.word, line))
			}
		}
		unspaced := strings.ReplaceAll(line, " ", "")
		for _, l := range g.literal {
			if strings.Contains(unspaced, strings.ReplaceAll(l, " ", "")) {
				problems = append(problems, fmt.Sprintf("%s: %q is a literal rendering (glossary): %s", at, l, line))
			}
		}
		if m := tightCode(line); m != "" {
			problems = append(problems, fmt.Sprintf("%s: inline code needs a space beside Japanese text: %q", at, m))
		}
		if m := spacedCode(line); m != "" {
			problems = append(problems, fmt.Sprintf("%s: no space between inline code and punctuation or a bracket: %q", at, m))
		}
		text := link.ReplaceAllString(inlineSpan.ReplaceAllString(line, "\x00"), "$1")
		if m := italics.FindString(text); m != "" {
			problems = append(problems, fmt.Sprintf("%s: no italics in Japanese: %q", at, m))
		}
		if m := spacedAlnum.FindString(text); m != "" {
			problems = append(problems, fmt.Sprintf("%s: no space between Japanese and half-width letters or digits: %q", at, m))
		}
	}
	return problems
}

// TestLessonsJa_Glossary: every Japanese lesson keeps to the glossary's
// terms and its spacing rule.
func TestLessonsJa_Glossary(t *testing.T) {
	g, err := readGlossary(filepath.Join(repoRoot, filepath.FromSlash(jaGlossary)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range lessonFiles(t, jaLessons) {
		raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(jaLessons), name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range styleProblems(string(raw), g) {
			t.Errorf("%s/%s: %s", jaLessons, name, p)
		}
	}
}

// TestStyleProblems: the style check catches an avoided word, and lets
// it pass inside its first-mention form or a code block; catches a
// literal rendering however it is spaced, a space between Japanese and a
// digit or a Latin letter, and inline code glued to Japanese; and passes
// the forms the rule asks for.
func TestStyleProblems(t *testing.T) {
	g := glossary{
		avoid:   []avoided{{word: "コア台帳"}, {word: "スキャフォールド", unless: "雛形（スキャフォールド）"}, {word: "ダブル"}},
		literal: []string{"2 人の誠実なクライアント"},
	}
	tests := []struct {
		name, md string
		want     string // a fragment of the one problem expected; "" for none
	}{
		{"natural text", "ステージ7では、2人の担当者が `PUT` を送ります。HTTP 409を返します。\n", ""},
		{"an avoided word", "送金はコア台帳に届きます。\n", `"コア台帳" is an avoided word`},
		{"an avoided word in its first-mention form", "雛形（スキャフォールド）を開きます。\n", ""},
		{"the avoided word later on its own", "雛形（スキャフォールド）を開きます。\nスキャフォールドは失敗します。\n", `"スキャフォールド" is an avoided word`},
		{"an avoided katakana word", "ダブルが起きます。\n", `"ダブル" is an avoided word`},
		{"an avoided katakana word after a longer one", "ダブルクリックでダブルになります。\n", `"ダブル" is an avoided word`},
		{"a longer katakana word that begins with an avoided one", "ダブルクリックとダブルチェックです。\n", ""},
		{"an avoided word in a fenced block", "```\nコア台帳\n```\n", ""},
		{"a literal rendering, respaced", "2人の誠実なクライアントです。\n", "literal rendering"},
		{"a space before a digit", "ステージ 7 では\n", "no space between Japanese"},
		{"a space after a Latin word", "ETag を返します。\n", "no space between Japanese"},
		{"inline code glued to Japanese", "`make stage-7`を実行します。\n", "inline code needs a space"},
		{"the second of two spans glued", "`a` と`b` です。\n", "inline code needs a space"},
		{"inline code spaced, in brackets, in a link", "`make stage-7` を実行します（`If-Match`）。[ステージ8](08-zombie-resources.md)へ。\n", ""},
		{"a space after a link in half-width letters", "節は[docs/api.md](../../api.md) にあります。\n", `"d に"`},
		{"a space before a link in half-width letters", "描いたものが [S8.two-clerks.html](t.html)です。\n", `"が S"`},
		{"a link in half-width letters, unspaced", "描いたものが[S8.two-clerks.html](t.html)です。\n", ""},
		{"a link to inline code, spaced", "[`S8.two-keys`](#one-invoice-two-keys) が失敗します。\n", ""},
		{"a space after a full stop, before inline code", "開いてください。 `make stage-9` を実行します。\n", "inline code and punctuation"},
		{"a space before a closing bracket", "（`If-Match` ）です。\n", "inline code and punctuation"},
		{"italics", "Bは*自分の*内容を保存します。\n", "no italics"},
		{"bold and a list", "- **更新の消失**は起きません。\n", ""},
		{"an anchor line", "<a id=\"the-race\"></a>\n## 競合\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := styleProblems(tc.md, g)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems %q, want one saying %q", got, tc.want)
			}
		})
	}
}

// TestReadGlossary: the glossary's tables are read, and a glossary
// without them is an error, not an empty list that lets everything pass.
func TestReadGlossary(t *testing.T) {
	g, err := readGlossary(filepath.Join(repoRoot, filepath.FromSlash(jaGlossary)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.avoid, avoided{word: "コア台帳", unless: "勘定系（銀行の中核の元帳システム）"}) || !slices.Contains(g.literal, "毒の行") {
		t.Errorf("glossary read as %+v", g)
	}
	empty := filepath.Join(t.TempDir(), "glossary.md")
	os.WriteFile(empty, []byte("# 用語集\n"), 0o644)
	if _, err := readGlossary(empty); err == nil {
		t.Error("a glossary without tables read without error")
	}
}
