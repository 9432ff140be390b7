package targets

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"
)

// TestBufferedPipe holds the in-memory connection to what net.Conn
// promises, as nettest checks it of net.Pipe: reads and writes, deadlines
// past, present and future, closes, and methods called at once.
func TestBufferedPipe(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		c1, c2 = bufferedPipe()
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}
