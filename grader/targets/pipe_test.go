package targets

import (
	"bytes"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

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

// TestBufferedPipeCloseEndsEveryWait: Close ends every Read waiting on
// the connection, however many there are, and a Write waiting for room,
// as net.Pipe's does.
func TestBufferedPipeCloseEndsEveryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := bufferedPipe()
		defer b.Close()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { a.Read(make([]byte, 10)) })
		}
		wg.Go(func() { a.Write(make([]byte, 2*pipeBuffer)) })
		synctest.Wait() // every one of them waits
		a.Close()
		wg.Wait() // a deadlock of the bubble if one still waits
	})
}

// TestBufferedPipeWritesDoNotInterleave: two writes at once, each larger
// than the buffer, arrive one after the other, as on a socket (whose
// writes are serialized) and net.Pipe.
func TestBufferedPipeWritesDoNotInterleave(t *testing.T) {
	a, b := bufferedPipe()
	defer a.Close()
	defer b.Close()
	x := bytes.Repeat([]byte{'x'}, 3*pipeBuffer)
	y := bytes.Repeat([]byte{'y'}, 3*pipeBuffer)
	var wg sync.WaitGroup
	wg.Go(func() { a.Write(x) })
	wg.Go(func() { a.Write(y) })
	got := make([]byte, len(x)+len(y))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !bytes.Equal(got, slices.Concat(x, y)) && !bytes.Equal(got, slices.Concat(y, x)) {
		t.Error("the two writes arrived interleaved")
	}
}
