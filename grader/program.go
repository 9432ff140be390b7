package grader

import (
	"os"
	"path/filepath"

	"idemlab/grader/targets"
)

// GoRunLab runs the lab from the checkout's root without building it
// first: it works as typed on a fresh clone.
const GoRunLab = "go run ./cmd/lab"

// Program is how a command printed for a person names the lab program,
// so that it runs as typed from the checkout's root: bin/lab when that
// is the binary running (make lab builds it; make serve, make grade and
// make audit run it), GoRunLab otherwise (go test and go run build their
// copies elsewhere, and a fresh clone has no bin/lab).
func Program() string {
	// Either one unknown ("") names no bin/lab.
	root, _ := targets.Root()
	exe, _ := os.Executable()
	return ProgramAt(root, exe)
}

// ProgramAt is Program for the checkout root and the running executable
// exe: bin/lab if exe is root's bin/lab, GoRunLab otherwise (an empty
// root or exe is one not known).
func ProgramAt(root, exe string) string {
	if root == "" || exe == "" {
		return GoRunLab
	}
	running, err := os.Stat(exe)
	if err != nil {
		return GoRunLab
	}
	if built, err := os.Stat(filepath.Join(root, "bin", "lab")); err == nil && os.SameFile(running, built) {
		return "bin/lab"
	}
	return GoRunLab
}
