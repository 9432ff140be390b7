package auth

import (
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFirstInvisible(t *testing.T) {
	for _, c := range []struct {
		token string
		at    int
		char  rune
	}{
		{"adm_demo", 0, 0},
		{"!~", 0, 0},
		{strings.Repeat(" ", 32), 1, ' '},
		{"adm_demo ", 9, ' '},
		{"adm\tdemo", 4, '\t'},
		{"adm_démo", 6, 'é'},
		{"adm_demo\u200b", 9, '\u200b'},
		{"adm\x7f", 4, '\x7f'},
	} {
		if at, char := FirstInvisible(c.token); at != c.at || char != c.char {
			t.Errorf("%q: %d %q, want %d %q", c.token, at, char, c.at, c.char)
		}
	}
}

// TestEntropyBits_WeakTokensScoreLow: what a person types when told "32
// characters" (a character, a word or a run repeated) scores far below
// what a random draw of 32 hexadecimal digits scores, in the worst of
// 10,000 draws.
func TestEntropyBits_WeakTokensScoreLow(t *testing.T) {
	const floor = 80
	for _, weak := range []string{
		strings.Repeat("a", 32),
		strings.Repeat("ab", 16),
		strings.Repeat("adm_demo", 4),
		strings.Repeat("password1", 4),
		"abcdefghijklmnopqrstuvwxyzABCDEF",
		"01234567890123456789012345678901",
	} {
		if bits := EntropyBits(weak); bits >= floor {
			t.Errorf("%q scores %.0f bits, want under %d", weak, bits, floor)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var b [16]byte
	for range 10000 {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		token := hex.EncodeToString(b[:])
		if bits := EntropyBits(token); bits < floor {
			t.Fatalf("the random %q scores %.0f bits, want at least %d", token, bits, floor)
		}
	}
}
