package request_test

import (
	"strings"
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
	f.Add("application/json", []byte(`{"nickname":"pay\u202eban","daily_limit":1}`))
	f.Add("application/json", []byte("{\"nickname\":\"pay\u200bday\ufeff\",\"daily_limit\":1}"))
	f.Add("application/json", []byte(`{"nickname":"family \ud83d\udc68\u200d\ud83d\udc67","daily_limit":1}`))
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
		for i, c := range s.Nickname {
			if !unicode.IsGraphic(c) && !strings.ContainsRune("\u200c\u200d", c) {
				t.Errorf("accepted %U, which a reader does not see, in %q", c, s.Nickname)
			}
			if strings.ContainsRune("\u200c\u200d", c) && (i == 0 || i == len(s.Nickname)-len(string(c))) {
				t.Errorf("accepted a joiner at an end of %q", s.Nickname)
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
