package conform

import (
	"fmt"
	"slices"
	"strings"
)

// A count witness that is a list the API cuts to one page (the first 50
// items, or the last) stops growing once the page is full: every
// operation after that is one the witness cannot show, and a right API
// would be reported money harmed. The run stops instead (exit 2), as it
// does when the API cannot be reached, with what to point the witness
// at. From the outside a full page is known in two ways:
//
//   - items came into the list at one end while as many or more went out
//     at the other, the rest unchanged in their places, so that it grew
//     by less than what came in: a window over a longer list (the newest
//     items first, or last). One reading shows it.
//   - the first principal's list stayed at one length, not empty, in two
//     readings in a row that were each due to grow it: a page of the
//     oldest items, which what the run makes never enters. One reading
//     cannot tell it from an operation answered 2xx that never executed,
//     nor from an API that handed the principal another's result: the
//     list then grows again in the next scenario, and the harm stands.
//     Two in a row cannot tell it from an API that answers 2xx and
//     executes nothing at all, which the message names. The second
//     principal's list is read only by the scenarios that, on a wrong
//     API, refuse it or hand it the first one's result, time after time,
//     so its readings in a row are not taken for a page.
//
// A total the API keeps, a number that counts the items, has no page.

// shortfall is a result whose witness moved less than was due: the
// result's index, the principal, the length its list was left at, and
// the result's Saw as the books judged it.
type shortfall struct {
	result    int
	principal int
	length    float64
	saw       string
}

// fullList is the error that stops a run whose count witness is a list
// that cannot grow: a page, full.
type fullList struct {
	principal int
	length    float64
	msg       string
}

func (e *fullList) Error() string { return e.msg }

// pageCheck returns a *fullList when principal i's count witness, read
// before and after a scenario that was due to move it by expected, is a
// full page (see above); nil for a witness that is no list.
func (r *runner) pageCheck(i int, before, after reading, expected float64) error {
	if before.items == nil || after.items == nil || expected <= 0 {
		return nil
	}
	in := arrived(before.items, after.items)
	grew := after.n - before.n
	if grew < expected && float64(in) > grew && window(before.items, after.items, in) {
		return r.fullList(i, after.n, fmt.Sprintf("%d new items came into it and %s went out: it shows at most %s, one page of a longer list", in, num(float64(in)-grew), num(after.n)))
	}
	if i != 0 {
		return nil
	}
	if grew != 0 || after.n == 0 {
		r.stalled = 0
		return nil
	}
	if r.stalled == 0 || r.stalledAt != after.n {
		r.stalled, r.stalledAt = 0, after.n
	}
	r.stalled++
	if r.stalled < 2 {
		return nil
	}
	return r.fullList(i, after.n, fmt.Sprintf("it held as many before and after %d scenarios in a row, each due to add to it: a page of at most %s that what the run makes never enters, or an API that answers 2xx and executes nothing; a total tells which", r.stalled, num(after.n)))
}

// fullList is the error that stops the run: principal i's witness is a
// list full at length items, as why says.
func (r *runner) fullList(i int, length float64, why string) *fullList {
	w := r.Profile.Witness
	return &fullList{principal: i, length: length, msg: fmt.Sprintf(
		"the witness cannot show what the run makes: %s's list (%s of GET %s) stopped growing at %s items: %s. "+
			"conform would report each operation it cannot show as money harmed. "+
			`Point the witness at a total the API keeps ("count" may point at a number that counts the items, such as "/total"), `+
			"or at a query whose list has room for every item the run makes (filtered to what the run makes, or a page larger than --max-operations)",
		r.Profile.Principals[i].Name, w.Count, w.Path, num(length), why)}
}

// window reports whether after is before slid by in new items: the new
// ones at one end, what went out from the other, and the items both show,
// one at least, the same and in the same places. A list whose items
// change between readings (a status that moves on) is no window: an item
// that changed counts as one in and one out, and an operation the API
// lost would pass for a page.
func window(before, after []string, in int) bool {
	kept := len(after) - in
	if in == 0 || kept < 1 || kept > len(before) {
		// Nothing kept shows no slide: every item changed as well.
		return false
	}
	// Newest first: the new items lead, and the oldest went out last.
	if slices.Equal(after[in:], before[:kept]) {
		return true
	}
	// Newest last: the new items trail, and the oldest went out first.
	return slices.Equal(after[:kept], before[len(before)-kept:])
}

// arrived counts the items of after that were not in before, each item
// as many times as it is there.
func arrived(before, after []string) int {
	left := make(map[string]int, len(before))
	for _, item := range before {
		left[item]++
	}
	n := 0
	for _, item := range after {
		if left[item] > 0 {
			left[item]--
			continue
		}
		n++
	}
	return n
}

// unjudge takes back the money harm of the results in out that full
// explains: each whose witness for full's principal was left short at
// the full list's length, and harmed by that alone (no finding of the
// answers said before the books'). Their money is then not observed.
func (r *runner) unjudge(out []Result, full *fullList) {
	for _, f := range r.short {
		if f.principal != full.principal || f.length != full.length || f.result >= len(out) {
			continue
		}
		res := &out[f.result]
		if res.Money != MoneyHarmed || !strings.HasPrefix(res.Saw, f.saw) {
			continue
		}
		res.Money = MoneyUnobserved
		res.Saw = fmt.Sprintf("could not observe: the witness's list was full at %s items, and showed none of what came after (the run stopped on it); ", num(full.length)) + res.Saw
	}
}
