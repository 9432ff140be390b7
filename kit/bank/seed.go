package bank

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"fmt"
	"math/rand/v2"
)

// Params shapes a fresh lab population (POST /lab/reset).
type Params struct {
	Seed                uint64 `json:"seed"`
	Customers           int    `json:"customers"`
	AccountsPerCustomer int    `json:"accounts_per_customer"`
	OpeningBalance      int64  `json:"opening_balance"`
}

// DefaultParams are the defaults of POST /lab/reset (docs/api.md).
func DefaultParams() Params {
	return Params{Seed: 1, Customers: 4, AccountsPerCustomer: 2, OpeningBalance: 10_000_000}
}

// Validate reports the first parameter out of range.
func (p Params) Validate() error {
	switch {
	case p.Customers < 1 || p.Customers > 1000:
		return fmt.Errorf("customers must be 1..1000, got %d", p.Customers)
	case p.AccountsPerCustomer < 1 || p.AccountsPerCustomer > 10:
		return fmt.Errorf("accounts_per_customer must be 1..10, got %d", p.AccountsPerCustomer)
	case p.OpeningBalance < 0 || p.OpeningBalance > 1_000_000_000_000:
		return fmt.Errorf("opening_balance must be 0..1000000000000, got %d", p.OpeningBalance)
	}
	return nil
}

// Customer is one customer of a population, with the two tokens that
// authenticate as them: a customer may hold more than one credential (a
// phone and a web session, a token and the one that replaces it), and
// each is the same customer.
type Customer struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Token string `json:"token"`
	// OtherToken is the customer's second token.
	OtherToken string   `json:"other_token"`
	Accounts   []string `json:"accounts"`
}

var names = []string{
	"Kim Minji", "Lee Jiho", "Park Seoyeon", "Choi Junwoo", "Jung Haeun",
	"Kang Dohyun", "Yoon Sumin", "Jang Yejun", "Lim Chaewon", "Han Siwoo",
}

// Population draws the customers, accounts and tokens of p from its seed.
// It is a pure function: the same parameters give the same ids and tokens,
// which is what lets a day plan name accounts before any server exists.
// The second tokens come from a stream of their own, so that the ids,
// accounts and first tokens are the ones a seed gave before customers had
// a second token.
func Population(p Params) []Customer {
	r := rand.New(rand.NewPCG(p.Seed, 0x1de3_1ab))
	other := rand.New(rand.NewPCG(p.Seed, 0x2de3_1ab))
	out := make([]Customer, p.Customers)
	for i := range out {
		c := Customer{
			ID:    "cus_" + randomString(r, 8),
			Name:  names[i%len(names)],
			Token: "tok_" + randomString(r, 24),
		}
		c.OtherToken = "tok_" + randomString(other, 24)
		if i >= len(names) {
			c.Name = fmt.Sprintf("%s %d", c.Name, i/len(names)+1)
		}
		for range p.AccountsPerCustomer {
			c.Accounts = append(c.Accounts, "acc_"+randomString(r, 8))
		}
		out[i] = c
	}
	return out
}

const idAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

func randomString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[r.IntN(len(idAlphabet))]
	}
	return string(b)
}

// DrawTokens gives each customer two new tokens of the same form, drawn
// from crypto/rand instead of the seed; ids and accounts stay the seed's. A
// server that people other than its instructor reach needs it: anyone
// can draw a seed's tokens (docs/api.md prints seed 1's).
func DrawTokens(customers []Customer) {
	var seed [32]byte
	crand.Read(seed[:])
	r := rand.New(rand.NewChaCha8(seed))
	for i := range customers {
		customers[i].Token = "tok_" + randomString(r, 24)
		customers[i].OtherToken = "tok_" + randomString(r, 24)
	}
}

// Insert inserts customers, both their tokens and their accounts, each account
// holding opening won with the default settings, into empty bank tables
// inside tx.
func Insert(ctx context.Context, tx *sql.Tx, customers []Customer, opening int64) error {
	for _, c := range customers {
		if _, err := tx.ExecContext(ctx, `INSERT INTO customers (id, name) VALUES (?, ?)`, c.ID, c.Name); err != nil {
			return fmt.Errorf("populate: %w", err)
		}
		for _, token := range []string{c.Token, c.OtherToken} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (token, customer_id) VALUES (?, ?)`, token, c.ID); err != nil {
				return fmt.Errorf("populate: %w", err)
			}
		}
		for _, a := range c.Accounts {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO accounts (id, customer_id, balance, opening_balance) VALUES (?, ?, ?, ?)`,
				a, c.ID, opening, opening); err != nil {
				return fmt.Errorf("populate: %w", err)
			}
			if err := insertSettings(ctx, tx, a); err != nil {
				return err
			}
		}
	}
	return nil
}
