package pgdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"idemlab/kit/fault"
)

// keyRowsChannel is the NOTIFY channel the key table's trigger speaks on.
const keyRowsChannel = "idemlab_key_rows"

// keyRowsTrigger makes every committed change to an idempotency_keys row
// send the row's id on keyRowsChannel. NOTIFY is transactional: the
// notices of a transaction are delivered when it commits, and never if it
// rolls back, so what the listener hears is what committed, as the SQLite
// hook reports it. The row is named by its id column, whatever else the
// stage's design puts in the table (a row without one is not reported).
var keyRowsTrigger = []string{
	`CREATE OR REPLACE FUNCTION idemlab_key_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_notify('` + keyRowsChannel + `', coalesce(to_jsonb(NEW) ->> 'id', to_jsonb(OLD) ->> 'id', ''));
		RETURN NULL;
	END $$`,
	`CREATE OR REPLACE TRIGGER idemlab_key_rows AFTER INSERT OR UPDATE OR DELETE ON ` + fault.KeyTable + `
	FOR EACH ROW EXECUTE FUNCTION idemlab_key_row_changed()`,
}

// WatchKeyTable puts the trigger that reports key-row changes on the
// stage's idempotency_keys table, if it exists. Call it after the stage
// has created its tables, and again after a reset has made them anew.
func (db *DB) WatchKeyTable(ctx context.Context) error {
	var exists bool
	err := db.QueryRowContext(fault.LabRead(ctx),
		`SELECT to_regclass(current_schema() || '.`+fault.KeyTable+`') IS NOT NULL`).Scan(&exists)
	if err != nil || !exists {
		return err
	}
	for _, q := range keyRowsTrigger {
		if _, err := db.ExecContext(fault.LabRead(ctx), q); err != nil {
			return fmt.Errorf("watch %s: %w", fault.KeyTable, err)
		}
	}
	return nil
}

// Backoffs between two tries to listen again after the listening
// connection was lost: from the first, doubling up to the last.
const (
	firstRelisten = 50 * time.Millisecond
	maxRelisten   = 2 * time.Second
)

// startListening opens the connection that hears the trigger's notices,
// and reports each row id to the Store until Close. When the connection
// is lost (the server restarted, or the backend was terminated), it says
// so to the Store (KeyRowsListening), connects and listens again, backing
// off between tries, and says when it is back: the notices sent in
// between are lost, and the Store's listener reads the rows anew.
func (db *DB) startListening(cfg *pgx.ConnConfig) error {
	ctx, stop := context.WithCancel(context.Background())
	db.stop = stop
	c, err := listen(ctx, cfg)
	if err != nil {
		stop()
		return err
	}
	db.listen.Add(1)
	go func() {
		defer db.listen.Done()
		for {
			err := db.hear(ctx, c)
			if ctx.Err() != nil {
				return
			}
			db.KeyRowsListening(fmt.Errorf("lost the connection that listens for key rows: %w", err))
			if c = relisten(ctx, cfg); c == nil {
				return
			}
			db.KeyRowsListening(nil)
		}
	}()
	return nil
}

// listen connects and listens for the trigger's notices.
func listen(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("listen for key rows: %w", err)
	}
	if _, err := c.Exec(ctx, "LISTEN "+keyRowsChannel); err != nil {
		c.Close(context.Background())
		return nil, fmt.Errorf("listen for key rows: %w", err)
	}
	return c, nil
}

// relisten tries listen until it succeeds, backing off, or ctx ends (nil).
func relisten(ctx context.Context, cfg *pgx.ConnConfig) *pgx.Conn {
	wait := firstRelisten
	for {
		if c, err := listen(ctx, cfg); err == nil {
			return c
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		wait = min(2*wait, maxRelisten)
	}
}

// hear reports each notice c receives to the Store until c fails or ctx
// ends, then closes c and returns why it stopped.
func (db *DB) hear(ctx context.Context, c *pgx.Conn) error {
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.Close(closing)
	}()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			db.KeyRowsChanged([]int64{id})
		}
	}
}
