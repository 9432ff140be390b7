package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"idemlab/studentloop"
)

// maxShown is the share of a stage's lines to write that its lesson, its
// README and its scaffold's comments may hold verbatim. A few short lines
// (a problem type's name, a column list the kit requires) are fair; a
// statement the student could paste is the answer handed over.
const maxShown = 0.10

// A lesson teaches the idea and the decisions; the code that implements
// them is the student's to write, and lives only in solutions/ and in
// the last step of lab hint. For each stage, the lines the student must
// write are the solution's lines that the scaffold does not have
// (comments, blank lines and short lines left out); the test fails when
// more than maxShown of them stand, whitespace aside, in the code
// (fenced blocks and code spans) of the lesson, English or Japanese, of
// the stage's README or of its hint file in docs/hints (the steps before
// the last, whose code lies beside the solution), or in the scaffold's
// comments.
func TestLessons_HoldNoSolutionCode(t *testing.T) {
	files := stageLessons()
	for _, stage := range slices.Sorted(maps.Keys(files)) {
		m, err := measureShown(repoRoot, stage, files[stage])
		if err != nil {
			t.Errorf("stage %d: %v", stage, err)
			continue
		}
		t.Logf("stage %d: %3d lines to write, %3d shown (%4.1f%%)", stage, m.toWrite, len(m.shown), 100*m.share())
		if m.share() > maxShown {
			t.Errorf("stage %d: %d of the %d lines a student writes (%.0f%%, more than %.0f%%) stand in %s, its Japanese, stages/stage%d's README or its comments, or %s:\n\t%s",
				stage, len(m.shown), m.toWrite, 100*m.share(), 100*maxShown, files[stage], stage, studentloop.HintsPath(stage), strings.Join(m.shown, "\n\t"))
		}
	}
}

// TestMeasureShown_CatchesAPastedStatement builds a stage whose solution
// adds three lines to write and a lesson (English or Japanese) or a hint
// step that shows one of them, then the same texts with the line only
// described in words, or shown in the hint's last step, beside the
// solution, where code belongs.
func TestMeasureShown_CatchesAPastedStatement(t *testing.T) {
	root := t.TempDir()
	write := writerUnder(t, root)
	write("stages/stage1/a.go", "package stage1\n\n// TODO(stage 1): claim the key.\nfunc f() error {\n\treturn nil\n}\n")
	write("stages/stage1/README.md", "# Stage 1\n")
	write("solutions/stage1/a.go", "package stage1\n\nfunc f() error {\n\t// a comment is not code to write\n\t_, err := db.Exec(`INSERT INTO idempotency_keys (key)\n\t\tVALUES (?) RETURNING id`, key)\n\tif isUnique(err) {\n\t}\n\treturn nil\n}\n")
	const words = "# L\n\nInsert the key; a unique violation means another request has it.\n"
	type hintFiles struct{ words, code string }
	hints := func(step2, step4 string) hintFiles {
		return hintFiles{
			"# Stage 1 hints\n\n## stage\n1. The idea.\n2. " + step2 + "\n3. The decisions.\n",
			"# Stage 1 hints: the code\n\n## stage\n4. The code:\n\n   ```go\n   " + step4 + "\n   ```\n",
		}
	}
	tests := []struct {
		name, lesson, ja string
		hints            hintFiles
		shown            int
	}{
		{"a statement in a go block", "# L\n\n```go\n_, err :=   db.Exec(`INSERT INTO idempotency_keys (key)\n```\n", words, hints("In keys.go.", "return nil"), 1},
		{"a statement in a code span", "# L\n\nThen `if isUnique(err) {` tells.\n", words, hints("In keys.go.", "return nil"), 1},
		{"a statement in the Japanese lesson", words, "# L\n\n次に `if isUnique(err) {` で判断します。\n", hints("In keys.go.", "return nil"), 1},
		{"a statement in a hint step before the last", words, words, hints("In keys.go: `if isUnique(err) {`.", "return nil"), 1},
		{"a statement in the hint's last step", words, words, hints("In keys.go.", "if isUnique(err) {"), 0},
		{"words only", words, words, hints("In keys.go.", "return nil"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write("docs/lessons/01-claim.md", tc.lesson)
			write("docs/lessons/ja/01-claim.md", tc.ja)
			write(filepath.ToSlash(studentloop.HintsPath(1)), tc.hints.words)
			write(filepath.ToSlash(studentloop.HintCodePath(1)), tc.hints.code)
			m, err := measureShown(root, 1, "docs/lessons/01-claim.md")
			if err != nil {
				t.Fatal(err)
			}
			if m.toWrite != 3 || len(m.shown) != tc.shown {
				t.Errorf("%d lines to write, %d shown %q; want 3 and %d", m.toWrite, len(m.shown), m.shown, tc.shown)
			}
		})
	}
}

// shownMeasure is how much of a stage's code to write its texts show.
type shownMeasure struct {
	toWrite int
	shown   []string
}

func (m shownMeasure) share() float64 {
	if m.toWrite == 0 {
		return 0
	}
	return float64(len(m.shown)) / float64(m.toWrite)
}

// minLine is the length under which a normalised line is too short to
// hand anything over (`}`, `return err`).
const minLine = 12

// measureShown compares solutions/stageN with stages/stageN under root
// and looks for the lines to write in the lesson and its Japanese
// translation, the README, the scaffold's comments and the stage's hint
// file in docs/hints, the steps before the last (all of it: a student
// may open the file and read it whole).
func measureShown(root string, stage int, lesson string) (shownMeasure, error) {
	scaffoldDir := filepath.Join(root, "stages", fmt.Sprintf("stage%d", stage))
	code, comments, err := goLines(scaffoldDir)
	if err != nil {
		return shownMeasure{}, err
	}
	solution, _, err := goLines(filepath.Join(root, "solutions", fmt.Sprintf("stage%d", stage)))
	if err != nil {
		return shownMeasure{}, err
	}
	have := map[string]bool{}
	for _, l := range code {
		have[l] = true
	}
	var toWrite []string
	for _, l := range solution {
		if !have[l] && len(l) >= minLine && strings.IndexFunc(l, unicode.IsLetter) >= 0 && !slices.Contains(toWrite, l) {
			toWrite = append(toWrite, l)
		}
	}
	texts := comments
	mds, err := stageTexts(root, stage, lesson)
	if err != nil {
		return shownMeasure{}, err
	}
	for _, md := range mds {
		texts = append(texts, markdownCode(md)...)
	}
	m := shownMeasure{toWrite: len(toWrite)}
	for _, l := range toWrite {
		for _, text := range texts {
			if strings.Contains(text, l) {
				m.shown = append(m.shown, l)
				break
			}
		}
	}
	return m, nil
}

// stageTexts returns what a student of stage N reads before the answer:
// the lesson, its Japanese translation, the scaffold's README and the
// stage's hint file in docs/hints, the steps before the last (all of it:
// a student may open the file and read it whole).
func stageTexts(root string, stage int, lesson string) ([]string, error) {
	dir, name := pathpkg.Split(lesson)
	var texts []string
	for _, path := range []string{filepath.Join(root, filepath.FromSlash(lesson)), filepath.Join(root, filepath.FromSlash(dir), "ja", name),
		filepath.Join(root, "stages", fmt.Sprintf("stage%d", stage), "README.md"), filepath.Join(root, studentloop.HintsPath(stage))} {
		md, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		texts = append(texts, string(md))
	}
	return texts, nil
}

// writerUnder returns a function that writes a file at a slash path
// under root, making its directories.
func writerUnder(t *testing.T, root string) func(path, text string) {
	return func(path, text string) {
		t.Helper()
		path = filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goLines returns the normalised code lines of a package's non-test Go
// files (comment lines and blank lines left out) and its comments, each
// comment normalised to one line, so that a statement wrapped in a
// comment's prose is found whole.
func goLines(dir string) (code, comments []string, err error) {
	err = eachGoFile(dir, func(src []byte, f *ast.File) {
		for _, cg := range f.Comments {
			comments = append(comments, normaliseLine(cg.Text()))
		}
		for line := range strings.Lines(string(src)) {
			if l := normaliseLine(line); l != "" && !strings.HasPrefix(l, "//") {
				code = append(code, l)
			}
		}
	})
	return code, comments, err
}

// eachGoFile parses each non-test Go file of dir, comments included, and
// hands it to do with its source.
func eachGoFile(dir string, do func(src []byte, f *ast.File)) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("%s: no Go files (%v)", dir, err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		do(src, f)
	}
	return nil
}

var codeSpan = regexp.MustCompile("`+[^`]+`+")

// markdownCode returns a markdown text's fenced blocks and its code
// spans, each normalised to one line.
func markdownCode(md string) []string {
	var out []string
	parts := splitFences(md)
	for _, b := range parts.blocks {
		out = append(out, normaliseLine(b.text))
	}
	for _, span := range codeSpan.FindAllString(parts.prose, -1) {
		out = append(out, normaliseLine(span))
	}
	return out
}

// normaliseLine collapses white space (line breaks included) and drops
// what joins a line to its neighbours (backticks, commas, semicolons at
// either end), so that a SQL line inside a Go string and the same line
// in a comment compare equal.
func normaliseLine(line string) string {
	return strings.Trim(strings.Join(strings.Fields(line), " "), "`,; ")
}
