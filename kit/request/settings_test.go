package request_test

import (
	"errors"
	"strings"
	"testing"

	"idemlab/kit/bank"
	"idemlab/kit/problem"
	"idemlab/kit/request"
)

func TestSettings_ReadsTheWholeRepresentation(t *testing.T) {
	for body, want := range map[string]bank.Settings{
		`{"nickname":"월급","daily_limit":2e6}`:                                  {Nickname: "월급", DailyLimit: 2_000_000},
		`{"daily_limit":0,"nickname":""}`:                                      {},
		`{"nickname":"x","daily_limit":1000000000000000}`:                      {Nickname: "x", DailyLimit: bank.MaxDailyLimit},
		`{"nickname":"` + strings.Repeat("가", 64) + `","daily_limit":1}`:       {Nickname: strings.Repeat("가", 64), DailyLimit: 1},
		`{"nickname":"給与\u3000口座","daily_limit":1}`:                            {Nickname: "給与\u3000口座", DailyLimit: 1},
		`{"nickname":"family \ud83d\udc68\u200d\ud83d\udc67","daily_limit":1}`: {Nickname: "family 👨\u200d👧", DailyLimit: 1},
		`{"nickname":"می\u200cخواهم","daily_limit":1}`:                         {Nickname: "می\u200cخواهم", DailyLimit: 1},
	} {
		got, err := request.Settings(post(body, "application/json"))
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", body, got, err, want)
		}
	}
}

func TestSettings_RefusesWithInvalidRequest(t *testing.T) {
	for _, c := range []struct{ body, detail string }{
		{`{"nickname":"x"}`, "daily_limit is required"},
		{`{"daily_limit":1}`, "nickname is required"},
		{`{"nickname":"x","daily_limit":1,"color":"red"}`, `"color"`},
		{`{"nickname":5,"daily_limit":1}`, "must be a string"},
		{`{"nickname":"` + strings.Repeat("가", 65) + `","daily_limit":1}`, "65 characters"},
		{`{"nickname":"a\tb","daily_limit":1}`, "character 2 is U+0009, a control character"},
		{`{"nickname":"pay\u202eban","daily_limit":1}`, "nickname must hold only characters a reader sees: character 4 is U+202E, an invisible format character"},
		{`{"nickname":"pay\u200bday","daily_limit":1}`, "character 4 is U+200B, an invisible format character"},
		{`{"nickname":"\ufeffpayday","daily_limit":1}`, "character 1 is U+FEFF, an invisible format character"},
		{"{\"nickname\":\"pay\ufeffday\",\"daily_limit\":1}", "character 4 is U+FEFF"},
		{`{"nickname":"pay\u2028day","daily_limit":1}`, "character 4 is U+2028, a line or paragraph separator"},
		{`{"nickname":"pay\u2029day","daily_limit":1}`, "character 4 is U+2029, a line or paragraph separator"},
		{`{"nickname":"pay\u200d","daily_limit":1}`, "character 4 is U+200D, an invisible format character"},
		{`{"nickname":"pay \u200c day","daily_limit":1}`, "character 5 is U+200C"},
		{`{"nickname":"pay\ue000","daily_limit":1}`, "character 4 is U+E000, a private-use character"},
		{`{"nickname":"pay\u0378","daily_limit":1}`, "character 4 is U+0378, a code point Unicode does not assign"},
		{`{"nickname":"x","daily_limit":-1}`, "between 0"},
		{`{"nickname":"x","daily_limit":1000000000000001}`, "between 0"},
		{`{"nickname":"x","daily_limit":0.5}`, "whole number"},
		{`{"nickname":"x","daily_limit":"1"}`, "a string"},
	} {
		_, err := request.Settings(post(c.body, "application/json"))
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Type != problem.InvalidRequest || !strings.Contains(pe.Detail, c.detail) {
			t.Errorf("%s: %v; want invalid-request naming %q", c.body, err, c.detail)
		}
	}
}
