package studentloop

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The untouched scaffold comes from git: the student works in a clone,
// and the kit's commit holds the stage as shipped. A copy embedded in the
// lab binary would not do: the binary is built from the same folder the
// student edits, so it would embed their edits. Pristine copies kept
// beside the stages would double every scaffold file for every kit change
// to keep in step.

// Scaffold returns the files of stage n's scaffold as committed at rev
// (HEAD by default): each file's name and content. It returns an error
// outside a git clone, or when rev does not have the stage.
func Scaffold(root string, n int, rev string) (map[string][]byte, error) {
	if rev == "" {
		rev = "HEAD"
	}
	dir := filepath.ToSlash(StageDir(n))
	list, err := git(root, "ls-tree", "--name-only", rev+":"+dir)
	if err != nil {
		return nil, fmt.Errorf("the untouched scaffold comes from git, and %s has no %s (%v); clone the lab with git to use reset", rev, dir, err)
	}
	files := map[string][]byte{}
	for _, name := range strings.Fields(string(list)) {
		content, err := git(root, "show", rev+":"+dir+"/"+name)
		if err != nil {
			return nil, err
		}
		files[name] = content
	}
	return files, nil
}

func git(root string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Changed returns, sorted, the names of the scaffold's files that differ from the
// student's stage folder, and those the student added.
func Changed(root string, n int, scaffold map[string][]byte) ([]string, error) {
	dir := filepath.Join(root, StageDir(n))
	var changed []string
	for name, want := range scaffold {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			changed = append(changed, name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if _, ok := scaffold[e.Name()]; !ok && !e.IsDir() {
			changed = append(changed, e.Name())
		}
	}
	sort.Strings(changed)
	return changed, nil
}

// Reset puts stage n's scaffold back: it first copies the whole stage
// folder to .idemlab/backup/stageN-<time>, then writes the scaffold's
// files and removes those the scaffold does not have. It returns the
// backup folder, relative to root.
func Reset(root string, n int, scaffold map[string][]byte, at time.Time) (string, error) {
	dir := filepath.Join(root, StageDir(n))
	backup := filepath.Join(".idemlab", "backup", fmt.Sprintf("stage%d-%s", n, at.Format("20060102-150405")))
	if err := os.MkdirAll(filepath.Join(root, backup), 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(root, backup, e.Name()), raw, 0o644); err != nil {
			return "", fmt.Errorf("back up %s: %w", e.Name(), err)
		}
	}
	for _, e := range entries {
		if _, ok := scaffold[e.Name()]; !ok && !e.IsDir() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return backup, err
			}
		}
	}
	for name, content := range scaffold {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return backup, err
		}
	}
	return backup, nil
}
