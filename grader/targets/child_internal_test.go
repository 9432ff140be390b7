package targets

import (
	"strings"
	"testing"
)

// TestChild_OptionsReachTheChild: what a Child is told (its database,
// admin token, core, random tokens, connections opened ahead) is what the
// server it starts is given, through the environment; a child told nothing
// of the last two, by a process whose environment says nothing of them
// either, draws no tokens at random and opens no connections ahead.
func TestChild_OptionsReachTheChild(t *testing.T) {
	for _, c := range []Child{
		{DB: "a.db", Admin: "adm_a", CoreURL: "http://127.0.0.1:1"},
		{DB: "b.db", Admin: "adm_b", RandomTokens: true, OpenAhead: true},
	} {
		t.Run(c.DB, func(t *testing.T) {
			for _, name := range []string{EnvDB, EnvAdmin, EnvCore, EnvRandomTokens, EnvOpenAhead} {
				t.Setenv(name, "") // nothing inherited from this process
			}
			for _, kv := range c.environ("127.0.0.1:0") {
				if name, value, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "IDEMLAB_") {
					t.Setenv(name, value)
				}
			}
			opts := childOptions()
			if opts.DB != c.DB || opts.AdminToken != c.Admin || opts.CoreURL != c.CoreURL ||
				opts.RandomTokens != c.RandomTokens || opts.OpenAhead != c.OpenAhead {
				t.Errorf("the child was told %+v and its server got %+v", c, opts)
			}
		})
	}
}
