package request

import (
	"net/http"
	"unicode/utf8"

	"idemlab/kit/bank"
)

// Settings reads a PUT /accounts/{id}/settings body: the whole
// representation, both members required, as strictly as a transfer's body
// (one JSON object, no unknown or duplicate members, the right types). The
// nickname is at most bank.MaxNickname characters, each one a reader
// sees (no control, invisible or bidirectional character: see hidden); the daily limit an integer number of won in
// 0..bank.MaxDailyLimit. It returns a problem error: 415, 413 or 400
// invalid-request.
func Settings(r *http.Request) (bank.Settings, error) {
	_, members, err := read(r, "nickname", "daily_limit")
	if err != nil {
		return bank.Settings{}, err
	}
	var s bank.Settings
	d := decoder{members: members}
	s.Nickname = d.nickname("nickname")
	s.DailyLimit = d.won("daily_limit", 0, bank.MaxDailyLimit)
	if d.err != nil {
		return bank.Settings{}, d.err
	}
	return s, nil
}

func (d *decoder) nickname(name string) string {
	s, ok := d.str(name, true)
	if !ok {
		return ""
	}
	if n := utf8.RuneCountInString(s); n > bank.MaxNickname {
		d.fail(name, "is %d characters; the limit is %d", n, bank.MaxNickname)
	}
	if at, c, why := hidden(s); at > 0 {
		d.fail(name, "must hold only characters a reader sees: character %d is %U, %s", at, c, why)
	}
	return s
}
