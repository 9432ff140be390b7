package studentloop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReset_PutsTheCommittedScaffoldBack: in a git clone, the student's
// edit and added file are backed up, the committed scaffold is restored
// and the added file removed. A reset that lost the student's files, or
// kept the edit, fails.
func TestReset_PutsTheCommittedScaffoldBack(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	dir := filepath.Join(root, StageDir(1))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "keys.go"), []byte("package stage1 // TODO\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "scaffold"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "keys.go"), []byte("package stage1 // mine\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package stage1\n"), 0o644)
	scaffold, err := Scaffold(root, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	changed, err := Changed(root, 1, scaffold)
	if err != nil || strings.Join(changed, ",") != "extra.go,keys.go" {
		t.Fatalf("changed %v, %v", changed, err)
	}
	backup, err := Reset(root, 1, scaffold, time.Unix(0, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "keys.go")); string(got) != "package stage1 // TODO\n" {
		t.Errorf("keys.go after reset: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "extra.go")); err == nil {
		t.Error("extra.go survived the reset")
	}
	if got, _ := os.ReadFile(filepath.Join(root, backup, "keys.go")); string(got) != "package stage1 // mine\n" {
		t.Errorf("backup keys.go: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, backup, "extra.go")); err != nil {
		t.Error("extra.go is not in the backup")
	}
}

func TestScaffold_OutsideAClone(t *testing.T) {
	if _, err := Scaffold(t.TempDir(), 1, ""); err == nil || !strings.Contains(err.Error(), "clone") {
		t.Fatalf("err %v", err)
	}
}

// TestDiff_MarksTheStudentsLines: the diff is from the reference to the
// student's file, + lines the student's.
func TestDiff_MarksTheStudentsLines(t *testing.T) {
	root := t.TempDir()
	for dir, body := range map[string]string{SolutionDir(2): "a\nref\nc\n", StageDir(2): "a\nmine\nc\n"} {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "keys.go"), []byte(body), 0o644)
		os.WriteFile(filepath.Join(root, dir, "stage_test.go"), []byte(dir), 0o644)
	}
	d, err := Diff(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "-ref\n") || !strings.Contains(d, "+mine\n") || strings.Contains(d, "stage_test") {
		t.Fatalf("diff:\n%s", d)
	}
}
