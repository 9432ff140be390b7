package grader

import "idemlab/grader/judging"
import "idemlab/kit/bank"

// Scenario is the set-up most checks start from: a freshly reset bank
// whose customers each hold two accounts of the same opening balance, and
// books that follow every one of those accounts.
type Scenario struct {
	Customers []bank.Customer
	// A and B are the first two customers: the one who sends, and the
	// one who receives.
	A, B bank.Customer
	// Opening is every account's balance after the reset.
	Opening int64
	// Books start at the opening balance on every account, with no
	// operation run; the check records what it expects to execute.
	Books *judging.Books
}

// Scenario resets the target to customers (at least two) with two
// accounts of opening won each, on a bank drawn from the check's seed (as
// Reset does: one draw), and returns them with their books. It returns
// Reset's error.
func (t *T) Scenario(customers int, opening int64) (Scenario, error) {
	cs, err := t.Reset(customers, opening)
	if err != nil {
		return Scenario{}, err
	}
	return Scenario{Customers: cs, A: cs[0], B: cs[1], Opening: opening, Books: t.NewBooks(opening, customerAccounts(cs)...)}, nil
}

// withScenario is the Run of a check that starts from the usual set-up:
// it runs check on a fresh Scenario of two customers with opening won
// on each account, or returns the reset's error without running it.
func withScenario(opening int64, check func(t *T, s Scenario) error) func(*T) error {
	return func(t *T) error {
		s, err := t.Scenario(2, opening)
		if err != nil {
			return err
		}
		return check(t, s)
	}
}

// customerAccounts lists every account of cs.
func customerAccounts(cs []bank.Customer) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Accounts...)
	}
	return out
}

// Payment draws a fresh transfer from A's first account to B's first, of
// 1,000 to 100,000 won under a fresh key and op, and returns the request,
// its op and its amount.
func (s Scenario) Payment(t *T) (req Request, op string, amount int64) {
	amount, key, op := t.Amount(1_000, 100_000), t.Key(), t.Op()
	return Transfer(s.A, key, TransferBody(s.A.Accounts[0], s.B.Accounts[0], amount, op)), op, amount
}

// payments are the two payments a check may hold past their lease, each
// a function of the scenario that draws one, expects its op in s's books,
// and returns the request and a function that books its one execution: a
// transfer (Payment), and a deposit of as much to A's second account. A
// lease is fenced on both routes alike, and a check that sends only
// transfers passes a server that fences only those.
var payments = []func(t *T, s Scenario) (req Request, executed func()){
	func(t *T, s Scenario) (Request, func()) {
		req, op, amount := s.Payment(t)
		s.Books.Expect(op)
		return req, func() { s.Books.Transfer(op, s.A.Accounts[0], s.B.Accounts[0], amount) }
	},
	func(t *T, s Scenario) (Request, func()) {
		amount, key, op := t.Amount(1_000, 100_000), t.Key(), t.Op()
		s.Books.Expect(op)
		return Deposit(s.A, key, DepositBody(s.A.Accounts[1], amount, op)), func() { s.Books.Deposit(op, s.A.Accounts[1], amount) }
	},
}
