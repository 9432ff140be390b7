//go:build unix

package labdb_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPGCluster_ATakenPortIsSaidPlainly: scripts/pg-cluster.sh tries the
// next port when the one it chose is taken between its look and the
// server's start. It says which port was taken and nothing else: before,
// pg_ctl's "could not start server. Examine the log output." came
// through, which a person reads as the cluster failing, though it then
// started on the next port. The port is held bound, not listening, so
// that the script's own look finds it free and the server's bind fails.
func TestPGCluster_ATakenPortIsSaidPlainly(t *testing.T) {
	needPostgreSQL(t)
	taken := boundNotListening(t)
	free := freePort(t)
	script, err := filepath.Abs("../../scripts/pg-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "true")
	cmd.Env = append(os.Environ(), fmt.Sprintf("IDEMLAB_PG_PORTS=%d %d", taken, free))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	out := stderr.String()
	if strings.Contains(out, "Examine the log output") || strings.Contains(out, "could not start server") {
		t.Errorf("pg_ctl's words about a port it could not bind came through:\n%s", out)
	}
	if !strings.Contains(out, fmt.Sprintf("port %d is taken", taken)) || !strings.Contains(out, fmt.Sprintf("127.0.0.1:%d/", free)) {
		t.Errorf("want the taken port named and the cluster on the next:\n%s", out)
	}
}

// boundNotListening returns a loopback port bound to a socket that does
// not listen: nothing answers on it, and nothing else can bind it.
func boundNotListening(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// freePort returns a loopback port nothing holds now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPGCluster_EveryPortTakenIsSaidPlainly: when every port the script
// tries answers already, it names them and stops, without a cat error
// about a pg_ctl output no start wrote. The port listens, so the
// script's own look finds it taken and no cluster is made.
func TestPGCluster_EveryPortTakenIsSaidPlainly(t *testing.T) {
	needPostgreSQL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	script, err := filepath.Abs("../../scripts/pg-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "true")
	cmd.Env = append(os.Environ(), fmt.Sprintf("IDEMLAB_PG_PORTS=%d", taken))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("started with its only port taken:\n%s", stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, fmt.Sprintf("every port tried was taken: %d (IDEMLAB_PG_PORTS)", taken)) || strings.Contains(out, "No such file") {
		t.Errorf("want the taken ports named, and nothing else:\n%s", out)
	}
}

// needPostgreSQL skips a test that runs scripts/pg-cluster.sh where
// PostgreSQL is not installed (the script would install it) or in -short.
func needPostgreSQL(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs scripts/pg-cluster.sh")
	}
	if _, err := exec.LookPath("pg_ctl"); err != nil {
		if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl"); len(m) == 0 {
			t.Skip("PostgreSQL is not installed")
		}
	}
}
