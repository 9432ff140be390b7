package server

import (
	"context"

	"idemlab/kit/events"
	"idemlab/kit/labctl"
)

// keyRowsListening tells the event stream that the database stopped
// reporting key-row changes (err: PostgreSQL's listening connection was
// lost) or reports them again (nil). Changes made in between were never
// reported, so once it is back every key row is sent anew, and a
// dashboard's key table catches up instead of freezing.
func (s *Server) keyRowsListening(err error) {
	if err != nil {
		if s.log != nil {
			s.log.Warn("key-row events stopped; listening again", "error", err)
		}
		s.hub.Publish(events.KindListen, events.Listen{Error: err.Error()})
		return
	}
	if s.log != nil {
		s.log.Info("key-row events flow again: reconnected and listening")
	}
	s.hub.Publish(events.KindListen, events.Listen{Listening: true})
	if !s.hub.Listening() {
		return
	}
	var rows []map[string]any
	if !s.ctl.UnlessResetting(func() {
		rows, err = labctl.KeyRows(context.Background(), s.db.DB, "1 = 1")
	}) {
		return
	}
	if err != nil {
		s.hub.Publish(events.KindKey, map[string]any{"error": err.Error()})
		return
	}
	for _, row := range rows {
		id, _ := row["rowid"].(int64)
		s.hub.Publish(events.KindKey, events.Key{RowID: id, Row: row})
	}
}
