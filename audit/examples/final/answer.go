package final

import (
	"bytes"
	"net/http"
)

// kept are the headers of an answer that are stored with it and sent
// again on a replay: those that describe the answer. Never Set-Cookie,
// which belongs to one client's session, nor any header of the moment.
var kept = []string{"Content-Type", "Location"}

// answer is a response as the handler wrote it: what is stored with its
// key and sent again to every retry, byte for byte.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// write sends a. A replay carries Idempotent-Replayed: true, and only a
// replay does.
func (a answer) write(w http.ResponseWriter, replayed bool) {
	for name, values := range a.header {
		w.Header()[name] = values
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// recorder is the ResponseWriter the handler writes to: it keeps the
// whole answer, so that it can be stored before a byte of it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// answer is what the handler wrote, with only the kept headers.
func (r *recorder) answer() answer {
	a := answer{status: r.status, header: http.Header{}, body: r.body.Bytes()}
	for _, name := range kept {
		if v := r.header.Get(name); v != "" {
			a.header.Set(name, v)
		}
	}
	return a
}
