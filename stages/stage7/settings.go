package stage7

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
// account's settings with the body and answers 200 with the new settings
// and their ETag.
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
	// TODO(stage 7): require If-Match, the ETag of the settings this change
	// was based on: request.IfMatch(r.Header) reads every If-Match field
	// as RFC 9110 does. Without it the PUT names no version, and writing
	// it would overwrite whatever another clerk saved since this one read:
	// answer 428 (problem.PreconditionRequired) and change nothing. The
	// same for If-Match: *, which RFC 9110 lets match any settings: on
	// money that is a PUT without a version, so say why in the detail.
	// If-Match may list several tags: it holds when ANY listed strong tag
	// is the current version (read ours out of them with versions); a
	// weak W/"…" tag never matches, because If-Match compares strongly.
	// When no listed tag names the current version, or the header is not
	// a list of tags at all: 412 (problem.PreconditionFailed), nothing
	// changed.

	// The core confirms every change of a limit, outside any transaction.
	if err := s.env.Bank.CallCore(ctx); err != nil {
		problem.Write(w, err)
		return
	}
	// TODO(stage 7): make this write conditional. As it is, the last clerk
	// to save wins, whatever version they read: clerk B, saving a copy read
	// before clerk A saved, silently puts back what A changed (A lowered
	// the daily limit; B renamed the account; the old limit is back, and
	// money moves past A's limit). Check and write in one statement:
	//
	//	UPDATE account_settings SET nickname = ?, daily_limit = ?, version = version + 1
	//	WHERE account_id = ? AND version IN (…the versions If-Match listed…)
	//
	// No row written means the version moved on since this clerk read it:
	// 412 (problem.PreconditionFailed), nothing changed. Moving the version
	// on in every write, one that changes nothing included, is what turns
	// the other clerks' ETags stale. Do not SELECT the version first and
	// compare it in Go: another clerk's write can land between your read
	// and your write (the core call sits right there), and yours would
	// overwrite it.
	if _, err := s.env.DB.ExecContext(ctx,
		`UPDATE account_settings SET nickname = ?, daily_limit = ? WHERE account_id = ?`,
		want.Nickname, want.DailyLimit, account); err != nil {
		problem.Write(w, err)
		return
	}
	// TODO(stage 7): answer with what this write made: want, at the version
	// the UPDATE made (one more than the listed version that was current;
	// RETURNING version tells which). A read after the write may already
	// see another clerk's later write.
	settings, version, err := s.env.Bank.AccountSettings(ctx, auth.Customer(ctx), account)
	if err != nil {
		problem.Write(w, err)
		return
	}
	writeSettings(w, settings, version)
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
