package pgdb

import "testing"

// TestNumberPlaceholders catches a rewrite that numbers a ? inside text
// (a literal, a quoted name, a comment, a function body) or skips one
// after such text.
func TestNumberPlaceholders(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT * FROM t WHERE a = ? AND b = ?`, `SELECT * FROM t WHERE a = $1 AND b = $2`},
		{`INSERT INTO t VALUES ('?', ?, "a?b", ?)`, `INSERT INTO t VALUES ('?', $1, "a?b", $2)`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{"SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{`SELECT /* ? */ ?`, `SELECT /* ? */ $1`},
		{`SELECT $$ ? $$, ?, $f$ ? $f$, ?`, `SELECT $$ ? $$, $1, $f$ ? $f$, $2`},
		{`VALUES (?,?,?,?,?,?,?,?,?,?,?)`, `VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`},
	} {
		if got := numberPlaceholders(tc.in); got != tc.want {
			t.Errorf("numberPlaceholders(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
