package request_test

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"idemlab/kit/bank"
	"idemlab/kit/request"
)

// FuzzSettings holds the settings decoder to docs/api.md for any body:
// settings within the published limits that the body spells, or a
// documented refusal.
func FuzzSettings(f *testing.F) {
	f.Add("application/json", []byte(`{"nickname":"월급","daily_limit":2e6}`))
	f.Add("application/json", []byte(`{"nickname":"x","daily_limit":1000000000001}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		s, err := request.Settings(fuzzPost("/accounts/acc_a/settings", contentType, body))
		if err != nil {
			checkRefusal(t, contentType, body, err)
			return
		}
		fields := checkAccepted(t, contentType, body, body, "nickname", "daily_limit")
		if want, _ := fields["nickname"].(string); s.Nickname != want {
			t.Errorf("nickname read as %q, the body says %q", s.Nickname, want)
		}
		if n := utf8.RuneCountInString(s.Nickname); n > bank.MaxNickname {
			t.Errorf("accepted a nickname of %d characters", n)
		}
		for _, c := range s.Nickname {
			if unicode.IsControl(c) {
				t.Errorf("accepted a control character in %q", s.Nickname)
			}
		}
		if s.DailyLimit < 0 || s.DailyLimit > bank.MaxDailyLimit {
			t.Errorf("accepted a daily limit of %d", s.DailyLimit)
		}
		again, err := request.Settings(fuzzPost("/accounts/acc_a/settings", "application/json", mustMarshal(t, s)))
		if err != nil || again != s {
			t.Errorf("read %+v, then %+v (%v) from the same settings written again", s, again, err)
		}
	})
}
