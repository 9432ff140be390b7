package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A scaffold's TODO says what must hold and sends the student to the
// lesson's section that weighs the ways, by its heading: lesson 06,
// "Taking over a lease". A heading renamed since leaves the student
// searching for a section that is not there. In each paragraph of a
// stage's comments and README, every quoted phrase after "lesson NN"
// that reads as a heading (it starts with a capital letter, and is no
// header's name) must be a heading of lesson NN.
func TestScaffolds_TheLessonSectionsTheyNameAreHeadings(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "stages", "stage*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no stage folder (%v)", err)
	}
	named := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(dir, "README.md"))
		for _, path := range files {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, repoRoot+string(filepath.Separator)))
			for _, p := range paragraphs(string(text), strings.HasSuffix(path, ".go")) {
				for _, ref := range sectionPointers(p) {
					named++
					if problem := pointerProblem(ref); problem != "" {
						t.Errorf("%s: %s", rel, problem)
					}
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no scaffold names a lesson's section: has the form (lesson 06, \"Leases\") changed?")
	}
}

// pointer is a lesson's section a scaffold names: the lesson's number
// and the quoted heading.
type pointer struct{ lesson, heading string }

var (
	lessonNumber = regexp.MustCompile(`\b[Ll]esson (\d\d)\b`)
	quoted       = regexp.MustCompile(`"([^"]+)"`)
	// headerNames are quoted in the scaffolds' comments, capitalized,
	// and are no headings.
	headerNames = []string{"Location", "ETag", "Content-Type", "If-Match", "Idempotency-Key", "Idempotent-Replayed", "Retry-After"}
)

// paragraphs splits a Go file's comments (goFile) or a README into
// paragraphs, each one string: a blank line (a bare // in a comment)
// ends one, as does code.
func paragraphs(text string, goFile bool) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if goFile {
			rest, ok := strings.CutPrefix(line, "//")
			if !ok {
				flush()
				continue
			}
			line = strings.TrimSpace(rest)
		}
		if line == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// sectionPointers are the headings paragraph p quotes after each
// "lesson NN" it names, up to the next one.
func sectionPointers(p string) []pointer {
	var out []pointer
	at := lessonNumber.FindAllStringSubmatchIndex(p, -1)
	for i, m := range at {
		end := len(p)
		if i+1 < len(at) {
			end = at[i+1][0]
		}
		for _, q := range quoted.FindAllStringSubmatch(p[m[1]:end], -1) {
			h := q[1]
			if h[0] < 'A' || h[0] > 'Z' || slices.Contains(headerNames, h) {
				continue
			}
			out = append(out, pointer{lesson: p[m[2]:m[3]], heading: h})
		}
	}
	return out
}

// pointerProblem says what is wrong with ref, or "".
func pointerProblem(ref pointer) string {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "lessons", ref.lesson+"-*.md"))
	if err != nil || len(files) != 1 {
		return fmt.Sprintf("lesson %s, named beside %q, is no one lesson file (%d found)", ref.lesson, ref.heading, len(files))
	}
	text, err := os.ReadFile(files[0])
	if err != nil {
		return err.Error()
	}
	var fence fences
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, " \t\n")
		if fence.step(line) {
			continue
		}
		if h, ok := atxHeading(line); ok && h == ref.heading {
			return ""
		}
	}
	return fmt.Sprintf("%q is no heading of %s", ref.heading, filepath.Base(files[0]))
}

// TestSectionPointers: the phrases quoted after a lesson's number are
// read as its headings, up to the next lesson named; header names and
// phrases in lower case are not.
func TestSectionPointers(t *testing.T) {
	p := `lesson 01, "The race", shows it, and the "Location" header; ("Fail closed"); "no such key"; lesson 06, "Leases"`
	got := sectionPointers(p)
	want := []pointer{{"01", "The race"}, {"01", "Fail closed"}, {"06", "Leases"}}
	if !slices.Equal(got, want) {
		t.Errorf("sectionPointers = %v, want %v", got, want)
	}
	if problem := pointerProblem(pointer{"06", "Leases"}); problem != "" {
		t.Errorf("a heading of lesson 06: %s", problem)
	}
	if problem := pointerProblem(pointer{"06", "Leasing"}); problem == "" {
		t.Error("a heading lesson 06 does not have passed")
	}
}
