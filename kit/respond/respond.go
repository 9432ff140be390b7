// Package respond writes JSON responses the same way everywhere in the kit.
package respond

import (
	"encoding/json"
	"net/http"
)

// ContentType is the media type of every JSON body the lab sends.
const ContentType = "application/json"

// Marshal renders v the way the lab sends it: compact, with a final newline.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// JSON sends v with status. A value that cannot be marshalled is a
// programming error and becomes a 500 with no body.
func JSON(w http.ResponseWriter, status int, v any) {
	b, err := Marshal(v)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	w.Write(b)
}
