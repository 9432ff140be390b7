package targets

import (
	"io"
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

// TestBufferedPipeReaderThatLags: a reader that never quite catches up
// (it leaves a byte unread each time) must not make the buffer hold every
// byte ever written: only what is unread, up to pipeBuffer, is kept.
func TestBufferedPipeReaderThatLags(t *testing.T) {
	a, b := bufferedPipe()
	defer a.Close()
	defer b.Close()
	chunk := make([]byte, 1000)
	got := make([]byte, 1000)
	if _, err := a.Write(chunk[:1]); err != nil {
		t.Fatal(err)
	}
	for range 20000 {
		if _, err := a.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(b, got); err != nil {
			t.Fatal(err)
		}
	}
	h := b.(*pipeEnd).in
	h.mu.Lock()
	c := cap(h.buf)
	h.mu.Unlock()
	if c > 2*pipeBuffer {
		t.Errorf("the buffer holds %d bytes for 1 unread: what was read is kept", c)
	}
}
