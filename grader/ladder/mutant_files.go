package ladder

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/tools/txtar"

	"idemlab/kit/labdb"
)

// mutantFiles holds the mutants written as text: mutants/stageN/NAME.txtar,
// where N is the stage of the check that catches the mutant. The format is
// described in mutants/README.md.
//
//go:embed mutants
var mutantFiles embed.FS

// The mutants caught by each stage's checks, read from mutants/stageN.
// Every wrong pattern a stage's lesson names is one of them.
var (
	mutantsStage0 = mustLoadStage(0)
	mutantsStage1 = mustLoadStage(1)
	mutantsStage2 = mustLoadStage(2)
	mutantsStage3 = mustLoadStage(3)
	mutantsStage4 = mustLoadStage(4)
	mutantsStage5 = mustLoadStage(5)
	mutantsStage6 = mustLoadStage(6)
	mutantsStage7 = mustLoadStage(7)
	mutantsStage8 = mustLoadStage(8)
	mutantsStage9 = mustLoadStage(9)
)

// mustLoadStage reads the mutants caught by stage n's checks. The files
// are compiled into the package, so an error is the package's own bug:
// it panics, and every test of the package says so.
func mustLoadStage(n int) []Mutant {
	ms, err := LoadMutants(mutantFiles, fmt.Sprintf("mutants/stage%d", n))
	if err != nil {
		panic(err)
	}
	return ms
}

// LoadMutants reads every NAME.txtar file in the folder dir of fsys, in
// the order of their names. It returns an error naming the file if one
// does not parse, or if its header's name is not its file's.
func LoadMutants(fsys fs.FS, dir string) ([]Mutant, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	var ms []Mutant
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		m, err := ParseMutant(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if want := strings.TrimSuffix(path.Base(name), ".txtar"); m.Name != want {
			return nil, fmt.Errorf("%s: the header names mutant %q; the file is %s.txtar", name, m.Name, want)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// ParseMutant reads one mutant from its txtar form: a header of
// "field: value" lines (name, stage, caught-by, bug, engine if the bug
// shows on one engine only, lesson if its failure must send the student
// to a section other than the check's, harm if its verdict on money
// must be one, and state if it adds a package variable), then each edit
// as two sections, "FILE: old" and "FILE: new". The line break that ends
// a section is the archive's, not the edit's. It returns an error for an
// unknown or missing field, or a section out of that order.
func ParseMutant(data []byte) (Mutant, error) {
	a := txtar.Parse(data)
	m := Mutant{Stage: -1}
	for line := range strings.Lines(string(a.Comment)) {
		field, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		if !ok {
			return Mutant{}, fmt.Errorf("header line %q is not \"field: value\"", line)
		}
		switch field {
		case "name":
			m.Name = value
		case "stage":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > 9 {
				return Mutant{}, fmt.Errorf("stage: %q is not a stage, 0 to 9", value)
			}
			m.Stage = n
		case "caught-by":
			m.CaughtBy = value
		case "engine":
			m.Engine = labdb.Engine(value)
		case "bug":
			m.Bug = value
		case "lesson":
			m.Lesson = value
		case "harm":
			m.Harm = value
		case "state":
			m.State = value
		default:
			return Mutant{}, fmt.Errorf("unknown header field %q", field)
		}
	}
	if m.Name == "" || m.Stage < 0 || m.CaughtBy == "" || m.Bug == "" {
		return Mutant{}, errors.New("the header needs name, stage, caught-by and bug")
	}
	if len(a.Files) == 0 || len(a.Files)%2 != 0 {
		return Mutant{}, fmt.Errorf("%d sections: want an old and a new one per edit", len(a.Files))
	}
	for i := 0; i < len(a.Files); i += 2 {
		old, new := a.Files[i], a.Files[i+1]
		file, ok := strings.CutSuffix(old.Name, ": old")
		if !ok || new.Name != file+": new" {
			return Mutant{}, fmt.Errorf("sections %q and %q: want \"FILE: old\" then \"FILE: new\"", old.Name, new.Name)
		}
		m.Edits = append(m.Edits, Edit{File: file, Old: sectionText(old.Data), New: sectionText(new.Data)})
	}
	return m, nil
}

// sectionText is an edit's text: the section without the line break
// txtar ends every section with.
func sectionText(data []byte) string {
	return strings.TrimSuffix(string(data), "\n")
}
