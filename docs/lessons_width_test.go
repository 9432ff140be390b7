package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxLessonColumns is how wide a line of an English lesson's prose may be.
const maxLessonColumns = 100

// longProseLines returns the numbers of the lines of a markdown text wider
// than maxLessonColumns, outside fenced blocks (a FAIL report, a command,
// SQL: printed as the tool prints them) and tables (one row a line).
func longProseLines(text string) []int {
	var long []int
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if closes(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if fence = fenceOf(trimmed); fence != "" || strings.HasPrefix(trimmed, "|") {
			continue
		}
		if utf8.RuneCountInString(line) > maxLessonColumns {
			long = append(long, i+1)
		}
	}
	return long
}

// The English lessons wrap their prose at 100 columns, to be read in a
// terminal (make docs), an editor and a diff alike. The Japanese ones keep
// a paragraph on one line: a line break inside Japanese text is rendered
// as a space (by GitHub, by make docs), which Japanese does not put
// between its words.
func TestLessons_ProseFitsInOneHundredColumns(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "lessons", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 10 {
		t.Fatalf("found %d lessons, want the ten English ones", len(paths))
	}
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if long := longProseLines(string(text)); len(long) > 0 {
			t.Errorf("%s: lines %v are wider than %d columns: wrap them", filepath.Base(path), long, maxLessonColumns)
		}
	}
}

func TestLongProseLines(t *testing.T) {
	wide := strings.Repeat("word ", 21)
	text := strings.Join([]string{
		"# A lesson",
		"short prose",
		wide,
		"```",
		wide,
		"```",
		"  ~~~~",
		"  " + wide,
		"  ~~~~",
		"| a | table |",
		"| " + wide + " |",
		"  - " + wide,
	}, "\n")
	got := longProseLines(text)
	if want := []int{3, 12}; !slices.Equal(got, want) {
		t.Errorf("long lines %v, want %v (prose and a list item; not a fenced block or a table)", got, want)
	}
}
