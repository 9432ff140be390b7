package ladder_test

import (
	"slices"
	"strings"
	"testing"

	"idemlab/grader/ladder"
)

// TestBacklog_ANoteTakenAfterTheRefusalIsCaught: a relay that notes on
// the lab clock when to send a refused row again notes it after the
// core's refusal, a moment later on a busy machine; S9.backlog sets the
// clock back only once the pass that tried the row has ended, so the
// note is taken before the step and the row waits the hour. The server
// is retry-at-on-the-lab-clock noting 300 ms after a row's first
// refusal, once, to try again 10 ms after the note, built as a mutant.
// Before, the check set the clock back as soon as the core had refused:
// the note, taken after the step, said 10 ms, the row was sent again at
// once and the check passed it (the ladder saw retry-at-on-the-lab-clock pass so once,
// under go test -race, where the check outlasted its second).
func TestBacklog_ANoteTakenAfterTheRefusalIsCaught(t *testing.T) {
	m := mutantNamed(t, "retry-at-on-the-lab-clock")
	m.Name = "retry-at-noted-late"
	m.Bug = "notes once, 300 ms after the core first refused a row, when to send it again: 10 ms later on the lab clock"
	// It notes once, 10 ms after the first refusal's note, not a second
	// after each: a check that passes in less than a second catches the
	// mutant's second alone, and a note taken again on every pass could
	// meet the step on a later pass too.
	m.Edits = slices.Clone(m.Edits)
	note := "s.due.Store(ids[i], s.env.Clock.Now().Add(time.Second))"
	found := false
	for j, e := range m.Edits {
		if strings.Contains(e.New, note) {
			m.Edits[j].New = strings.Replace(e.New, note, "s.due.LoadOrStore(ids[i], s.env.Clock.Now().Add(10*time.Millisecond))", 1)
			found = true
		}
	}
	if !found {
		t.Fatalf("retry-at-on-the-lab-clock no longer notes when to try again with %q", note)
	}
	// The pause comes after the core's answers, in the pass of a row's
	// first refusal, and before the settling transaction, which it would
	// hold open.
	send := "\ts.env.Core.PostAll(ctx, batch, relaySenders)\n"
	m.Edits = append(m.Edits, ladder.Edit{File: "outbox.go", Old: send,
		New: send + "\tfor i, b := range batch {\n\t\tif b.Err != nil {\n\t\t\tif _, noted := s.due.Load(ids[i]); !noted {\n\t\t\t\ttime.Sleep(300 * time.Millisecond)\n\t\t\t}\n\t\t\tbreak\n\t\t}\n\t}\n"})
	if out, err := runMutant(t, m); err != nil {
		t.Fatalf("S9.backlog did not catch a relay that notes when to try again, on the lab clock, 300 ms after the refusal: %v\n%s", err, out)
	}
}
