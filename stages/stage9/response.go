package stage9

import (
	"net/http"

	"idemlab/kit/problem"
)

// response is an answer as the server first sent it, stored with its key
// and sent again to every retry: the status, the headers that matter and
// the body bytes. It is stored, never recomputed: a replay of a transfer
// shows the balance_after and created_at of the moment it executed.
type response struct {
	status      int
	contentType string
	// location is "" for an answer without a Location header.
	location string
	body     []byte
}

// write sends res. A replay carries Idempotent-Replayed: true, and only a
// replay does: the client can tell "this executed now" from "this had
// already executed". Nothing else is stored or sent again; in particular
// never a Set-Cookie, which belongs to one client's session.
func (res response) write(w http.ResponseWriter, replayed bool) {
	h := w.Header()
	h.Set("Content-Type", res.contentType)
	if res.location != "" {
		h.Set("Location", res.location)
	}
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(res.status)
	w.Write(res.body)
}

// refusal is the response to a request refused for good (insufficient
// funds, a duplicate reference): its problem document, with the Location
// the problem names, if any.
func refusal(err error) response {
	status, body := problem.Marshal(err)
	return response{status: status, contentType: problem.ContentType, location: problem.From(err).Location, body: body}
}
