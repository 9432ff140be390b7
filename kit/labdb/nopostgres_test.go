//go:build nopostgres

package labdb_test

import (
	"context"
	"strings"
	"testing"

	"idemlab/kit/labdb"
)

// TestOpen_WithoutPostgresSaysHowToGetIt catches a build tagged
// nopostgres that opens a SQLite file named like a URL, or refuses a
// PostgreSQL URL without saying why; SQLite still opens.
func TestOpen_WithoutPostgresSaysHowToGetIt(t *testing.T) {
	ctx := context.Background()
	_, err := labdb.Open(ctx, "postgres://lab@127.0.0.1:5432/lab")
	if err == nil || !strings.Contains(err.Error(), "-tags nopostgres") {
		t.Fatalf("Open(postgres://…) = %v, want an error that names the build tag", err)
	}
	if labdb.Redacted("postgres://lab:secret@127.0.0.1/lab") != "postgres://…" {
		t.Fatal("Redacted shows a URL it cannot parse")
	}
	db, err := labdb.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Engine() != labdb.SQLite {
		t.Fatalf("engine %s", db.Engine())
	}
}
