package studentloop

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff returns a unified diff from the reference solution of stage n to
// the student's stage, one file after another ("" where they agree): the
// lines marked + are the student's, those marked - the reference's. The
// stage's test file and README are left out, being the same by design.
func Diff(root string, n int) (string, error) {
	names := map[string]bool{}
	for _, dir := range []string{SolutionDir(n), StageDir(n)} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				names[e.Name()] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)
	var out strings.Builder
	for _, name := range sorted {
		ref := filepath.Join(SolutionDir(n), name)
		mine := filepath.Join(StageDir(n), name)
		d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: lines(root, ref), B: lines(root, mine),
			FromFile: ref + " (reference)", ToFile: mine + " (yours)", Context: 3,
		})
		if err != nil {
			return "", err
		}
		out.WriteString(d)
	}
	return out.String(), nil
}

// lines reads a file as lines, each with its newline; a missing file is
// an empty one, so that a file only one side has shows whole.
func lines(root, path string) []string {
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil
	}
	return difflib.SplitLines(string(raw))
}
