package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
)

// A database of its own for every lab server can cost the cluster more
// than the server's work in most checks: CREATE DATABASE copies the
// template's 300 files and writes them to the WAL, DROP DATABASE deletes
// them. Under go test of stage 9, with one database or more for each of
// its 92 checks, on a cluster whose files are on a disk (ext4), that was a
// third of PostgreSQL's CPU, most of it the kernel making and deleting
// files (on tmpfs, where files cost little, no difference showed). So a
// process that makes many short-lived databases (a stage's checks) can
// have each one it is done with emptied instead of dropped, and given to
// the next CreateDatabase: the same database, with nothing of its own left
// in it, as CREATE DATABASE makes it (emptied).

// reusing is set by ReuseDatabases.
var reusing atomic.Bool

// kept are the emptied databases waiting for their next server, by
// cluster.
var kept = struct {
	sync.Mutex
	byCluster map[string][]string
}{byCluster: make(map[string][]string)}

// ReuseDatabases has the databases CreateDatabase makes from now on
// emptied when they are dropped, and kept for the next CreateDatabase on
// the same cluster (a database that cannot be emptied is dropped). It
// returns the function that drops those it keeps: call it when the
// process is done with databases, or the next run on the cluster drops
// them (runs.go).
func ReuseDatabases() (dropKept func(context.Context) error) {
	reusing.Store(true)
	return func(ctx context.Context) error {
		reusing.Store(false)
		kept.Lock()
		byCluster := kept.byCluster
		kept.byCluster = make(map[string][]string)
		kept.Unlock()
		var errs []error
		for clusterURL, names := range byCluster {
			r, err := runOn(ctx, clusterURL)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, name := range names {
				if _, err := r.db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
					errs = append(errs, fmt.Errorf("drop database %s: %w", name, err))
				}
			}
		}
		return errors.Join(errs...)
	}
}

// takeKept returns a kept database of the cluster's, if there is one.
func takeKept(clusterURL string) (string, bool) {
	kept.Lock()
	defer kept.Unlock()
	names := kept.byCluster[clusterURL]
	if len(names) == 0 {
		return "", false
	}
	name := names[len(names)-1]
	kept.byCluster[clusterURL] = names[:len(names)-1]
	return name, true
}

// keep empties the database name, at dbURL on the cluster r runs on, and
// keeps it for the next CreateDatabase. It returns false, having kept
// nothing, if the database could not be emptied.
func keep(ctx context.Context, r *run, clusterURL, dbURL, name string) bool {
	if !reusing.Load() || emptied(ctx, r, dbURL, name) != nil {
		return false
	}
	kept.Lock()
	defer kept.Unlock()
	kept.byCluster[clusterURL] = append(kept.byCluster[clusterURL], name)
	return true
}

// emptyDatabase drops every object of the database's own, whatever
// made it: the lab's tables, the stage's, their sequences and indexes,
// the key-row trigger's function, a schema, type or function a stage
// made. An object it does not know to drop (an operator, say) stays, and
// freshDatabase then refuses the database.
const emptyDatabase = `DO $$
DECLARE
	o record;
BEGIN
	FOR o IN SELECT oid FROM pg_namespace
		WHERE oid >= 16384 AND nspname NOT LIKE 'pg\_temp\_%' AND nspname NOT LIKE 'pg\_toast\_temp\_%'
	LOOP
		EXECUTE format('DROP SCHEMA %I CASCADE', o.oid::regnamespace);
	END LOOP;
	-- A drop takes others with it (a table its sequences and indexes, a
	-- function its triggers): each object is looked up again before its
	-- own, and one that depends on another as a part of it is left to it.
	FOR o IN SELECT oid, relkind FROM pg_class WHERE oid >= 16384 AND relnamespace = 'public'::regnamespace
		AND relkind IN ('r', 'p', 'v', 'm', 'S', 'f') ORDER BY relkind = 'S'
	LOOP
		IF EXISTS (SELECT 1 FROM pg_class WHERE oid = o.oid)
			AND NOT EXISTS (SELECT 1 FROM pg_depend WHERE classid = 'pg_class'::regclass AND objid = o.oid AND deptype IN ('i', 'a')) THEN
			EXECUTE format('DROP %s %s CASCADE', CASE o.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
				WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, o.oid::regclass);
		END IF;
	END LOOP;
	FOR o IN SELECT oid FROM pg_proc WHERE oid >= 16384 AND pronamespace = 'public'::regnamespace LOOP
		IF EXISTS (SELECT 1 FROM pg_proc WHERE oid = o.oid) THEN
			EXECUTE format('DROP ROUTINE %s CASCADE', o.oid::regprocedure);
		END IF;
	END LOOP;
	FOR o IN SELECT oid, typtype FROM pg_type WHERE oid >= 16384 AND typnamespace = 'public'::regnamespace
		AND typelem = 0 AND typrelid = 0
	LOOP
		IF EXISTS (SELECT 1 FROM pg_type WHERE oid = o.oid)
			AND NOT EXISTS (SELECT 1 FROM pg_depend WHERE classid = 'pg_type'::regclass AND objid = o.oid AND deptype IN ('i', 'a')) THEN
			EXECUTE format('DROP %s %s CASCADE', CASE o.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, o.oid::regtype);
		END IF;
	END LOOP;
END $$`

// freshDatabase is true when the database holds nothing CREATE DATABASE
// from template0 would not: no object numbered as a user's (from 16384
// on, FirstNormalObjectId) in the catalogs that name one, no large
// object, no setting of its own, no prepared transaction. (The public
// schema's owner and privileges are not compared: neither the lab nor a
// stage changes them.)
const freshDatabase = `SELECT
	NOT EXISTS (SELECT 1 FROM pg_depend WHERE objid >= 16384 OR refobjid >= 16384)
	AND NOT EXISTS (SELECT 1 FROM pg_class WHERE oid >= 16384)
	AND NOT EXISTS (SELECT 1 FROM pg_proc WHERE oid >= 16384)
	AND NOT EXISTS (SELECT 1 FROM pg_type WHERE oid >= 16384)
	AND NOT EXISTS (SELECT 1 FROM pg_namespace WHERE oid >= 16384 AND nspname NOT LIKE 'pg\_temp\_%' AND nspname NOT LIKE 'pg\_toast\_temp\_%')
	AND NOT EXISTS (SELECT 1 FROM pg_extension WHERE oid >= 16384)
	AND NOT EXISTS (SELECT 1 FROM pg_event_trigger)
	AND NOT EXISTS (SELECT 1 FROM pg_largeobject_metadata)
	AND NOT EXISTS (SELECT 1 FROM pg_default_acl)
	AND NOT EXISTS (SELECT 1 FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
	AND NOT EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE database = current_database())`

// emptied ends every session on the database, as DROP DATABASE … WITH
// (FORCE) does, then empties it (emptyDatabase) and checks that it is as
// fresh as CreateDatabase made it (freshDatabase).
func emptied(ctx context.Context, r *run, dbURL, name string) error {
	// Wait up to 10 s for each session to end: one still running a
	// statement would hold its locks against the drops below.
	if _, err := r.db.ExecContext(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		return err
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, emptyDatabase); err != nil {
		return err
	}
	var fresh bool
	if err := db.QueryRowContext(ctx, freshDatabase).Scan(&fresh); err != nil {
		return err
	}
	if !fresh {
		return fmt.Errorf("database %s still holds objects of its own", name)
	}
	return nil
}

// databaseURL is the URL of database name on the cluster clusterURL names.
func databaseURL(clusterURL, name string) (string, error) {
	u, err := url.Parse(clusterURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}
