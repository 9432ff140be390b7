package stage4

import "net/http"

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
//
// TODO(stage 4): when you are done, write sends the stored headers
// (Content-Type, and Location when there is one), Idempotent-Replayed:
// true only when replayed, then the stored status and body bytes exactly
// as stored. First answers go through it too, so that a first answer and
// its replays are the same bytes.
func (res response) write(w http.ResponseWriter, replayed bool) {
}
