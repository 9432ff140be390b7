package dayplan

import (
	"encoding/json"
	"fmt"

	"idemlab/kit/bank"
)

// RetryBytes is the body the operation's retries send: RetryBody when the
// plan respells it, else the first body.
func (o *Op) RetryBytes() []byte {
	if o.Fate.RetryBody != "" {
		return []byte(o.Fate.RetryBody)
	}
	return o.Body
}

// EditedBody is the clerk's resubmission: the first body with the amount
// changed to Fate.EditedAmount. It returns an error if the body is not an
// operation's body.
func (o *Op) EditedBody() ([]byte, error) {
	switch o.Endpoint {
	case Deposits:
		var b bank.DepositRequest
		if err := json.Unmarshal(o.Body, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Op, err)
		}
		b.Amount = o.Fate.EditedAmount
		return encode(b), nil
	default:
		var b bank.TransferRequest
		if err := json.Unmarshal(o.Body, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Op, err)
		}
		b.Amount = o.Fate.EditedAmount
		return encode(b), nil
	}
}

// Effect is what one execution of the operation with amount does to
// balances: account id → change in won. A deposit brings money in from
// outside the bank; a transfer moves it between two accounts.
func (o *Op) Effect(amount int64) (map[string]int64, error) {
	switch o.Endpoint {
	case Deposits:
		var b bank.DepositRequest
		if err := json.Unmarshal(o.Body, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Op, err)
		}
		return map[string]int64{b.Account: amount}, nil
	default:
		var b bank.TransferRequest
		if err := json.Unmarshal(o.Body, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", o.Op, err)
		}
		return map[string]int64{b.From: -amount, b.To: amount}, nil
	}
}

// Crashes counts the operations before which the replay arms a crash
// point of the server.
func (p *Plan) Crashes() int {
	n := 0
	for _, op := range p.Ops {
		if op.Fate.Crash != "" {
			n++
		}
	}
	return n
}
