package docs_test

import (
	"fmt"
	"go/ast"
	"go/scanner"
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
// condition. goRun is the same for Go code, its string literals left
// out: `if labdb.IsUniqueViolation(err) {` is eight and names three
// things; the kit's `s.env.Config().Retention` names one.
const (
	sqlRun = 7
	goRun  = 8
)

// The code measure of TestLessons_HoldNoSolutionCode compares whole
// lines of code spans and blocks; a statement the solution adds can
// still be handed over a clause at a time, in prose, wrapped over two
// lines, or inside a wrong version that carries the right condition.
// Every run of sqlRun tokens of the SQL the solution adds over the
// scaffold that holds a condition or an assignment, and every run of
// goRun tokens of its Go code that names at least three things, must
// stand nowhere in the stage's lesson (English or Japanese, prose
// included), its README, its scaffold's comments, or its hint file's
// steps before the last. The last step, beside the solution, is where
// the statement belongs.
func TestLessons_HoldNoRunOfTheSolution(t *testing.T) {
	files := stageLessons()
	for _, stage := range slices.Sorted(maps.Keys(files)) {
		runs, shown, err := runsShown(repoRoot, stage, files[stage])
		if err != nil {
			t.Errorf("stage %d: %v", stage, err)
			continue
		}
		t.Logf("stage %d: %3d runs of SQL and Go to write, %d shown", stage, runs, len(shown))
		if len(shown) > 0 {
			t.Errorf("stage %d: the SQL or Go of solutions/stage%d stands in %s, its Japanese, stages/stage%d's README or its comments, or %s: describe the decision in words (what must hold, why), and leave the statement to the hint's last step:\n\t%s",
				stage, stage, files[stage], stage, studentloop.HintsPath(stage), strings.Join(shown, "\n\t"))
		}
	}
}

// TestRunsShown_CatchesAPieceInProse builds a stage whose solution adds
// a purge's condition in SQL and one in Go over its scaffold, and texts
// that show a piece of either, in prose or in code, wrapped or not; then
// texts that name only the scaffold's statement, the kit's accessor and
// a message, or say the condition in words.
func TestRunsShown_CatchesAPieceInProse(t *testing.T) {
	root := t.TempDir()
	write := writerUnder(t, root)
	write("stages/stage5/a.go", "package stage5\n\n// TODO(stage 5): purge what is past the retention.\nfunc purge() error {\n\t_, err := db.Exec(`SELECT id FROM idempotency_keys WHERE id = ?`, id)\n\treturn err\n}\n")
	write("stages/stage5/README.md", "# Stage 5\n")
	write("solutions/stage5/a.go", "package stage5\n\nfunc purge() error {\n\t_, err := db.Exec(`SELECT id FROM idempotency_keys WHERE id = ?`, id)\n\t_, err = db.Exec(`DELETE FROM idempotency_keys\n\t\tWHERE state = 'completed' AND completed_at <= ?`, cutoff)\n\tif labdb.IsBusy(err) && s.env.Config().Retention > 0 {\n\t\treturn errors.New(\"the purge waited on the claim\")\n\t}\n\treturn err\n}\n")
	write(filepath.ToSlash(studentloop.HintCodePath(5)), "# Stage 5 hints: the code\n\n## stage\n4. `DELETE FROM idempotency_keys WHERE state = 'completed' AND completed_at <= ?`\n")
	const words = "# L\n\nDelete the completed keys whose retention is over, and nothing else.\n"
	const hint = "# Stage 5 hints\n\n## stage\n1. The idea.\n2. Where.\n3. The decisions.\n"
	tests := []struct {
		name, lesson, ja, hints string
		shown                   bool
	}{
		{"the condition in prose, wrapped", "# L\n\nA wrong version, `DELETE … WHERE id IN (SELECT id … WHERE state =\n'completed' AND completed_at <= ?)`, reads a snapshot.\n", words, hint, true},
		{"the condition in the Japanese lesson", words, "# L\n\n`WHERE state = 'completed' AND completed_at <= ?` で削除します。\n", hint, true},
		{"the condition in a hint step before the last", words, words, "# Stage 5 hints\n\n## stage\n1. The idea.\n2. Where.\n3. Write WHERE state = 'completed' AND completed_at <= ?.\n", true},
		{"a Go condition in a code span", "# L\n\nThen `if labdb.IsBusy(err) && s.env.Config().Retention` tells.\n", words, hint, true},
		{"a Go condition wrapped in prose", words, "# L\n\nif labdb.IsBusy(err) &&\ns.env.Config() で判断します。\n", hint, true},
		{"the kit's accessor and a message", "# L\n\nThe retention is `s.env.Config().Retention`; the purge says \"the purge waited on the claim\".\n", words, hint, false},
		{"the scaffold's own statement", "# L\n\nThe scaffold reads `SELECT id FROM idempotency_keys WHERE id = ?`.\n", words, hint, false},
		{"the condition in words", "# L\n\nA wrong version, `DELETE … WHERE id IN (SELECT id … <completed, past the retention>)`, reads a snapshot.\n", words, hint, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write("docs/lessons/05-scope.md", tc.lesson)
			write("docs/lessons/ja/05-scope.md", tc.ja)
			write(filepath.ToSlash(studentloop.HintsPath(5)), tc.hints)
			runs, shown, err := runsShown(root, 5, "docs/lessons/05-scope.md")
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
	// goToken is a token of Go code as the scanner reads it, and goName
	// a token that names something.
	goToken    = regexp.MustCompile(`[\p{L}_][\p{L}\p{N}_]*|\d+|:=|==|!=|<=|>=|&&|\|\||<-|\.\.\.|\+\+|--|<<|>>|[-+*/%&|^]=|\S`)
	goName     = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)
	sqlDecides = regexp.MustCompile(`^(=|<|>|<=|>=|<>|!=|\+|-|IN|IS|AND|OR|NOT|SET|WHERE|RETURNING|CONFLICT|NOTHING|LIMIT|SKIP|LOCKED)$`)
)

// runsShown returns how many runs of sqlRun tokens the SQL string
// literals of solutions/stageN add over those of stages/stageN, and of
// goRun tokens its Go code adds, and the runs that stand in the stage's
// texts.
func runsShown(root string, stage int, lesson string) (runs int, shown []string, err error) {
	scaffold, err := readCode(filepath.Join(root, "stages", fmt.Sprintf("stage%d", stage)))
	if err != nil {
		return 0, nil, err
	}
	solution, err := readCode(filepath.Join(root, "solutions", fmt.Sprintf("stage%d", stage)))
	if err != nil {
		return 0, nil, err
	}
	have := map[string]bool{}
	for _, r := range scaffold.runs() {
		have[r] = true
	}
	var toWrite []string
	for _, r := range solution.runs() {
		if !have[r] && !slices.Contains(toWrite, r) {
			toWrite = append(toWrite, r)
		}
	}
	texts, err := stageTexts(root, stage, lesson)
	if err != nil {
		return 0, nil, err
	}
	text := map[string]bool{}
	for _, t := range append(texts, strings.Join(scaffold.comments, "\n")) {
		t = strings.ReplaceAll(t, "`", " ")
		for _, r := range tokenRuns(sqlToken.FindAllString(t, -1), sqlRun) {
			text[r] = true
		}
		for _, r := range tokenRuns(textTokens(t), goRun) {
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

// code is what a package's non-test Go files hold: their SQL string
// literals, the tokens of each file (each string literal one token no
// text holds), and their comments.
type code struct {
	sql, comments []string
	goTokens      [][]string
}

// runs returns the runs of SQL that decide something and the runs of Go
// code that name at least three things (a selector, s.env.Config, is one).
func (c code) runs() []string {
	var runs []string
	for _, s := range c.sql {
		for _, r := range tokenRuns(sqlToken.FindAllString(s, -1), sqlRun) {
			if decides(r) {
				runs = append(runs, r)
			}
		}
	}
	for _, toks := range c.goTokens {
		for _, r := range tokenRuns(toks, goRun) {
			if names(r) >= 3 && !strings.Contains(r, noText) {
				runs = append(runs, r)
			}
		}
	}
	return runs
}

// names counts the names of a run of Go tokens, a selector's as one.
func names(run string) int {
	n, prev := 0, ""
	for _, tok := range strings.Fields(run) {
		if goName.MatchString(tok) && prev != "." {
			n++
		}
		prev = tok
	}
	return n
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

// noText stands in the Go tokens for a string or character literal:
// a message is no code to write, and the SQL inside is compared apart.
const noText = "\x00"

// textTokens splits a text as Go's scanner splits code, for the
// operators and names code spans and prose can hold, semicolons left
// out as the scanner's inserted ones are.
func textTokens(text string) []string {
	var toks []string
	for _, tok := range goToken.FindAllString(text, -1) {
		if tok != ";" {
			toks = append(toks, tok)
		}
	}
	return toks
}

// readCode reads the non-test Go files of dir.
func readCode(dir string) (code, error) {
	var c code
	err := eachGoFile(dir, func(src []byte, f *ast.File) {
		for _, cg := range f.Comments {
			c.comments = append(c.comments, cg.Text())
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && sqlVerb.MatchString(s) && sqlPlace.MatchString(s) {
				c.sql = append(c.sql, s)
			}
			return true
		})
		var s scanner.Scanner
		s.Init(token.NewFileSet().AddFile("", -1, len(src)), src, nil, 0)
		var toks []string
		for {
			_, tok, lit := s.Scan()
			switch {
			case tok == token.EOF:
				c.goTokens = append(c.goTokens, toks)
				return
			case tok == token.SEMICOLON:
			case tok == token.STRING || tok == token.CHAR:
				toks = append(toks, noText)
			case lit != "":
				toks = append(toks, lit)
			default:
				toks = append(toks, tok.String())
			}
		}
	})
	return c, err
}
