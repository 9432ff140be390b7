package replay

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"

	"idemlab/grader/dayplan"
	"idemlab/grader/targets"
	"idemlab/kit/accesslog"
	"idemlab/kit/bank"
	"idemlab/kit/labdb"
	"idemlab/kit/server"
	"idemlab/kit/stage"
)

// TallyTruth is the answer key of stage 0's Tally, computed without the
// access log: from the server's transfers table (what was executed, in
// the order it was committed) and the plan (which key each op was sent
// with). Tally reads the log a real team would have; this reads the
// bank's own books, so the two are independent and must agree.
func TallyTruth(ctx context.Context, books *bank.Bank, plan *dayplan.Plan) (accesslog.Report, error) {
	keyOf := map[string]string{}
	for _, op := range plan.Ops {
		keyOf[op.Op] = op.Key
	}
	transfers, err := books.Transfers(ctx)
	if err != nil {
		return accesslog.Report{}, err
	}
	var rep accesslog.Report
	first := map[[2]string]bank.TransferRecord{}
	counted := map[[2]string]bool{}
	for _, t := range transfers {
		key, ok := keyOf[t.Op]
		if !ok {
			return accesslog.Report{}, fmt.Errorf("transfer of op %q, which the plan does not have", t.Op)
		}
		rep.Executed++
		if key == "" {
			// Executed, and sent without a key: nothing in the log can
			// match a retry to it, so it is in no group.
			continue
		}
		group := [2]string{t.Customer, key}
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
		rep.MoneySentTwice += t.Amount
		if t == f {
			rep.ExactDuplicates++
		} else {
			rep.EditedResubmissions++
		}
	}
	return rep, nil
}

// DayRun is a day replayed against a server in this process.
type DayRun struct {
	Result *Result
	// Truth is TallyTruth of the server's books after the day: the
	// answer key of the access log, read only when there is one (a read
	// of every transfer, a second or so at the end of a large day).
	Truth accesslog.Report
}

// InProcess starts a lab server for factory on a fresh database of
// its own (opts.DB), with its access log going to accessLog (if not nil)
// and its postings to opts.CoreURL (if set; else to a core of its own),
// replays plan against it and, with an access log, computes the tally's
// truth from its books. The replay reaches the server over in-memory
// connections (targets.ServeInMemory), or over loopback TCP when
// opts.Base, the caller's own transport, is set.
func InProcess(ctx context.Context, factory stage.Factory, plan *dayplan.Plan, accessLog io.Writer, opts Options) (*DayRun, error) {
	db := opts.DB
	if db == "" {
		db = labdb.TestTarget()
	}
	srv, err := server.New(ctx, server.Options{DB: db, OwnDB: true, Stage: factory, Lab: true, AccessLog: accessLog, Crash: func(string) {}, CoreURL: opts.CoreURL})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if opts.Base == nil {
		mem := targets.ServeInMemory(srv.Handler())
		defer mem.Close()
		opts.URL, opts.Base = mem.URL, mem.Transport
	} else {
		// The caller's transport dials the network: serve it there.
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		opts.URL = hs.URL
	}
	opts.Admin = srv.AdminToken()
	res, err := Run(ctx, plan, opts)
	if err != nil {
		return nil, err
	}
	run := &DayRun{Result: res}
	if accessLog != nil {
		if run.Truth, err = TallyTruth(ctx, srv.Lab().Bank, plan); err != nil {
			return nil, err
		}
	}
	return run, nil
}
