package dashboard

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDashboard_DrawsAndImportsNoGrader: the dashboard only draws; the
// servers, the traffic and its faults, and the student's child process
// live in dashboard/backend, which may use the grader. It catches a UI
// file that starts a server or plays traffic itself.
func TestDashboard_DrawsAndImportsNoGrader(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "idemlab/dashboard").Output()
	if err != nil {
		t.Fatalf("go list -deps idemlab/dashboard: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "idemlab/grader" || strings.HasPrefix(pkg, "idemlab/grader/") || strings.HasPrefix(pkg, "idemlab/dashboard/") {
			t.Errorf("the dashboard imports %s: move what needs it to dashboard/backend", pkg)
		}
	}
}
