package auth

import "math"

// FirstInvisible returns the position (from 1, in characters) and the
// value of token's first character that is not visible ASCII (! to ~), or
// 0 if it has none. Only visible ASCII goes through an Authorization
// header as it was typed: a space at either end is trimmed away, and
// other characters are the client's to encode as it likes, so a server
// whose token holds one may never be opened again.
func FirstInvisible(token string) (int, rune) {
	n := 0
	for _, c := range token {
		n++
		if c < '!' || c > '~' {
			return n, c
		}
	}
	return 0, 0
}

// EntropyBits estimates how many bits of entropy a token of visible ASCII
// holds, erring low: the Shannon entropy of its characters (from how
// often each one occurs in it), counted once for each character that
// begins no pattern seen earlier in the token. A character counts only if
// its steps from the three before it (in character codes) have not come
// in that order before, so that a run (abcd…), a seesaw (abab…) or a word
// said again adds nothing. 32 hexadecimal digits drawn at random (128
// bits) come out at 115 on average, 93 at the lowest of 100,000 draws;
// one character repeated, at 0.
func EntropyBits(token string) float64 {
	counts := make(map[byte]int)
	for i := range len(token) {
		counts[token[i]]++
	}
	perChar := 0.0
	for _, c := range counts {
		p := float64(c) / float64(len(token))
		perChar -= p * math.Log2(p)
	}
	seen := make(map[[3]int]bool)
	fresh := 0
	for i := range len(token) {
		if i < 3 {
			fresh++
			continue
		}
		steps := [3]int{step(token, i-2), step(token, i-1), step(token, i)}
		if !seen[steps] {
			seen[steps] = true
			fresh++
		}
	}
	return float64(fresh) * perChar
}

// step is the difference between token's character i and the one before.
func step(token string, i int) int { return int(token[i]) - int(token[i-1]) }
