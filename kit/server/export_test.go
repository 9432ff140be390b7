package server

// ReservedConns is reservedConns, for the tests of package server_test.
const ReservedConns = reservedConns

// RequestSlots reports how many customer requests s serves at once; zero
// means no bound.
func (s *Server) RequestSlots() int { return cap(s.slots) }
