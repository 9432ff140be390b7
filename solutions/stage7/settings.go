package stage7

import (
	"database/sql"
	"errors"
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
// account's settings with the body if, and only if, they are still at a
// version the If-Match header names (RFC 9110: any strong entity tag of
// the list that is the current one; a weak tag never matches). Without
// If-Match, or with If-Match: *, it answers 428 precondition-required;
// when no tag names the current version, 412 precondition-failed. Either
// way nothing changes. It answers 200 with the new settings and their
// ETag: every PUT that succeeds makes a new version, even one that
// changes nothing.
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
	ifMatch := strings.Join(r.Header.Values("If-Match"), ", ")
	// A list longer than the kit reads is refused before any statement:
	// the write below binds one parameter for each version it lists.
	pre, ok, err := request.IfMatch(r.Header)
	if err != nil {
		problem.Write(w, err)
		return
	}
	switch {
	case !pre.Sent:
		// A PUT without a version would overwrite whatever another clerk
		// saved since this one read: refuse it rather than guess.
		problem.Write(w, problem.New(problem.PreconditionRequired,
			"send If-Match with the ETag of the settings this change was based on (GET /accounts/%s/settings)", account))
		return
	case pre.Any:
		// RFC 9110 lets * match any current settings; on money that is a
		// PUT without a version, and it would write over another clerk's
		// change just the same.
		problem.Write(w, problem.New(problem.PreconditionRequired,
			"If-Match: * would write over whatever another clerk saved since you read; send the ETag of the settings this change was based on (GET /accounts/%s/settings)", account))
		return
	}
	based := versions(pre.Strong)
	if !ok || len(based) == 0 {
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
	// ETag the other clerks hold stops matching; RETURNING tells which
	// version this write made, whichever listed tag was the current one.
	args := []any{want.Nickname, want.DailyLimit, account}
	for _, v := range based {
		args = append(args, v)
	}
	var made int64
	err = s.env.DB.QueryRowContext(ctx,
		`UPDATE account_settings SET nickname = ?, daily_limit = ?, version = version + 1
		 WHERE account_id = ? AND version IN (?`+strings.Repeat(", ?", len(based)-1)+`)
		 RETURNING version`, args...).Scan(&made)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		problem.Write(w, stale(account, ifMatch))
		return
	case err != nil:
		problem.Write(w, err)
		return
	}
	writeSettings(w, want, made)
}

// stale is the answer to a PUT whose If-Match names no current version.
func stale(account, ifMatch string) error {
	return problem.New(problem.PreconditionFailed,
		"If-Match %s is not the current version of the settings of %s: someone changed them after you read them; GET them again and apply your change to what you get", ifMatch, account)
}

// etag is the strong entity tag of the settings at version: it changes
// with every write, whichever member the write changed.
func etag(version int64) string {
	return `"v` + strconv.FormatInt(version, 10) + `"`
}

// versions reads the versions out of the strong entity tags that are ours,
// as etag writes them; a tag of any other form names no version of ours.
func versions(tags []string) []int64 {
	var out []int64
	for _, tag := range tags {
		digits := strings.TrimSuffix(strings.TrimPrefix(tag, `"v`), `"`)
		if v, err := strconv.ParseInt(digits, 10, 64); err == nil && etag(v) == tag {
			out = append(out, v)
		}
	}
	return out
}

// writeSettings sends settings at version, with their ETag.
func writeSettings(w http.ResponseWriter, settings bank.Settings, version int64) {
	w.Header().Set("ETag", etag(version))
	respond.JSON(w, http.StatusOK, settings)
}
