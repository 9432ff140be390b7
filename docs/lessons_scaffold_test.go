package docs_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"idemlab/grader"
)

// A lesson's Go excerpts are code the student is about to type into the
// stage's scaffold. An excerpt that calls a helper the scaffold does not
// have (a function of a later stage, one renamed since) sends them looking
// for something that is not there. Every function called and every name
// selected in a ```go block must be declared in the stage's scaffold
// (stages/stageN), named in one of its TODO(stage N) comments as a
// function to write, declared in the excerpt itself, exported by a kit
// package or the standard library, or predeclared.
func TestLessons_CodeNamesWhatTheScaffoldHas(t *testing.T) {
	files := stageLessons()
	for _, stage := range slices.Sorted(maps.Keys(files)) {
		text, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(files[stage])))
		if err != nil {
			t.Errorf("read lesson: %v", err)
			continue
		}
		missing, err := undeclared(stage, string(text))
		if err != nil {
			t.Errorf("%s: %v", files[stage], err)
		}
		for _, m := range missing {
			t.Errorf("%s names %s, which stages/stage%d does not declare (nor its TODOs, the kit or the standard library)", files[stage], m, stage)
		}
	}
}

// stageLessons maps each stage to the lesson file its checks name.
func stageLessons() map[int]string {
	files := map[int]string{}
	for _, c := range grader.Catalogue() {
		file, _, _ := strings.Cut(c.Lesson, "#")
		files[c.Stage] = file
	}
	return files
}

func TestUndeclared(t *testing.T) {
	tests := []struct {
		name   string
		stage  int
		lesson string
		want   []string
	}{
		{"a helper the scaffold has", 2, "```go\nreturn problem.New(problem.DuplicateRequest, \"%q\", key)\n```\n", nil},
		{"a helper of a later stage", 2, "```go\nif err != nil {\n\treturn unavailable(err)\n}\n```\n", []string{"unavailable("}},
		{"a method of a later stage", 3, "```go\nbody, location, err := s.execute(ctx, id, op)\n```\n", []string{".execute"}},
		{"a function the TODO asks for", 3, "```go\nrelease(context.WithoutCancel(ctx), s.env.DB, id)\n```\n", nil},
		{"declared in the excerpt", 4, "```go\nfunc (res reply) send(w http.ResponseWriter) { w.Write(res.body) }\ntype reply struct{ body []byte }\n```\n", nil},
		{"a kit name that does not exist", 1, "```go\nk, err := idemkey.FromBody(r)\n```\n", []string{"idemkey.FromBody"}},
		{"a standard library name", 2, "```go\nsum := sha256.Sum256(canon)\nreturn hex.EncodeToString(sum[:]), nil\n```\n", nil},
		{"a case clause on its own", 3, "```go\ncase state == \"in_progress\":\n\treturn 0, &problem.Error{Type: problem.RequestInProgress, RetryAfter: retryAfter}\n```\n", nil},
		{"other languages are not Go", 2, "```sql\nSELECT unavailable(x)\n```\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := undeclared(tc.stage, tc.lesson)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("undeclared = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUndeclared_ExcerptMustParse: an excerpt the test cannot read is an
// excerpt it cannot hold to the scaffold, so it is an error, not a pass.
func TestUndeclared_ExcerptMustParse(t *testing.T) {
	if _, err := undeclared(3, "```go\n\t\t WHERE id = ? AND state = 'in_progress'`,\n\tid)\n```\n"); err == nil {
		t.Error("a fragment of a SQL string in a go block parsed; want an error that says it is not Go")
	}
}

// undeclared returns what the ```go blocks of lesson name that stage's
// scaffold does not provide: "name(" for a call, ".name" for a selected
// field or method, "pkg.Name" for a package member. It returns an error
// for a block that is not Go (a file, declarations, statements or case
// clauses).
func undeclared(stage int, lesson string) ([]string, error) {
	dir := filepath.Join(repoRoot, "stages", fmt.Sprintf("stage%d", stage))
	sc, err := readScaffold(dir, stage)
	if err != nil {
		return nil, err
	}
	var missing []string
	note := func(s string) {
		if !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	// A name one excerpt declares (a struct the lesson shows) is one the
	// lesson asks the student to write, and a later excerpt may use it.
	var excerpts []*ast.File
	local := map[string]bool{}
	for i, block := range goBlocks(lesson) {
		f, err := parseExcerpt(block)
		if err != nil {
			return nil, fmt.Errorf("go block %d is not Go: %v", i+1, err)
		}
		excerpts = append(excerpts, f)
		maps.Copy(local, declaredIn(f))
	}
	for _, f := range excerpts {
		known := func(name string) bool {
			return local[name] || sc.declared[name] || sc.todo[name] || types.Universe.Lookup(name) != nil
		}
		var err2 error
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && !known(id.Name) {
					note(id.Name + "(")
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && !known(id.Name) {
					note(id.Name + "{")
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && !local[id.Name] && !sc.declared[id.Name] {
					if paths := sc.packagePaths(id.Name); paths != nil {
						ok, err := sc.declares(paths, n.Sel.Name, false)
						if err != nil {
							err2 = err
						} else if !ok {
							note(id.Name + "." + n.Sel.Name)
						}
						return true
					}
				}
				name := n.Sel.Name
				switch {
				case known(name):
				case ast.IsExported(name):
					ok, err := sc.member(name)
					if err != nil {
						err2 = err
					} else if !ok {
						note("." + name)
					}
				default:
					note("." + name)
				}
			}
			return true
		})
		if err2 != nil {
			return missing, err2
		}
	}
	return missing, nil
}

// goBlocks returns the text of each ```go fenced block of a markdown text.
func goBlocks(md string) []string {
	var blocks []string
	for _, b := range splitFences(md).blocks {
		if b.info == "go" {
			blocks = append(blocks, b.text)
		}
	}
	return blocks
}

// fenced is a fenced block of a markdown text: its info string (the
// language) and its lines, fences left out.
type fenced struct{ info, text string }

// markdownParts is a markdown text split into its fenced blocks and the
// prose around them.
type markdownParts struct {
	blocks []fenced
	prose  string
}

// splitFences splits a markdown text into its fenced blocks (``` or ~~~)
// and the rest. A block left open at the end is not a block.
func splitFences(md string) markdownParts {
	var parts markdownParts
	var prose, cur strings.Builder
	fence, info := "", ""
	for line := range strings.Lines(md) {
		trimmed := strings.TrimSpace(line)
		if f := fenceOf(trimmed); f != "" {
			switch {
			case fence == "":
				fence, info = f, strings.TrimSpace(strings.TrimLeft(trimmed, f[:1]))
			case closes(trimmed, fence):
				parts.blocks = append(parts.blocks, fenced{info, cur.String()})
				fence = ""
				cur.Reset()
			}
			continue
		}
		if fence != "" {
			cur.WriteString(line)
		} else {
			prose.WriteString(line)
		}
	}
	parts.prose = prose.String()
	return parts
}

// parseExcerpt parses a lesson's excerpt as what it is: a file's
// declarations, a function's statements, a switch's case clauses or a
// struct's fields.
func parseExcerpt(code string) (*ast.File, error) {
	var first error
	for _, wrap := range []struct{ before, after string }{
		{"package p\n", ""},
		{"package p\nfunc _() {\n", "\n}"},
		{"package p\nfunc _() {\nswitch {\n", "\n}\n}"},
		{"package p\ntype _ struct {\n", "\n}"},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "lesson.go", wrap.before+code+wrap.after, parser.SkipObjectResolution)
		if err == nil {
			return f, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// declaredIn returns every name a file declares: functions, methods,
// types, their fields and methods, constants, variables, parameters,
// results, and the names of := and range.
func declaredIn(f ast.Node) map[string]bool {
	names := map[string]bool{}
	add := func(ids ...*ast.Ident) {
		for _, id := range ids {
			if id != nil && id.Name != "_" {
				names[id.Name] = true
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			add(n.Name)
		case *ast.TypeSpec:
			add(n.Name)
		case *ast.ValueSpec:
			add(n.Names...)
		case *ast.Field:
			add(n.Names...)
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					add(id)
				}
			}
		}
		return true
	})
	return names
}

// scaffold is what a stage's package gives a student: its declarations,
// the functions its TODO(stage N) comments ask for, and its imports.
type scaffold struct {
	declared map[string]bool
	todo     map[string]bool
	imports  map[string][]string // package name → import paths
	std      map[string][]string // standard library package name → paths
	cache    map[string]map[string]bool
}

var todoCall = regexp.MustCompile(`\b([A-Za-z_]\w*)\(`)

func readScaffold(dir string, stage int) (*scaffold, error) {
	sc := &scaffold{declared: map[string]bool{}, todo: map[string]bool{}, imports: map[string][]string{},
		cache: map[string]map[string]bool{}}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("scaffold %s: no Go files (%v)", dir, err)
	}
	marker := fmt.Sprintf("TODO(stage %d)", stage)
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		maps.Copy(sc.declared, declaredIn(f))
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			name := pathpkg.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			sc.imports[name] = append(sc.imports[name], p)
		}
		for _, cg := range f.Comments {
			if text := cg.Text(); strings.Contains(text, marker) {
				for _, m := range todoCall.FindAllStringSubmatch(text, -1) {
					sc.todo[m[1]] = true
				}
			}
		}
	}
	return sc, nil
}

// packagePaths returns the import paths a name may stand for in an
// excerpt: the scaffold's import of that name, the kit package of that
// name, or any standard library package of that name (math/rand and
// crypto/rand are both rand). It returns nil if the name is no package.
func (sc *scaffold) packagePaths(name string) []string {
	if p, ok := sc.imports[name]; ok {
		return p
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "kit", name)); err == nil {
		return []string{"idemlab/kit/" + name}
	}
	if sc.std == nil {
		sc.std = stdPackages()
	}
	return sc.std[name]
}

// declares reports whether one of the packages at paths declares the
// exported name: at its top level, or, if member, as the name of a field
// or method of one of its types.
func (sc *scaffold) declares(paths []string, name string, member bool) (bool, error) {
	for _, p := range paths {
		top, members, err := sc.names(p)
		if err != nil {
			return false, err
		}
		if member && members[name] || !member && top[name] {
			return true, nil
		}
	}
	return false, nil
}

// member reports whether an exported field or method name is declared in
// a package the scaffold imports or in the kit.
func (sc *scaffold) member(name string) (bool, error) {
	var paths []string
	for _, ps := range sc.imports {
		paths = append(paths, ps...)
	}
	kit, err := os.ReadDir(filepath.Join(repoRoot, "kit"))
	if err != nil {
		return false, err
	}
	for _, e := range kit {
		if e.IsDir() {
			paths = append(paths, "idemlab/kit/"+e.Name())
		}
	}
	return sc.declares(paths, name, true)
}

// names returns a package's exported top-level names, and the names of
// the fields and methods its types declare.
func (sc *scaffold) names(path string) (top, members map[string]bool, err error) {
	if m, ok := sc.cache["top:"+path]; ok {
		return m, sc.cache["members:"+path], nil
	}
	dir := filepath.Join(build.Default.GOROOT, "src", filepath.FromSlash(path))
	if rest, ok := strings.CutPrefix(path, "idemlab/"); ok {
		dir = filepath.Join(repoRoot, filepath.FromSlash(rest))
	}
	top, members = map[string]bool{}, map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("package %s: %w", path, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					members[d.Name.Name] = true
				} else {
					top[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						top[s.Name.Name] = true
						ast.Inspect(s.Type, func(n ast.Node) bool {
							if f, ok := n.(*ast.Field); ok {
								for _, id := range f.Names {
									members[id.Name] = true
								}
								if len(f.Names) == 0 { // an embedded type is a field too
									if sel, ok := f.Type.(*ast.SelectorExpr); ok {
										members[sel.Sel.Name] = true
									} else if id, ok := f.Type.(*ast.Ident); ok {
										members[id.Name] = true
									}
								}
							}
							return true
						})
					case *ast.ValueSpec:
						for _, id := range s.Names {
							top[id.Name] = true
						}
					}
				}
			}
		}
	}
	sc.cache["top:"+path], sc.cache["members:"+path] = top, members
	return top, members, nil
}

// stdPackages maps each standard library package name to its import
// paths, leaving out internal, vendored and command packages.
func stdPackages() map[string][]string {
	root := filepath.Join(build.Default.GOROOT, "src")
	std := map[string][]string{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch base := d.Name(); {
		case rel == ".":
			return nil
		case base == "internal" || base == "vendor" || base == "testdata" || rel == "cmd":
			return filepath.SkipDir
		}
		std[pathpkg.Base(rel)] = append(std[pathpkg.Base(rel)], rel)
		return nil
	})
	return std
}
