package grader

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http/httptest"

	"idemlab/grader/dayplan"
	"idemlab/kit/accesslog"
	"idemlab/kit/server"
	"idemlab/kit/stage"
)

// TallyTruth is the answer key of stage 0's Tally, computed without the
// access log: from the server's transfers table (what was executed, in
// the order it was committed) and the plan (which key each op was sent
// with). Tally reads the log a real team would have; this reads the
// bank's own books, so the two are independent and must agree.
func TallyTruth(ctx context.Context, db *sql.DB, plan *dayplan.Plan) (accesslog.Report, error) {
	keyOf := map[string]string{}
	for _, op := range plan.Ops {
		keyOf[op.Op] = op.Key
	}
	rows, err := db.QueryContext(ctx,
		`SELECT customer_id, op, from_account, to_account, amount, memo, metadata FROM transfers ORDER BY rowid`)
	if err != nil {
		return accesslog.Report{}, fmt.Errorf("read transfers: %w", err)
	}
	defer rows.Close()
	type transfer struct {
		from, to, memo, metadata string
		amount                   int64
	}
	var rep accesslog.Report
	first := map[[2]string]transfer{}
	counted := map[[2]string]bool{}
	for rows.Next() {
		var customer, op string
		var t transfer
		if err := rows.Scan(&customer, &op, &t.from, &t.to, &t.amount, &t.memo, &t.metadata); err != nil {
			return accesslog.Report{}, fmt.Errorf("read transfers: %w", err)
		}
		key, ok := keyOf[op]
		if !ok {
			return accesslog.Report{}, fmt.Errorf("transfer of op %q, which the plan does not have", op)
		}
		rep.Executed++
		group := [2]string{customer, key}
		f, seen := first[group]
		if !seen {
			first[group] = t
			continue
		}
		if !counted[group] {
			counted[group] = true
			rep.Groups++
		}
		rep.DoubleTransfers++
		rep.MoneySentTwice += t.amount
		if t == f {
			rep.ExactDuplicates++
		} else {
			rep.EditedResubmissions++
		}
	}
	if err := rows.Err(); err != nil {
		return accesslog.Report{}, fmt.Errorf("read transfers: %w", err)
	}
	return rep, nil
}

// DayRun is a day replayed against a server in this process.
type DayRun struct {
	Result *ReplayResult
	// Truth is TallyTruth of the server's books after the day.
	Truth accesslog.Report
}

// ReplayInProcess starts a lab server for factory on a fresh in-memory
// database, with its access log going to accessLog (if not nil), replays
// plan against it and computes the tally's truth from its books.
func ReplayInProcess(ctx context.Context, factory stage.Factory, plan *dayplan.Plan, accessLog io.Writer, opts ReplayOptions) (*DayRun, error) {
	srv, err := server.New(ctx, server.Options{DB: ":memory:", Stage: factory, Lab: true, AccessLog: accessLog, Crash: func(string) {}})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	opts.URL, opts.Admin = hs.URL, srv.AdminToken()
	res, err := Replay(ctx, plan, opts)
	if err != nil {
		return nil, err
	}
	truth, err := TallyTruth(ctx, srv.Lab().DB.DB, plan)
	if err != nil {
		return nil, err
	}
	return &DayRun{Result: res, Truth: truth}, nil
}
