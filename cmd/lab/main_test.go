package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"idemlab/grader/targets"
)

// TestMain serves a reference solution when lab serve --solution starts
// this test binary as one of its servers, and the core ledger when lab
// serve starts it as that, as main does; and runs lab itself when a test
// starts this binary as lab serve (envRunLab).
func TestMain(m *testing.M) {
	if targets.IsCoreChild() {
		os.Exit(targets.ServeCoreChild())
	}
	if targets.IsChild() {
		os.Exit(targets.ServeChild(solutionSubjects()...))
	}
	if os.Getenv(envRunLab) == "1" {
		// A test's lab serve in a process of its own (startLab), which
		// the test can kill.
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestLab_BarePrintsUsageAndExits2 catches a bare lab that exits 0, as if
// it had done something, or prints nothing.
func TestLab_BarePrintsUsageAndExits2(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), nil, &out, &errb); code != 2 {
		t.Errorf("bare lab exited %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "usage: lab <command>") || out.Len() != 0 {
		t.Errorf("bare lab printed stdout %q, stderr %q; want the usage on stderr", out.String(), errb.String())
	}
}

// TestHelp_PrintsEachCommandsUsage catches lab help <command> printing
// the list of commands instead of that command's usage, and a command
// that does not stop at -h.
func TestHelp_PrintsEachCommandsUsage(t *testing.T) {
	for _, c := range commands {
		name := c.name
		t.Run(name, func(t *testing.T) {
			var out, errb strings.Builder
			if code := run(context.Background(), []string{"help", name}, &out, &errb); code != 0 {
				t.Fatalf("lab help %s exited %d: %s", name, code, errb.String())
			}
			switch {
			case strings.Contains(out.String(), "usage: lab <command>"):
				t.Errorf("lab help %s printed the list of commands:\n%s", name, out.String())
			case !strings.Contains(strings.ToLower(out.String()), "usage") || !strings.Contains(out.String(), "lab "+name):
				t.Errorf("lab help %s printed no usage of lab %s:\n%s", name, name, out.String())
			case errb.Len() != 0:
				t.Errorf("lab help %s wrote to stderr: %s", name, errb.String())
			}
		})
	}
}

// TestHelp_SaysEachDefaultOnceInPlainWords catches a flag whose help
// names its default in words and flag prints another after it ("(default:
// the final solution) (default -1)"), and help that leaks a name of the
// code (in.stdout) where a student reads it.
func TestHelp_SaysEachDefaultOnceInPlainWords(t *testing.T) {
	code := regexp.MustCompile(`\bin\.[a-z]\w*`)
	for _, c := range commands {
		var out, errb strings.Builder
		run(context.Background(), []string{"help", c.name}, &out, &errb)
		for _, entry := range strings.Split(out.String(), "\n  -")[1:] {
			if n := strings.Count(entry, "(default"); n > 1 {
				t.Errorf("lab %s -%s names its default %d times:\n  -%s", c.name, entry[:strings.IndexAny(entry+" ", " \n")], n, entry)
			}
			if m := code.FindString(entry); m != "" {
				t.Errorf("lab %s help says %q, a name of the code:\n  -%s", c.name, m, entry)
			}
		}
	}
}

// TestHelp_ListsTheCommands catches lab help without a command printing
// nothing, or failing.
func TestHelp_ListsTheCommands(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var out, errb strings.Builder
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Errorf("lab %s exited %d", args[0], code)
		}
		if !strings.Contains(out.String(), "usage: lab <command>") || !strings.Contains(out.String(), "serve") {
			t.Errorf("lab %s printed %q; want the list of commands", args[0], out.String())
		}
	}
}

// TestHelp_AlignsTheSummaries catches a summary that starts in another
// column than the others, or touches its command's name (a name longer
// than the padding).
func TestHelp_AlignsTheSummaries(t *testing.T) {
	var out strings.Builder
	usage(&out)
	column := -1
	for _, c := range commands {
		var line string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "  "+c.name+" ") {
				line = l
			}
		}
		at := strings.Index(line, c.summary)
		switch {
		case at < 0:
			t.Errorf("no line lists %s with its summary:\n%s", c.name, out.String())
		case !strings.HasSuffix(line[:at], "  "):
			t.Errorf("the summary of %s touches its name: %q", c.name, line)
		case column >= 0 && at != column:
			t.Errorf("the summary of %s starts at column %d, the first one's at %d:\n%s", c.name, at, column, out.String())
		default:
			column = at
		}
	}
}

// TestHelp_RefusesAnUnknownCommand catches lab help nosuch exiting 0.
func TestHelp_RefusesAnUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "nosuch"}, {"nosuch"}} {
		var out, errb strings.Builder
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("lab %s exited %d, want 2", strings.Join(args, " "), code)
		}
		if !strings.Contains(errb.String(), `unknown command "nosuch"`) {
			t.Errorf("lab %s said %q", strings.Join(args, " "), errb.String())
		}
	}
}

// TestLab_DoesNotLinkTesting catches a package the lab binary links that
// imports testing (a test harness in package grader, say): go test's
// flags and machinery would ship in the lab command.
func TestLab_DoesNotLinkTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" || strings.HasPrefix(pkg, "testing/") {
			t.Errorf("the lab command links %s; find who imports it with go list -deps -f '{{.ImportPath}}: {{.Imports}}' .", pkg)
		}
	}
}
