package bank

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// Execution is one run of a business operation, as the lab's event stream
// reports it.
type Execution struct {
	Op     string `json:"op"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	// Count is which run of its op this one was, counted in the
	// transaction that wrote it (1 is right; more is a double).
	Count int64 `json:"count"`
	// At is when the business write was made, inside its transaction: a
	// timeline draws the execution there, not when the answer left.
	At time.Time `json:"at,omitzero"`
}

// countExecution adds one to the op's executions and notes the execution in
// the request's log, if it has one, with the count its own write made: the
// row stays locked by tx until it ends, so no other run of the op comes
// between them, on either engine.
func (b *Bank) countExecution(ctx context.Context, tx *sql.Tx, op, kind, id string, amount int64) error {
	var count int64
	if op != "" {
		if err := tx.QueryRowContext(ctx,
			`INSERT INTO executions (op, kind, count) VALUES (?, ?, 1)
			 ON CONFLICT (op) DO UPDATE SET count = executions.count + 1
			 RETURNING count`, op, kind).Scan(&count); err != nil {
			return fmt.Errorf("count execution of %s: %w", op, err)
		}
	}
	if l, ok := ctx.Value(execLogKey{}).(*ExecutionLog); ok {
		l.add(Execution{Op: op, Kind: kind, ID: id, Amount: amount, Count: count, At: time.Now().UTC()})
	}
	return nil
}

// ExecutionLog collects the business writes one request attempted. Whether
// they happened is only known once the caller's transaction is over: see
// Committed.
type ExecutionLog struct {
	mu   sync.Mutex
	runs []Execution
	// onCoreCall, if set, runs as each of the request's calls to the core
	// (CallCore) starts.
	onCoreCall func()
}

type execLogKey struct{}

// WithExecutionLog returns a context whose business writes are noted in the
// returned log.
func WithExecutionLog(ctx context.Context) (context.Context, *ExecutionLog) {
	l := &ExecutionLog{}
	return context.WithValue(ctx, execLogKey{}, l), l
}

// OnCoreCall makes fn run as each of the request's calls to the core
// (CallCore) starts, whatever comes of its business write after.
func (l *ExecutionLog) OnCoreCall(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onCoreCall = fn
}

// coreCalled runs the function OnCoreCall set, if any.
func (l *ExecutionLog) coreCalled() {
	l.mu.Lock()
	fn := l.onCoreCall
	l.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func (l *ExecutionLog) add(e Execution) {
	l.mu.Lock()
	l.runs = append(l.runs, e)
	l.mu.Unlock()
}

// Committed reports which of the logged writes were committed, each with
// the run of its op it was.
func (b *Bank) Committed(ctx context.Context, l *ExecutionLog) ([]Execution, error) {
	l.mu.Lock()
	runs := append([]Execution(nil), l.runs...)
	l.mu.Unlock()
	var done []Execution
	for _, e := range runs {
		table := "transfers"
		if e.Kind == "deposit" {
			table = "deposits"
		}
		var n int
		if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE id = ?`, e.ID).Scan(&n); err != nil {
			return done, fmt.Errorf("check execution %s: %w", e.ID, err)
		}
		if n == 0 {
			continue
		}
		done = append(done, e)
	}
	return done, nil
}

// Executions reports how many times each op has run.
func (b *Bank) Executions(ctx context.Context) (map[string]int64, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT op, count FROM executions`)
	if err != nil {
		return nil, fmt.Errorf("read executions: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var op string
		var n int64
		if err := rows.Scan(&op, &n); err != nil {
			return nil, fmt.Errorf("read executions: %w", err)
		}
		out[op] = n
	}
	return out, rows.Err()
}
