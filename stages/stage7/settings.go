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
	// TODO(stage 7): when you are done, a PUT is written only if it names
	// the version of the settings it was based on. Here, before the core
	// call: a PUT without If-Match, or with If-Match: *, names no version,
	// and writing it would overwrite whatever another clerk saved since
	// this one read: it gets 428 (problem.PreconditionRequired) and changes
	// nothing. An If-Match is a list (RFC 9110): it names the current
	// version when any strong tag in it does; a weak tag never does; one
	// that is malformed or names none of our versions gets 412
	// (problem.PreconditionFailed), and nothing changes. The kit reads the
	// header's list for you (request.IfMatch), and refuses one too long to
	// check with an error to send as it is (400); versions, below, picks
	// our versions out of it.

	// The core confirms every change of a limit, outside any transaction.
	if err := s.env.Bank.CallCore(ctx); err != nil {
		problem.Write(w, err)
		return
	}
	// TODO(stage 7): as it is, the last clerk to save wins, whatever
	// version they read: a clerk saving a copy read before another's save
	// silently puts back what the other changed (a lowered daily limit
	// included, and then money moves past it). When you are done, this
	// write happens only over the version If-Match named, even when
	// another clerk's save lands between the check above and here (the
	// core call sits in between), on SQLite as on PostgreSQL: lesson 07,
	// "One conditional write", weighs the ways. Every successful write
	// makes a new version, whatever it changed, so that every other
	// clerk's ETag stops matching. A write that found the version moved on
	// changes nothing and gets 412 (problem.PreconditionFailed).
	if _, err := s.env.DB.ExecContext(ctx,
		`UPDATE account_settings SET nickname = ?, daily_limit = ? WHERE account_id = ?`,
		want.Nickname, want.DailyLimit, account); err != nil {
		problem.Write(w, err)
		return
	}
	// TODO(stage 7): the answer names the state this write made: the
	// settings the clerk sent and the ETag of the version the write created,
	// the one the clerk's next PUT will carry, not the If-Match it sent
	// (already stale), and not another clerk's version saved just after
	// this one (lesson 07, "The ETag names the version").
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
