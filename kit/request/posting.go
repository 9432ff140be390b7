package request

import (
	"net/http"
	"strings"

	"idemlab/kit/problem"
)

// MaxTransferID is the longest transfer id a posting may name.
const MaxTransferID = 64

// PostingRequest is the body of the core ledger's POST /postings: which
// transfer the bank executed, between which accounts, for how much.
type PostingRequest struct {
	TransferID string
	From, To   string
	Amount     int64
}

// Posting reads a POST /postings body as strictly as a transfer's: one
// JSON object of exactly the members transfer_id, from, to and amount,
// valid UTF-8, no member twice, a transfer id (tr_…), two different
// account ids and an amount in the bank's range. It returns the posting,
// or a problem error: 415, 413, 408 or 400 invalid-request naming the
// member.
func Posting(r *http.Request) (PostingRequest, error) {
	raw, err := readBody(r, MaxBody)
	if err != nil {
		return PostingRequest{}, err
	}
	return PostingJSON(raw)
}

// PostingJSON reads one posting from raw, the JSON of a posting carried
// in a batch, by Posting's rules: 413 if it is over MaxBody, else 400
// invalid-request naming the member.
func PostingJSON(raw []byte) (PostingRequest, error) {
	if len(raw) > MaxBody {
		return PostingRequest{}, problem.New(problem.RequestTooLarge, "the posting is %d bytes; the limit is %d", len(raw), MaxBody)
	}
	members, err := parse(raw, "transfer_id", "from", "to", "amount")
	if err != nil {
		return PostingRequest{}, err
	}
	var p PostingRequest
	d := decoder{members: members}
	p.TransferID = d.transferID("transfer_id")
	p.From = d.account("from")
	p.To = d.account("to")
	p.Amount = d.amount("amount")
	d.distinct(p.From, p.To)
	if d.err != nil {
		return PostingRequest{}, d.err
	}
	return p, nil
}

func (d *decoder) transferID(name string) string {
	s, ok := d.str(name, true)
	if ok && (!strings.HasPrefix(s, "tr_") || len(s) > MaxTransferID) {
		d.fail(name, "must be a transfer id such as tr_7fk2m9qa, got %q", s)
	}
	if ok {
		d.noNUL(name, s)
	}
	return s
}
