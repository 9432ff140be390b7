package events

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
)

// Read parses a server-sent events stream as ServeHTTP writes it ("id:",
// "event:", "data:" lines, a blank line after each event, ":" comments),
// calling emit for each event until emit returns false or the stream ends.
// An event's Time is when it was read: the stream carries none. It returns
// the reader's error, or bufio.ErrTooLong for a line over 4 MiB.
func Read(r io.Reader, emit func(Event) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev Event
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if ev.Kind != "" {
				ev.Data = data
				ev.Time = time.Now()
				if !emit(ev) {
					return nil
				}
			}
			ev, data = Event{}, nil
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			ev.Seq, _ = strconv.ParseInt(string(value), 10, 64)
		case "event":
			ev.Kind = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	return sc.Err()
}
