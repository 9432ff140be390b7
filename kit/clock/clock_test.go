package clock_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"idemlab/kit/clock"
	"idemlab/kit/sqlitedb"
)

func TestClock_OffsetSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clock.Open(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Now()
	moved, err := c.Advance(ctx, 25*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := moved.Sub(before); d < 25*time.Hour || d > 25*time.Hour+time.Minute {
		t.Fatalf("advance by 25h moved the clock by %v", d)
	}
	db.Close()

	db, err = sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := clock.Open(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.Now().Sub(before); d < 25*time.Hour {
		t.Fatalf("after reopening, the clock is only %v ahead of where it started; the offset was lost", d)
	}
}

func TestClock_SetAndFormat(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := clock.Open(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
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
