//go:build nopostgres

package labdb

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// A build tagged nopostgres runs on SQLite alone (see postgres.go): a
// PostgreSQL URL is refused with an error that says how to build with it.

// errNoPostgres is what this build answers a PostgreSQL URL with.
var errNoPostgres = fmt.Errorf("this build has no PostgreSQL (it was built with -tags nopostgres): unset %s, or build without the tag", EnvURL)

func openPostgres(context.Context, string) (*DB, error) { return nil, errNoPostgres }

func createPostgresDatabase(context.Context, string) (string, func(context.Context) error, error) {
	return "", nil, errNoPostgres
}

func reusePostgresDatabases() func(context.Context) error {
	return func(context.Context) error { return nil }
}

func siblingPostgres(context.Context, string, string) (string, error) { return "", errNoPostgres }

func redactPostgres(target string) string { return "postgres://…" }

func isPostgresDriver(driver.Driver) bool { return false }

func isPostgresUniqueViolation(error) bool { return false }

func isPostgresBusy(error) bool { return false }
