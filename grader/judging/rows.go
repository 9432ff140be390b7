package judging

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/kit/labctl"
)

// KeyRows returns the rows of idempotency_keys that hold key, in any
// column (a stage may store it alone or inside a composite scope).
func KeyRows(st labctl.State, key string) []map[string]any {
	var out []map[string]any
	for _, row := range st.Keys {
		for col, v := range row {
			if s, ok := v.(string); ok && col != "rowid" && strings.Contains(s, key) {
				out = append(out, row)
				break
			}
		}
	}
	return out
}

// State values of the key table's state column, from stage 3 on
// (docs/api.md, GET /lab/state).
const (
	StateInProgress = "in_progress"
	StateCompleted  = "completed"
)

// RowState reads a key row's state column; ok is false when the table has
// no state column (stages 1 and 2, where a row exists only once its
// request has run).
func RowState(row map[string]any) (state string, ok bool) {
	v, ok := row["state"]
	if !ok {
		return "", false
	}
	s, _ := v.(string)
	return s, true
}

// KeyInProgress reports whether st holds key in progress.
func KeyInProgress(st labctl.State, key string) bool {
	for _, row := range KeyRows(st, key) {
		if s, ok := RowState(row); ok && s == StateInProgress {
			return true
		}
	}
	return false
}

// noKeyRow is what a report says of a key the key table holds no row of.
const noKeyRow = "no row of the key in idempotency_keys"

// DescribeRows renders key rows for a report, "{col: value, …}" each;
// none reads as DescribeKeyRows says it.
func DescribeRows(rows []map[string]any) string {
	if len(rows) == 0 {
		return noKeyRow
	}
	parts := make([]string, len(rows))
	for i, row := range rows {
		var cols []string
		for _, c := range slices.Sorted(maps.Keys(row)) {
			if c == "rowid" {
				continue
			}
			v := []rune(fmt.Sprint(row[c]))
			if len(v) > 48 {
				v = append(v[:45], '…')
			}
			cols = append(cols, c+": "+string(v))
		}
		parts[i] = "{" + strings.Join(cols, ", ") + "}"
	}
	return strings.Join(parts, "; ")
}

// DescribeKeyRows says in a phrase what the key table holds of a key, its
// rows as KeyRows finds them: "no row of the key in idempotency_keys",
// "key row {…}", or "2 key rows: {…}; {…}". A story reads it after "the
// lab state shows" or "and".
func DescribeKeyRows(rows []map[string]any) string {
	switch len(rows) {
	case 0:
		return noKeyRow
	case 1:
		return "key row " + DescribeRows(rows)
	}
	return fmt.Sprintf("%d key rows: %s", len(rows), DescribeRows(rows))
}

// ToldToWait reads from st which harm a client of key was left with when
// it stopped retrying, every retry told 409 request-in-progress: the key
// table says it, not the 409. A row still in progress is a stuck key; a
// completed row, or none in a table the lab shows whole, is no usable
// answer (the server tells every retry to wait of its own accord). seen
// is false when the table cannot say: the lab shows no key table, or
// shows its newest labctl.MaxStateKeys rows and key is not among them;
// the harm is then no usable answer all the same, the lesser of the two
// and the one the client's answers show alone (a key still in progress
// would be a stuck key besides). rows says what the table holds of key
// (DescribeKeyRows), or why it cannot say.
func ToldToWait(st labctl.State, key string) (harm Harm, rows string, seen bool) {
	found := KeyRows(st, key)
	switch {
	case len(st.Keys) == 0:
		return NoUsableAnswer, "no key table (the lab shows none)", false
	case key == "" || len(found) == 0 && len(st.Keys) >= labctl.MaxStateKeys:
		return NoUsableAnswer, "no row of the key among the newest rows the lab shows, not the whole key table", false
	case KeyInProgress(st, key):
		return StuckKey, DescribeKeyRows(found), true
	}
	return NoUsableAnswer, DescribeKeyRows(found), true
}
