//go:build !nopostgres

package labdb

import (
	"context"
	"database/sql/driver"

	"idemlab/kit/pgdb"
)

// The PostgreSQL engine is package pgdb and the pgx driver under it, a
// quarter of a lab binary. A build tagged nopostgres leaves them out
// (nopostgres.go): the student's watch builds a stage's checks that way
// when they run on SQLite, so that a save links a smaller test binary.

func openPostgres(ctx context.Context, target string) (*DB, error) {
	db, err := pgdb.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return &DB{DB: db.DB, Store: db.Store, engine: PostgreSQL, target: target, pg: db}, nil
}

func createPostgresDatabase(ctx context.Context, clusterURL string) (string, func(context.Context) error, error) {
	return pgdb.CreateDatabase(ctx, clusterURL)
}

func reusePostgresDatabases() func(context.Context) error { return pgdb.ReuseDatabases() }

func siblingPostgres(ctx context.Context, target, suffix string) (string, error) {
	return pgdb.Sibling(ctx, target, suffix)
}

func redactPostgres(target string) string { return pgdb.Redact(target) }

func isPostgresDriver(d driver.Driver) bool { return pgdb.IsDriver(d) }

func isPostgresUniqueViolation(err error) bool { return pgdb.IsUniqueViolation(err) }

func isPostgresBusy(err error) bool { return pgdb.IsBusy(err) }
