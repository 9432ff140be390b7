package grader

import "idemlab/grader/judging"

// Snapshot reads the target's snapshot (judging.Snapshot).
func (t *T) Snapshot() (judging.Snapshot, error) {
	st, err := t.State()
	if err != nil {
		return judging.Snapshot{}, err
	}
	return judging.SnapshotOf(st), nil
}
