package request_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"idemlab/kit/problem"
	"idemlab/kit/request"
)

// FuzzPostingBatch holds the batch reader to docs/api.md for any body:
// either 1 to MaxBatch members, each as the body wrote it (its key and
// posting byte for byte, the members key and posting and no other, each
// once), or a problem of the body: 400, 413 or 415. A reader that
// panicked, let an unknown member through, or changed a posting's bytes
// before the posting's own reader saw them, fails.
func FuzzPostingBatch(f *testing.F) {
	for _, seed := range []string{
		`[{"key":"k-1","posting":{"transfer_id":"tr_1","from":"acc_a","to":"acc_b","amount":1}}]`,
		`[{"key":"k-1","posting":{}},{"posting":[1,2],"key":7}]`,
		`[{"key":"k-1","key":"k-2","posting":{}}]`,
		`[{"key":"k-1","posting":{}}]x`,
		`[]`, `{}`, `[1]`, `[{"key":"\u006b","posting":"\ud800"}]`, "[{\"key\":\"k\",\"posting\":\"\xff\"}]",
	} {
		f.Add("application/json", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		batch, err := request.PostingBatch(fuzzPost("/postings/batch", contentType, body))
		if err != nil {
			var pe *problem.Error
			if !errors.As(err, &pe) {
				t.Fatalf("refused with %v, which is no problem type", err)
			}
			switch pe.Type {
			case problem.InvalidRequest, problem.RequestTooLarge, problem.UnsupportedMediaType:
			default:
				t.Fatalf("refused with %s, which is not a problem of the body", pe.Type.Name)
			}
			return
		}
		if len(batch) < 1 || len(batch) > request.MaxBatch || len(body) > request.MaxBatchBody {
			t.Fatalf("accepted %d members in %d bytes", len(batch), len(body))
		}
		var members []map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil || len(members) != len(batch) {
			t.Fatalf("accepted %q, which is no array of %d objects: %v", body, len(batch), err)
		}
		for i, m := range batch {
			for name, raw := range map[string]json.RawMessage{"key": m.Key, "posting": m.Posting} {
				if raw != nil && !bytes.Contains(body, raw) {
					t.Errorf("member %d's %s %q is not in the body as sent", i, name, raw)
				}
			}
			if len(members[i]) != btoi(m.Key != nil)+btoi(m.Posting != nil) {
				t.Errorf("member %d has %d members, read as key %q and posting %q", i, len(members[i]), m.Key, m.Posting)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
