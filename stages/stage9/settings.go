package stage9

import (
	"net/http"
	"strconv"
	"strings"

	"idemlab/kit/auth"
	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/kit/request"
	"idemlab/kit/respond"
)

// GetSettings answers GET /accounts/{id}/settings: the account's settings
// and, in ETag, the version they are at.
func (s *Server) GetSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	settings, version, err := s.env.Bank.AccountSettings(ctx, auth.Customer(ctx), r.PathValue("id"))
	if err != nil {
		problem.Write(w, err)
		return
	}
	writeSettings(w, settings, version)
}

// PutSettings answers PUT /accounts/{id}/settings: it replaces the
// account's settings with the body, if, and only if, they are still at the
// version the If-Match header names. Without If-Match it answers 428
// precondition-required; when the version is no longer the current one,
// 412 precondition-failed. Either way nothing changes. It answers 200
// with the new settings and their ETag.
func (s *Server) PutSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	account := r.PathValue("id")
	want, err := request.Settings(r)
	if err == nil {
		_, err = s.env.Bank.Account(ctx, auth.Customer(ctx), account)
	}
	if err != nil {
		problem.Write(w, err)
		return
	}
	// A PUT without a version would overwrite whatever another clerk saved
	// since this one read: refuse it rather than guess.
	ifMatch := strings.Join(r.Header.Values("If-Match"), ", ")
	if ifMatch == "" || ifMatch == "*" {
		problem.Write(w, problem.New(problem.PreconditionRequired,
			"send If-Match with the ETag of the settings this change was based on (GET /accounts/%s/settings)", account))
		return
	}
	based, ok := parseETag(ifMatch)
	if !ok {
		problem.Write(w, stale(account, ifMatch))
		return
	}
	// The core confirms every change of a limit, outside any transaction.
	if err := s.env.Bank.CallCore(ctx); err != nil {
		problem.Write(w, err)
		return
	}
	// One statement both checks the version and writes: there is no moment
	// between a read and a write in which another clerk's change can land
	// and then be overwritten. Every write moves the version on, so the
	// ETag the other clerks hold stops matching.
	res, err := s.env.DB.ExecContext(ctx,
		`UPDATE account_settings SET nickname = ?, daily_limit = ?, version = version + 1
		 WHERE account_id = ? AND version = ?`,
		want.Nickname, want.DailyLimit, account, based)
	if err != nil {
		problem.Write(w, err)
		return
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		problem.Write(w, err)
		return
	case n == 0:
		problem.Write(w, stale(account, ifMatch))
		return
	}
	writeSettings(w, want, based+1)
}

// stale is the answer to a PUT based on a version that is not the current
// one.
func stale(account, ifMatch string) error {
	return problem.New(problem.PreconditionFailed,
		"If-Match %s is not the current version of the settings of %s: someone changed them after you read them; GET them again and apply your change to what you get", ifMatch, account)
}

// etag is the strong entity tag of the settings at version: it changes
// with every write, whichever member the write changed.
func etag(version int64) string {
	return `"v` + strconv.FormatInt(version, 10) + `"`
}

// parseETag reads the version out of an If-Match that names exactly one
// of our entity tags, as etag wrote it. Anything else names no version
// of ours: a weak tag (W/"…") never matches, because If-Match compares
// strongly, and a list is not read.
func parseETag(ifMatch string) (version int64, ok bool) {
	tag := strings.TrimSpace(ifMatch)
	digits := strings.TrimSuffix(strings.TrimPrefix(tag, `"v`), `"`)
	version, err := strconv.ParseInt(digits, 10, 64)
	return version, err == nil && etag(version) == tag
}

// writeSettings sends settings at version, with their ETag.
func writeSettings(w http.ResponseWriter, settings bank.Settings, version int64) {
	w.Header().Set("ETag", etag(version))
	respond.JSON(w, http.StatusOK, settings)
}
