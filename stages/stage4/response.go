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
// TODO(stage 4): when you are done, what write sends is res and nothing
// else: its status, its Content-Type, its Location when it has one, and
// its body bytes exactly as stored, plus Idempotent-Replayed: true on a
// replay and only there. A first answer and its replays are then the same
// bytes (lesson 04, "Store the answer" and "The replay marker").
func (res response) write(w http.ResponseWriter, replayed bool) {
}
