package docs_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"idemlab/studentloop"
)

// sqlRun is the number of SQL tokens in a row that hand a statement
// over: `WHERE state = 'completed' AND completed_at <= ?` is ten, a
// column list of the kit's table or `WHERE id = ?` is fewer, or holds no
// condition.
const sqlRun = 7

// The code measure of TestLessons_HoldNoSolutionCode compares whole
// lines of code spans and blocks; a statement the solution adds can
// still be handed over a clause at a time, in prose, wrapped over two
// lines, or inside a wrong version that carries the right condition.
// Every run of sqlRun tokens of the SQL the solution adds over the
// scaffold that holds a condition or an assignment must stand nowhere in
// the stage's lesson (English or Japanese, prose included), its README,
// its scaffold's comments, or its hint file's steps before the last. The
// last step, beside the solution, is where the statement belongs.
func TestLessons_HoldNoSolutionSQL(t *testing.T) {
	files := stageLessons()
	for _, stage := range slices.Sorted(maps.Keys(files)) {
		runs, shown, err := sqlShown(repoRoot, stage, files[stage])
		if err != nil {
			t.Errorf("stage %d: %v", stage, err)
			continue
		}
		t.Logf("stage %d: %3d runs of SQL to write, %d shown", stage, runs, len(shown))
		if len(shown) > 0 {
			t.Errorf("stage %d: the SQL of solutions/stage%d stands in %s, its Japanese, stages/stage%d's README or its comments, or %s: describe the condition in words (what must hold, why), and leave the statement to the hint's last step:\n\t%s",
				stage, stage, files[stage], stage, studentloop.HintsPath(stage), strings.Join(shown, "\n\t"))
		}
	}
}

func TestSQLShown_CatchesAClauseInProse(t *testing.T) {
	root := t.TempDir()
	write := writerUnder(t, root)
	write("stages/stage5/a.go", "package stage5\n\n// TODO(stage 5): purge what is past the retention.\nfunc purge() error {\n\t_, err := db.Exec(`SELECT id FROM idempotency_keys WHERE id = ?`, id)\n\treturn err\n}\n")
	write("stages/stage5/README.md", "# Stage 5\n")
	write("solutions/stage5/a.go", "package stage5\n\nfunc purge() error {\n\t_, err := db.Exec(`SELECT id FROM idempotency_keys WHERE id = ?`, id)\n\t_, err = db.Exec(`DELETE FROM idempotency_keys\n\t\tWHERE state = 'completed' AND completed_at <= ?`, cutoff)\n\treturn err\n}\n")
	write(filepath.ToSlash(studentloop.HintCodePath(5)), "# Stage 5 hints: the code\n\n## stage\n4. `DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`\n")
	const words = "# L\n\nDelete the completed keys whose retention is over, and nothing else.\n"
	const hint = "# Stage 5 hints\n\n## stage\n1. The idea.\n2. Where.\n3. An outline.\n"
	tests := []struct {
		name, lesson, ja, hints string
		shown                   bool
	}{
		{"the condition in prose, wrapped", "# L\n\nA wrong version, `DELETE … WHERE id IN (SELECT id … WHERE state =\n'completed' AND completed_at <= ?)`, reads a snapshot.\n", words, hint, true},
		{"the condition in the Japanese lesson", words, "# L\n\n`WHERE state = 'completed' AND completed_at <= ?` で削除します。\n", hint, true},
		{"the condition in a hint step before the last", words, words, "# Stage 5 hints\n\n## stage\n1. The idea.\n2. Where.\n3. Write WHERE state = 'completed' AND completed_at <= ?.\n", true},
		{"the scaffold's own statement", "# L\n\nThe scaffold reads `SELECT id FROM idempotency_keys WHERE id = ?`.\n", words, hint, false},
		{"the condition in words", "# L\n\nA wrong version, `DELETE … WHERE id IN (SELECT id … <completed, past the retention>)`, reads a snapshot.\n", words, hint, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write("docs/lessons/05-scope.md", tc.lesson)
			write("docs/lessons/ja/05-scope.md", tc.ja)
			write(filepath.ToSlash(studentloop.HintsPath(5)), tc.hints)
			runs, shown, err := sqlShown(root, 5, "docs/lessons/05-scope.md")
			if err != nil {
				t.Fatal(err)
			}
			if runs == 0 || (len(shown) > 0) != tc.shown {
				t.Errorf("%d runs to write, shown %q; want some, and shown: %v", runs, shown, tc.shown)
			}
		})
	}
}

var (
	sqlToken = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|\d+|<=|>=|<>|!=|\|\||\S`)
	// sqlStatement tells a string literal that is SQL from one that is a
	// message: a verb and a place it acts on.
	sqlVerb  = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|CREATE|WITH)\b`)
	sqlPlace = regexp.MustCompile(`\b(FROM|INTO|SET|TABLE|INDEX|WHERE)\b`)
	// A run hands something over when it says what must hold or what is
	// written, not when it only lists columns.
	sqlDecides = regexp.MustCompile(`^(=|<|>|<=|>=|<>|!=|\+|-|IN|IS|AND|OR|NOT|SET|WHERE|RETURNING|CONFLICT|NOTHING|LIMIT|SKIP|LOCKED)$`)
)

// sqlShown returns how many runs of sqlRun tokens the SQL string
// literals of solutions/stageN add over those of stages/stageN, and the
// runs that stand in the stage's texts.
func sqlShown(root string, stage int, lesson string) (runs int, shown []string, err error) {
	scaffoldDir := filepath.Join(root, "stages", fmt.Sprintf("stage%d", stage))
	have := map[string]bool{}
	scaffoldSQL, comments, err := goSQL(scaffoldDir)
	if err != nil {
		return 0, nil, err
	}
	for _, s := range scaffoldSQL {
		for _, r := range tokenRuns(sqlToken.FindAllString(s, -1), sqlRun) {
			have[r] = true
		}
	}
	solutionSQL, _, err := goSQL(filepath.Join(root, "solutions", fmt.Sprintf("stage%d", stage)))
	if err != nil {
		return 0, nil, err
	}
	var toWrite []string
	for _, s := range solutionSQL {
		for _, r := range tokenRuns(sqlToken.FindAllString(s, -1), sqlRun) {
			if !have[r] && !slices.Contains(toWrite, r) && decides(r) {
				toWrite = append(toWrite, r)
			}
		}
	}
	text := map[string]bool{}
	texts, err := stageTexts(root, stage, lesson)
	if err != nil {
		return 0, nil, err
	}
	texts = append(texts, strings.Join(comments, "\n"))
	for _, t := range texts {
		for _, r := range tokenRuns(sqlToken.FindAllString(strings.ReplaceAll(t, "`", " "), -1), sqlRun) {
			text[r] = true
		}
	}
	for _, r := range toWrite {
		if text[r] {
			shown = append(shown, r)
		}
	}
	return len(toWrite), shown, nil
}

func decides(run string) bool {
	for _, tok := range strings.Fields(run) {
		if sqlDecides.MatchString(strings.ToUpper(tok)) {
			return true
		}
	}
	return false
}

// tokenRuns returns every run of n tokens in a row, joined by spaces.
func tokenRuns(toks []string, n int) []string {
	var runs []string
	for i := 0; i+n <= len(toks); i++ {
		runs = append(runs, strings.Join(toks[i:i+n], " "))
	}
	return runs
}

// goSQL returns the SQL string literals of a package's non-test Go files
// and its comments.
func goSQL(dir string) (sql, comments []string, err error) {
	err = eachGoFile(dir, func(_ []byte, f *ast.File) {
		for _, cg := range f.Comments {
			comments = append(comments, cg.Text())
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && sqlVerb.MatchString(s) && sqlPlace.MatchString(s) {
				sql = append(sql, s)
			}
			return true
		})
	})
	return sql, comments, err
}
