// Package stage is the contract between the kit and a stage: what a stage
// is given (Env) and what it gives back (Handlers). Every stage package,
// the student's and the reference solution alike, exports
//
//	func New(ctx context.Context, env stage.Env) (stage.Handlers, error)
//
// and the kit does everything else: routing, authentication, decoding
// limits, the kit's read endpoints, lab mode and its events.
package stage

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/clock"
	"idemlab/kit/core"
)

// Env is what a stage may use.
type Env struct {
	// DB is the lab database. The stage owns its own tables in it, which
	// it creates in New: idempotency_keys, and from stage 8 on
	// transfer_references. A reset drops them and calls New again.
	DB *sql.DB
	// Bank moves money inside a transaction the stage owns.
	Bank *bank.Bank
	// Clock is the lab clock; use it for every time the stage stores or compares.
	Clock *clock.Clock
	// Config reports the settings in force now; they can change at any time.
	Config func() Config
	// Core is the core ledger's client (stage 9 on): every executed
	// transfer must reach the core, over HTTP, exactly once in effect.
	Core *core.Client
}

// Config are the lab settings a stage reads (POST /lab/config).
type Config struct {
	// CoreLatency is how long Bank.CallCore waits.
	CoreLatency time.Duration `json:"core_latency"`
	// Retention is how long a completed key is kept (stage 5 on).
	Retention time.Duration `json:"retention"`
	// Lease is how long an in-progress claim is honoured before a retry may
	// take it over (stage 6).
	Lease time.Duration `json:"lease"`
	// RetryHorizon is how long clients keep retrying; Retention must be longer.
	RetryHorizon time.Duration `json:"retry_horizon"`
}

// DefaultConfig is the config a lab server starts with (docs/api.md).
func DefaultConfig() Config {
	return Config{Retention: 24 * time.Hour, Lease: 30 * time.Second, RetryHorizon: time.Hour}
}

// Handlers are the endpoints a stage serves. The kit has already
// authenticated the caller (see auth.Customer) when they run.
type Handlers interface {
	Transfer(w http.ResponseWriter, r *http.Request)
	Deposit(w http.ResponseWriter, r *http.Request)
}

// Purger is implemented by stages that expire keys (stage 5 on). Purge
// removes expired completed keys and reports how many; it must never remove
// an in-progress key.
type Purger interface {
	Purge(ctx context.Context) (int64, error)
}

// Settings is implemented by stages that serve an account's settings
// (stage 7 on): GET and PUT /accounts/{id}/settings, owner-only, where
// the route's {id} is the account (r.PathValue("id")). The kit owns
// the settings' table (see bank.Settings) and enforces the daily limit on
// every transfer; the stage owns the ETag and the conditional write.
type Settings interface {
	GetSettings(w http.ResponseWriter, r *http.Request)
	PutSettings(w http.ResponseWriter, r *http.Request)
}

// Relayer is implemented by stages that deliver an outbox (stage 9 on).
// Relay sends rows of the outbox still owed to the core ledger (Env.Core),
// marks sent each one the core acknowledged and sets aside each one it
// refused for good; it returns how many rows it settled so. The kit calls
// it again and again, a pass at a time, from one goroutine, until the
// server stops: the first as the server starts, then at once after a pass
// that settled rows, 20 ms later after one that settled none. A row that failed for now is sent again on a
// later pass. An error ends a pass early.
type Relayer interface {
	Relay(ctx context.Context) (int, error)
}

// Factory builds a stage's handlers; it is each stage package's New.
type Factory func(ctx context.Context, env Env) (Handlers, error)
