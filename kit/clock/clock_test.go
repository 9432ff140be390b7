package clock_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/sqlitedb"
)

// openClock opens the database at path and the lab clock kept in it.
// The database closes when the test ends, if the test has not closed it.
func openClock(t *testing.T, path string) (*clock.Clock, *sqlitedb.DB) {
	t.Helper()
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := clock.Open(context.Background(), db.DB)
	if err != nil {
		t.Fatal(err)
	}
	return c, db
}

func TestClock_OffsetSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lab.db")
	c, db := openClock(t, path)
	before := c.Now()
	moved, err := c.Advance(ctx, 25*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := moved.Sub(before); d < 25*time.Hour || d > 25*time.Hour+time.Minute {
		t.Fatalf("advance by 25h moved the clock by %v", d)
	}
	db.Close()

	again, _ := openClock(t, path)
	if d := again.Now().Sub(before); d < 25*time.Hour {
		t.Fatalf("after reopening, the clock is only %v ahead of where it started; the offset was lost", d)
	}
}

func TestClock_SetAndFormat(t *testing.T) {
	ctx := context.Background()
	c, _ := openClock(t, ":memory:")
	target := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := c.Set(ctx, target); err != nil {
		t.Fatal(err)
	}
	if d := c.Now().Sub(target); d < -2*time.Millisecond || d > time.Minute {
		t.Fatalf("after Set the clock reads %v, want about %v", c.Now(), target)
	}
	if got := clock.Format(time.Date(2030, 1, 2, 3, 4, 5, 7e6, time.UTC)); got != "2030-01-02T03:04:05.007Z" {
		t.Fatalf("Format = %q", got)
	}
}
