package studentloop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoRoot is returned by FindRoot outside an idemlab checkout.
var ErrNoRoot = errors.New("not inside the idemlab folder (no go.mod of module idemlab above here)")

// FindRoot returns the idemlab checkout that holds dir: the nearest folder
// at or above dir whose go.mod declares module idemlab.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(raw, []byte("module idemlab\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoRoot
		}
		dir = parent
	}
}

// StageDir is the student's folder for stage n, relative to the root.
func StageDir(n int) string { return filepath.Join("stages", fmt.Sprintf("stage%d", n)) }

// SolutionDir is the reference solution's folder for stage n.
func SolutionDir(n int) string { return filepath.Join("solutions", fmt.Sprintf("stage%d", n)) }

// ValidStage returns an error unless n names a stage.
func ValidStage(n int) error {
	if n < 0 || n >= Stages {
		return fmt.Errorf("stage %d: the stages are 0 to %d", n, Stages-1)
	}
	return nil
}
