package docs_test

import (
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"idemlab/grader"
	"idemlab/grader/ladder"
	"idemlab/kit/labctl"
)

// repoRoot is where the lessons' paths start: go test runs in docs/.
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

// A mutant whose failure must send the student to a section of its own
// (ladder.Mutant.Lesson) names one that is there: the ladder compares
// the failure's lesson with the name as written, and would hold both to a
// heading that was renamed.
func TestLessons_EveryMutantLessonIsAHeading(t *testing.T) {
	for _, m := range ladder.Mutants {
		if m.Lesson == "" {
			continue
		}
		file, anchor, ok := strings.Cut(m.Lesson, "#")
		if !ok || file == "" || anchor == "" {
			t.Errorf("mutant %s: lesson %q is not a file#anchor", m.Name, m.Lesson)
			continue
		}
		have, err := headingAnchors(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil {
			t.Errorf("mutant %s: %v", m.Name, err)
			continue
		}
		if !have[anchor] {
			t.Errorf("mutant %s: %s has no heading whose anchor is #%s", m.Name, file, anchor)
		}
	}
}

// TestLessons_EveryCheckSectionNamesIt: the section a check's failure
// sends the student to names the check (by its ID), in English and in
// Japanese: a student who opens it finds what the check does and what it
// catches, not a neighbouring subject. Its subsections count as part of
// it.
func TestLessons_EveryCheckSectionNamesIt(t *testing.T) {
	for _, dir := range []string{"docs/lessons", jaLessons} {
		sections := map[string]map[string]string{}
		for _, c := range grader.Catalogue() {
			file, anchor, _ := strings.Cut(c.Lesson, "#")
			name := pathpkg.Base(file)
			secs, seen := sections[name]
			if !seen {
				var err error
				secs, err = sectionTexts(filepath.Join(repoRoot, filepath.FromSlash(dir), name), dir == jaLessons)
				if err != nil {
					t.Fatal(err)
				}
				sections[name] = secs
			}
			switch text, ok := secs[anchor]; {
			case !ok:
				t.Errorf("%s: %s/%s has no section #%s", c.ID, dir, name, anchor)
			case !strings.Contains(text, c.ID):
				t.Errorf("%s: %s/%s#%s never names it", c.ID, dir, name, anchor)
			}
		}
	}
}

// sectionTexts reads a lesson and returns each heading's section, by
// anchor: the heading and every line up to the next heading of its level
// or above, its subsections included. explicit takes the anchors from the
// <a id> line before each heading (a translation's), not from the
// heading's text.
func sectionTexts(path string, explicit bool) (map[string]string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type section struct {
		level  int
		anchor string
		text   strings.Builder
	}
	out := map[string]string{}
	count := anchors{}
	var open []*section
	closeTo := func(level int) {
		for len(open) > 0 && open[len(open)-1].level >= level {
			s := open[len(open)-1]
			out[s.anchor] = s.text.String()
			open = open[:len(open)-1]
		}
	}
	var fence fences
	pending := ""
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, " \t\n")
		if !fence.step(line) {
			if m := explicitAnchor.FindStringSubmatch(line); m != nil {
				pending = m[1]
			} else if heading, ok := atxHeading(line); ok {
				level := headingLevel(line)
				closeTo(level)
				a := count.anchor(heading)
				if explicit {
					a = pending
				}
				open = append(open, &section{level: level, anchor: a})
				pending = ""
			}
		}
		for _, s := range open {
			s.text.WriteString(line + "\n")
		}
	}
	closeTo(1)
	return out, nil
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

var anchorLink = regexp.MustCompile(`\]\(((?:\d\d-[a-z0-9-]+\.md)?)#([^)\s]+)\)`)

// A lesson sends the student to a section, of its own (a question's
// answer further down) or of another lesson: the heading must be there.
func TestLessons_SectionLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	for _, file := range stageLessons() {
		have, err := headingAnchors(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		anchors[pathpkg.Base(file)] = have
	}
	for _, file := range stageLessons() {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range anchorLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if target == "" {
				target = pathpkg.Base(file)
			}
			if have, ok := anchors[target]; ok && !have[m[2]] {
				t.Errorf("%s links to %s#%s, which has no such heading", file, target, m[2])
			}
		}
	}
}

var (
	// namedWrong finds the wrong versions a lesson names: "the wrong
	// version `x`", "mutants `x`, `y` and `z`", "the `x` wrong version".
	namedWrong   = regexp.MustCompile("(?:wrong versions?|[Mm]utants?)((?:,? (?:and )?`[a-z0-9]+(?:-[a-z0-9]+)+`)+)|`([a-z0-9]+(?:-[a-z0-9]+)+)` wrong version")
	parenthesis  = regexp.MustCompile("\\(`([a-z0-9]+(?:-[a-z0-9]+)+)`[,)]")
	kebabInSpans = regexp.MustCompile("`([a-z0-9]+(?:-[a-z0-9]+)+)`")
)

// What a lesson says goes wrong must go wrong: every wrong version it
// names, and every name it puts in parentheses as the name of one, is a
// mutant of the ladder (which a check catches), or a lab fault point
// (`crash-after-commit`) that the sentence arms.
func TestLessons_WrongVersionsAreMutants(t *testing.T) {
	known := mutantsAndFaults(t)
	for _, file := range stageLessons() {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range wrongVersionsNamed(splitFences(string(text)).prose) {
			if !known[name] {
				t.Errorf("%s names the wrong version %q, which is no mutant in grader/ladder/mutants (nor a fault point)", file, name)
			}
		}
	}
}

// mutantsAndFaults returns the names a lesson may give a wrong version:
// the ladder's mutants and the lab's fault points.
func mutantsAndFaults(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, p := range labctl.Points {
		known[p] = true
	}
	paths, err := filepath.Glob(filepath.Join(repoRoot, "grader", "ladder", "mutants", "*", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no mutants found (%v)", err)
	}
	for _, p := range paths {
		known[strings.TrimSuffix(filepath.Base(p), ".txtar")] = true
	}
	return known
}

// A translation names the wrong versions its lesson names, and no other:
// a Japanese student reads of every pattern the English one is warned
// of, each a mutant that a check catches, and a name the translation
// adds or keeps after the English dropped it is a pattern no English
// sentence answers for. The names compared are the code spans of the
// prose that name a mutant or a fault point.
func TestLessonsJa_NameTheSameWrongVersions(t *testing.T) {
	known := mutantsAndFaults(t)
	named := func(path string) map[string]bool {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range kebabInSpans.FindAllStringSubmatch(splitFences(string(text)).prose, -1) {
			if known[m[1]] {
				names[m[1]] = true
			}
		}
		return names
	}
	for _, file := range stageLessons() {
		ja := pathpkg.Join(jaLessons, pathpkg.Base(file))
		en, tr := named(file), named(ja)
		for _, n := range slices.Sorted(maps.Keys(en)) {
			if !tr[n] {
				t.Errorf("%s names the wrong version %q, and %s does not", file, n, ja)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(tr)) {
			if !en[n] {
				t.Errorf("%s names the wrong version %q, and %s does not", ja, n, file)
			}
		}
	}
}

// wrongVersionsNamed returns the names of wrong versions a lesson's prose
// gives, in order.
func wrongVersionsNamed(prose string) []string {
	var names []string
	prose = strings.Join(strings.Fields(prose), " ")
	for _, m := range namedWrong.FindAllStringSubmatch(prose, -1) {
		for _, n := range kebabInSpans.FindAllStringSubmatch(m[1], -1) {
			names = append(names, n[1])
		}
		if m[2] != "" {
			names = append(names, m[2])
		}
	}
	for _, m := range parenthesis.FindAllStringSubmatch(prose, -1) {
		names = append(names, m[1])
	}
	return names
}

func TestWrongVersionsNamed(t *testing.T) {
	prose := "The mutants `lowercase-key`, `truncated-key` and\n`hand-unquoted-key` fail. That is the `read-then-write` wrong version; the wrong version `x-y`. " +
		"It arms a fault (`crash-after-commit`). A problem type `request-in-progress` is not a wrong version."
	want := []string{"lowercase-key", "truncated-key", "hand-unquoted-key", "read-then-write", "x-y", "crash-after-commit"}
	if got := wrongVersionsNamed(prose); !slices.Equal(got, want) {
		t.Errorf("wrongVersionsNamed = %q, want %q", got, want)
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
	heads, _, _, err := mdOutline(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	for _, h := range heads {
		anchors[h.anchor] = true
	}
	return anchors, nil
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

// bareLabCommands returns the code spans of a markdown text, outside its
// fenced blocks, that name a lab subcommand as a bare `lab …`.
func bareLabCommands(text string) []string {
	var prose strings.Builder
	var fence fences
	for line := range strings.Lines(text) {
		if !fence.step(strings.TrimRight(line, " \t\n")) {
			prose.WriteString(line)
		}
	}
	var bare []string
	for _, span := range codeSpan.FindAllString(prose.String(), -1) {
		words := strings.Fields(strings.Trim(span, "`"))
		if len(words) > 1 && words[0] == "lab" {
			bare = append(bare, span)
		}
	}
	return bare
}

// A command a lesson names for a person to run must run as printed on a
// fresh clone, where no lab is on the PATH: `go run ./cmd/lab …` (or a
// make target), in the English and the Japanese lessons alike.
func TestLessons_NoBareLabCommand(t *testing.T) {
	var paths []string
	for _, dir := range []string{"lessons", filepath.Join("lessons", "ja")} {
		found, err := filepath.Glob(filepath.Join(repoRoot, "docs", dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, found...)
	}
	if len(paths) < 20 {
		t.Fatalf("found %d lessons, want the English and the Japanese ones", len(paths))
	}
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range bareLabCommands(string(text)) {
			t.Errorf("%s: %s does not run on a fresh clone; write `go run ./cmd/lab …`", path, span)
		}
	}
}

func TestBareLabCommands(t *testing.T) {
	text := "Run `lab serve\n--replicas 2`, or `go run ./cmd/lab gen`; `lab` is the binary.\n" +
		"```\nlab audit: the output of a run\n```\nand `lab tally --student`.\n"
	got := bareLabCommands(text)
	want := []string{"`lab serve\n--replicas 2`", "`lab tally --student`"}
	if !slices.Equal(got, want) {
		t.Errorf("bare commands %q, want %q", got, want)
	}
}
