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
		`{"nickname":"월급","daily_limit":2e6}`:                            {Nickname: "월급", DailyLimit: 2_000_000},
		`{"daily_limit":0,"nickname":""}`:                                {},
		`{"nickname":"x","daily_limit":1000000000000000}`:                {Nickname: "x", DailyLimit: bank.MaxDailyLimit},
		`{"nickname":"` + strings.Repeat("가", 64) + `","daily_limit":1}`: {Nickname: strings.Repeat("가", 64), DailyLimit: 1},
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
		{`{"nickname":"a\tb","daily_limit":1}`, "control characters"},
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
