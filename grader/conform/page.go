package conform

import (
	"context"
	"fmt"
	"slices"
)

// A count witness that is a list the API cuts to one page (the first 50
// items, or the last) stops growing once the page is full: every
// operation after that is one the witness cannot show, and a right API
// would be reported money harmed. The run stops instead (exit 2), as it
// does when the API cannot be reached, with what to point the witness
// at. Each reading of a list that grew by less than was due, whichever
// principal's and wherever the books read it, is settled there, before
// anything else is sent:
//
//   - items came into the list at one end while as many or more went out
//     at the other, the rest unchanged in their places, so that it grew
//     by less than what came in: a window over a longer list (the newest
//     items first, or last). The reading shows it.
//   - else, unless the list is empty or shorter than before (a page is
//     neither), conform sends one more operation of the principal's,
//     under a fresh key, and reads the list again. If it did not grow,
//     the list is full: a page of the oldest items, which what the run
//     makes never enters, or an API that answers 2xx and executes
//     nothing, which the message names. If it grew, the list has room,
//     and the shortfall is the API's: an operation answered 2xx that
//     never executed, or a principal handed another's result (the fresh
//     key is one no principal has used, so such an API executes it).
//     That operation counts against --max-operations: with none left
//     to send, or the one sent refused, the lab cannot tell, and the
//     money is not observed, never harmed on what it could not see.
//
// No result is judged from a full page, then: the run stops on the
// first reading it explains. A total the API keeps, a number that counts
// the items, has no page.

// settle settles a reading of principal i's count witness, before and
// after, that moved less than expected: it returns an error when the
// list is a full page (see above); else what the operation sent to tell
// showed, for the report ("the list has room": the shortfall is the
// API's), or, with cannot, why the lab cannot tell. A witness that is no
// list, or a list that shrank or is empty, is not settled: a page is
// neither, and the shortfall is the API's.
func (r *runner) settle(ctx context.Context, i int, before, after reading, expected float64) (why string, cannot bool, err error) {
	if before.items == nil || after.items == nil || expected <= 0 {
		return "", false, nil
	}
	in := arrived(before.items, after.items)
	grew := after.n - before.n
	if float64(in) > grew && window(before.items, after.items, in) {
		return "", false, r.fullList(i, after.n, fmt.Sprintf("%d new items came into it and %s went out: it shows at most %s, one page of a longer list", in, num(float64(in)-grew), num(after.n)))
	}
	if after.n == 0 || grew < 0 {
		return "", false, nil
	}
	const tell = "but a list left short may be a full page, and "
	if r.budget < 1 {
		return tell + "--max-operations left no operation to send to tell", true, nil
	}
	r.budget--
	o, err := r.newOp(i)
	if err != nil {
		return "", false, err
	}
	a := r.send(ctx, r.client, o, sf(r.key()))
	again, err := r.witness(ctx, i)
	if err != nil {
		return "", false, err
	}
	if !a.ok() {
		return tell + "one more operation, sent to tell, was answered " + a.String(), true, nil
	}
	if again.n > after.n {
		return "and one more operation sent after it came into the list: the list has room", false, nil
	}
	if in := arrived(after.items, again.items); float64(in) > again.n-after.n && window(after.items, again.items, in) {
		return "", false, r.fullList(i, again.n, fmt.Sprintf("one more operation, sent to tell a full page from a loss, came into it as another went out: it shows at most %s, one page of a longer list", num(again.n)))
	}
	if again.n < after.n {
		return "", false, nil
	}
	return "", false, r.fullList(i, again.n, fmt.Sprintf("it held as many after a reading due to add to it, and again after one more operation sent to tell a full page from a loss, answered %d: a page of at most %s that what the run makes never enters, or an API that answers 2xx and executes nothing; a total tells which", a.status, num(again.n)))
}

// fullList is the error that stops the run: principal i's witness is a
// list full at length items, as why says.
func (r *runner) fullList(i int, length float64, why string) error {
	w := r.Profile.Witness
	return fmt.Errorf(
		"the witness cannot show what the run makes: %s's list (%s of GET %s) stopped growing at %s items: %s. "+
			"conform would report each operation it cannot show as money harmed. "+
			`Point the witness at a total the API keeps ("count" may point at a number that counts the items, such as "/total"), `+
			"or at a query whose list has room for every item the run makes (filtered to what the run makes, or a page larger than --max-operations)",
		r.Profile.Principals[i].Name, w.Count, w.Path, num(length), why)
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
