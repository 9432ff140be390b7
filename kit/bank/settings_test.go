package bank_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"idemlab/kit/bank"
	"idemlab/kit/problem"
)

// TestTransfer_DailyLimitCountsTheLabClockDay: the transfers of one lab
// clock day from one account add up to at most its daily limit; a
// transfer that would pass it is refused and moves nothing, and the next
// day counts from zero.
func TestTransfer_DailyLimitCountsTheLabClockDay(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 1_000_000)
	a, b := f.customers[0], f.customers[1]
	from, to := a.Accounts[0], b.Accounts[0]
	if _, err := f.db.ExecContext(ctx, `UPDATE account_settings SET daily_limit = 100000 WHERE account_id = ?`, from); err != nil {
		t.Fatal(err)
	}
	// From the next noon on, the test never straddles a midnight.
	now := f.clock.Now()
	if _, err := f.clock.Advance(ctx, bank.DayStart(now).Add(36*time.Hour).Sub(now)); err != nil {
		t.Fatal(err)
	}
	pay := func(amount int64) error {
		_, err := f.transfer(t, a.ID, bank.TransferRequest{From: from, To: to, Amount: amount}, true)
		return err
	}
	if err := pay(60_000); err != nil {
		t.Fatal(err)
	}
	if err := pay(50_000); !errors.Is(err, problem.DailyLimitExceeded) {
		t.Fatalf("60,000 then 50,000 under a limit of 100,000: %v, want daily-limit-exceeded", err)
	}
	if err := pay(40_000); err != nil {
		t.Fatalf("60,000 then 40,000 reach the limit of 100,000 and may: %v", err)
	}
	if acc, err := f.bank.Account(ctx, a.ID, from); err != nil || acc.Balance != 900_000 {
		t.Fatalf("balance %d (%v), want 900,000: the refused transfer moved nothing", acc.Balance, err)
	}
	if _, err := f.clock.Advance(ctx, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := pay(100_000); err != nil {
		t.Fatalf("a new day: %v", err)
	}
	// The limit is the source account's: the payee may still send.
	if _, err := f.transfer(t, b.ID, bank.TransferRequest{From: to, To: from, Amount: 500_000}, true); err != nil {
		t.Fatal(err)
	}
}

// TestMigrate_GivesEveryAccountSettings: a new account starts with the
// default settings at version 1, and one made before the settings' table
// existed gets them when the database is migrated again.
func TestMigrate_GivesEveryAccountSettings(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 1_000)
	a := f.customers[0]
	if _, err := f.db.ExecContext(ctx, `DELETE FROM account_settings WHERE account_id = ?`, a.Accounts[1]); err != nil {
		t.Fatal(err)
	}
	if err := bank.Migrate(ctx, f.db.DB); err != nil {
		t.Fatal(err)
	}
	for _, acc := range a.Accounts {
		s, version, err := f.bank.AccountSettings(ctx, a.ID, acc)
		if err != nil || s != bank.DefaultSettings() || version != 1 {
			t.Errorf("%s: %+v at version %d (%v), want the defaults at version 1", acc, s, version, err)
		}
	}
	if _, _, err := f.bank.AccountSettings(ctx, a.ID, f.customers[1].Accounts[0]); !errors.Is(err, problem.Forbidden) {
		t.Errorf("another customer's settings: %v, want forbidden", err)
	}
}
