package server

// ReservedConns is reservedConns, for the tests of package server_test.
const ReservedConns = reservedConns

// PoolSize reports how many connections s's database opens at most; zero
// means no bound.
func (s *Server) PoolSize() int { return s.db.Stats().MaxOpenConnections }

// RequestSlots reports how many customer requests s serves at once; zero
// means no bound.
func (s *Server) RequestSlots() int { return cap(s.slots) }

// OpenConns reports how many connections s's database has open now.
func (s *Server) OpenConns() int { return s.db.Stats().OpenConnections }
