package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Short formats a number in at most five characters: 950, 12.5k, 3.2M.
func Short(n int64) string {
	if n < 0 {
		return "-" + Short(-n)
	}
	switch {
	case n < 10_000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	case n < 1_000_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
	default:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e9)) + "G"
	}
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// Age formats a duration the way the key table shows it: 850ms, 12s, 3m, 2h.
func Age(d time.Duration) string {
	switch {
	case d < 0:
		// A row newer than the model's clock, which moves once a second:
		// in the unit of the rows under it ("0ms", "81ms"), not "0s".
		return "0ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	default:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
}

// bigDigits are three-row glyphs for the counters an instructor points at.
var bigDigits = map[rune][3]string{
	'0': {"┏━┓", "┃ ┃", "┗━┛"},
	'1': {" ┓ ", " ┃ ", " ┻ "},
	'2': {"┏━┓", "┏━┛", "┗━━"},
	'3': {"┏━┓", " ━┫", "┗━┛"},
	'4': {"╻ ╻", "┗━┫", "  ╹"},
	'5': {"┏━━", "┗━┓", "┗━┛"},
	'6': {"┏━━", "┣━┓", "┗━┛"},
	'7': {"━━┓", "  ┃", "  ╹"},
	'8': {"┏━┓", "┣━┫", "┗━┛"},
	'9': {"┏━┓", "┗━┫", "┗━┛"},
	'k': {"╻  ", "┣┛ ", "╹┗ "},
	'M': {"┳┳┓", "┃┃┃", "╹╹╹"},
	'.': {"   ", "   ", " ╹ "},
}

// Big renders n in bigDigits, three lines of 4 columns a glyph.
func Big(n int64) [3]string {
	var rows [3]strings.Builder
	for i, c := range Short(n) {
		g, ok := bigDigits[c]
		if !ok {
			continue
		}
		for r := range rows {
			if i > 0 {
				rows[r].WriteByte(' ')
			}
			rows[r].WriteString(g[r])
		}
	}
	return [3]string{rows[0].String(), rows[1].String(), rows[2].String()}
}

// sparkBars are the eight heights of a sparkline cell.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as one line of bars, scaled to the largest (or to
// ceiling, if that is larger). Zero draws a blank, so that quiet seconds
// look quiet.
func Sparkline(values []int64, ceiling int64) string {
	top := ceiling
	for _, v := range values {
		top = max(top, v)
	}
	var b strings.Builder
	for _, v := range values {
		switch {
		case v <= 0 || top == 0:
			b.WriteByte(' ')
		default:
			b.WriteRune(sparkBars[min(int((v*int64(len(sparkBars))-1)/top), len(sparkBars)-1)])
		}
	}
	return b.String()
}
