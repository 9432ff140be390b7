package request

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"idemlab/kit/problem"
)

// Limits of the core ledger's POST /postings/batch (docs/api.md).
const (
	// MaxBatch is how many postings one batch carries at most.
	MaxBatch = 256
	// MaxBatchBody is the largest batch body, in bytes: 4 KiB a posting
	// on average, some 25 times what one takes.
	MaxBatchBody = 1 << 20
)

// BatchMember is one member of a batch of postings as it was sent: the
// JSON of its key and of its posting, each nil if the member has none.
// The core reads each with the rules of a posting sent alone
// (idemkey.Check, PostingJSON), so that one bad member is refused alone.
type BatchMember struct {
	Key     json.RawMessage
	Posting json.RawMessage
}

// PostingBatch reads a POST /postings/batch body: a JSON array of 1 to
// MaxBatch objects, each with the members key and posting and no other,
// none twice, and nothing after the array. What a member's key and
// posting hold is not read here. It returns the members in order, or a
// problem error: 415, 408, 413 (over MaxBatchBody bytes or MaxBatch
// postings) or 400 invalid-request saying what is wrong.
func PostingBatch(r *http.Request) ([]BatchMember, error) {
	raw, err := readBody(r, MaxBatchBody)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	if tok != json.Delim('[') {
		return nil, invalid(`the body must be a JSON array of postings, each {"key","posting"}`)
	}
	var batch []BatchMember
	for dec.More() {
		if len(batch) == MaxBatch {
			return nil, problem.New(problem.RequestTooLarge, "a batch carries at most %d postings", MaxBatch)
		}
		m, err := batchMember(dec, len(batch))
		if err != nil {
			return nil, err
		}
		batch = append(batch, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("the body holds more than the batch's array")
	}
	if len(batch) == 0 {
		return nil, invalid("the batch is empty; send 1 to %d postings", MaxBatch)
	}
	return batch, nil
}

// batchMember reads member i of a batch, the next value of dec.
func batchMember(dec *json.Decoder, i int) (BatchMember, error) {
	tok, err := dec.Token()
	if err != nil {
		return BatchMember{}, invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	if tok != json.Delim('{') {
		return BatchMember{}, invalid(`batch[%d] must be an object {"key","posting"}`, i)
	}
	var m BatchMember
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return BatchMember{}, invalid("the body is not valid JSON: %v", syntaxDetail(err))
		}
		name := tok.(string)
		if seen[name] {
			return BatchMember{}, invalid("member %q of batch[%d] appears more than once", name, i)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return BatchMember{}, invalid("the body is not valid JSON: %v", syntaxDetail(err))
		}
		switch name {
		case "key":
			m.Key = v
		case "posting":
			m.Posting = v
		default:
			return BatchMember{}, invalid("unknown member %q in batch[%d]; the members are key, posting", name, i)
		}
	}
	if _, err := dec.Token(); err != nil {
		return BatchMember{}, invalid("the body is not valid JSON: %v", syntaxDetail(err))
	}
	return m, nil
}
