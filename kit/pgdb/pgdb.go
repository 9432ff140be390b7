// Package pgdb opens the lab's database on PostgreSQL, through database/sql
// and pgx's stdlib driver, with the same fault switches and key-row reports
// as the SQLite database of package sqlitedb.
//
// What differs from SQLite, and how this package bridges it:
//   - placeholders: the stages write ?, PostgreSQL wants $1 (placeholders.go);
//   - key-row changes: SQLite reports them to the connection that made them
//     (a pre-update hook); PostgreSQL has no such hook, so a trigger on
//     idempotency_keys sends each changed row's id with NOTIFY, which
//     PostgreSQL delivers only when, and if, the transaction commits, and a
//     listening connection of this package hears it (keyrows.go);
//   - isolation: one lab server's database is a database of its own on the
//     cluster (CreateDatabase), the way ":memory:" is on SQLite.
//
// PostgreSQL runs transactions at READ COMMITTED and lets writers
// interleave: nothing here serializes them, on purpose. The races the
// lessons teach are real on this engine.
package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"idemlab/kit/fault"
)

// DB is an open lab database on PostgreSQL: the *sql.DB every package
// uses, plus the fault switches lab mode flips and what the database
// reports to it.
type DB struct {
	*sql.DB
	*fault.Store
	url    string
	stop   context.CancelFunc
	listen sync.WaitGroup
}

// MaxOpenConns bounds one database's connections, so that many lab
// servers can share a cluster's connection limit. A request holds one
// connection at a time; a lab server admits fewer requests at once than
// this (kit/server's request slots), so that its own work (the outbox
// relay, the /lab endpoints) never waits behind them for a connection.
const MaxOpenConns = 48

// minVersion is the oldest PostgreSQL the lab runs on, as
// server_version_num writes it: 14.0.
const minVersion = 140000

// Open connects to the PostgreSQL database at dbURL. It returns an error
// if the URL does not parse, the database does not answer, or it is older
// than PostgreSQL 14.
func Open(ctx context.Context, dbURL string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(dbURL), err)
	}
	store := &fault.Store{}
	sdb := sql.OpenDB(&connector{base: stdlib.GetConnector(*cfg), store: store})
	sdb.SetMaxOpenConns(MaxOpenConns)
	sdb.SetMaxIdleConns(MaxOpenConns)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open %s: %w", Redact(dbURL), err)
	}
	var version int
	if err := sdb.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open %s: read the server's version: %w", Redact(dbURL), err)
	}
	if version < minVersion {
		sdb.Close()
		return nil, fmt.Errorf("open %s: PostgreSQL %d.%d is too old: the lab needs %d or later (its key-row trigger is made with CREATE OR REPLACE TRIGGER)",
			Redact(dbURL), version/10000, version%10000, minVersion/10000)
	}
	db := &DB{DB: sdb, Store: store, url: dbURL}
	if err := db.startListening(cfg); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// Close stops listening for key-row changes and closes the database.
func (db *DB) Close() error {
	db.stop()
	db.listen.Wait()
	return db.DB.Close()
}

// CreateDatabase creates a new, empty database on the cluster clusterURL
// names, and returns its URL and a function that drops it (ending any
// connection still open on it). Each lab server that needs a database of
// its own (a test's, say) gets one, so servers never see each other's rows
// and can run side by side. The first database a process creates on a
// cluster starts its run there, which drops what killed runs left behind
// (see runs.go). In a process that reuses its databases (ReuseDatabases),
// it returns an emptied one when it has one, and the function empties it
// for the next instead of dropping it.
func CreateDatabase(ctx context.Context, clusterURL string) (dbURL string, drop func(context.Context) error, err error) {
	r, err := runOn(ctx, clusterURL)
	if err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	name, ok := takeKept(clusterURL)
	if !ok {
		name = r.name()
		// template0 and the C collation: text compares byte by byte, as on
		// SQLite, so the lab clock's fixed-width times sort as instants.
		_, err = r.db.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`)
		if err != nil {
			return "", nil, fmt.Errorf("create database: %w", err)
		}
	}
	if dbURL, err = databaseURL(clusterURL, name); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop = func(ctx context.Context) error {
		if keep(ctx, r, clusterURL, dbURL, name) {
			return nil
		}
		if _, err := r.db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	return dbURL, drop, nil
}

// Sibling returns the URL of the database named after dbURL's with suffix
// added (idemlab: idemlab_core), on the same cluster, creating it as
// CreateDatabase does if it does not exist yet: a database of its own for
// another service, which outlives the servers that use dbURL's. It returns
// the cluster's error.
func Sibling(ctx context.Context, dbURL, suffix string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("name a database beside %s: %w", Redact(dbURL), err)
	}
	name := strings.TrimPrefix(u.Path, "/") + suffix
	admin, err := sql.Open("pgx", dbURL)
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	if !exists {
		_, err = admin.ExecContext(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`)
		if err != nil && !IsUniqueViolation(err) {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Redact hides the password of a database URL, for messages.
func Redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "the database URL"
	}
	return u.Redacted()
}

// IsUniqueViolation reports whether err is PostgreSQL telling us that an
// INSERT or UPDATE collided with a UNIQUE or PRIMARY KEY constraint:
// SQLSTATE 23505, unique_violation. It looks at the code, never at the
// message text.
func IsUniqueViolation(err error) bool {
	return sqlState(err) == "23505"
}

// IsBusy reports whether err is PostgreSQL giving up on a lock or a
// transaction it could not order: a serialization failure (40001), a
// deadlock (40P01) or a lock not available (55P03). Each is worth
// retrying, and none says anything about the key.
func IsBusy(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01", "55P03":
		return true
	}
	return false
}

// IsDriver reports whether d is the driver this package opens databases
// with, so that code given only a *sql.DB can tell which engine it has.
func IsDriver(d driver.Driver) bool {
	_, ok := d.(*stdlib.Driver)
	return ok
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
