package server

// ReservedConns is reservedConns, for the tests of package server_test.
const ReservedConns = reservedConns

// PoolSize reports how many connections s's database opens at most; zero
// means no bound.
func (s *Server) PoolSize() int { return s.db.Stats().MaxOpenConnections }
