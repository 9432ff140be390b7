package targets

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// net.Pipe hands each write to the reader itself: the writer waits until
// the reader has taken every byte, and the reader answers how many it
// took, so every write wakes the reader and then the writer, and a writer
// whose reader is busy elsewhere waits for it. A day's request and answer
// cross in several writes each, and those hand-offs were 145,000 of the
// 361,000 times a goroutine was woken in the 20,000-op day (most to a
// sleeping core, which is slow to come back). bufferedPipe is an
// in-memory connection whose writes land in a buffer, as a socket's do in
// the kernel: a write returns at once, and wakes the reader only if it
// waits. The buffer holds up to pipeBuffer bytes; a writer beyond that
// waits for the reader, as on a full socket.

// pipeBuffer is how many bytes one direction of a bufferedPipe holds
// before its writer waits.
const pipeBuffer = 256 << 10

// bufferedPipe returns the two ends of an in-memory connection.
func bufferedPipe() (net.Conn, net.Conn) {
	ab, ba := newPipeHalf(), newPipeHalf()
	a := &pipeEnd{in: ba, out: ab}
	b := &pipeEnd{in: ab, out: ba}
	return a, b
}

// pipeHalf is one direction of a connection: the bytes written and not
// yet read.
type pipeHalf struct {
	// wmu makes each write whole, as a socket's and net.Pipe's are: a
	// write larger than the room left is not interleaved with another.
	wmu                         sync.Mutex
	mu                          sync.Mutex
	buf                         []byte
	off                         int           // buf[off:] is unread
	eof                         bool          // the writing end closed: a read of an empty buffer gets io.EOF
	gone                        bool          // the reading end closed: a write fails
	readable                    chan struct{} // a token when there is something new for the reader
	writable                    chan struct{} // a token when the reader has made room
	readDeadline, writeDeadline pipeDeadline
}

func newPipeHalf() *pipeHalf {
	return &pipeHalf{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1),
		readDeadline: makePipeDeadline(), writeDeadline: makePipeDeadline()}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (h *pipeHalf) read(b []byte) (int, error) {
	for {
		h.mu.Lock()
		switch {
		case h.gone:
			h.mu.Unlock()
			notify(h.readable) // for another reader waiting
			return 0, io.ErrClosedPipe
		case isClosedChan(h.readDeadline.wait()):
			h.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		case h.off < len(h.buf):
			n := copy(b, h.buf[h.off:])
			h.off += n
			if h.off == len(h.buf) {
				h.buf, h.off = h.buf[:0], 0
			}
			left := h.off < len(h.buf)
			h.mu.Unlock()
			notify(h.writable)
			if left {
				notify(h.readable) // for another reader waiting
			}
			return n, nil
		case h.eof:
			h.mu.Unlock()
			notify(h.readable) // for another reader waiting
			return 0, io.EOF
		}
		h.mu.Unlock()
		select {
		case <-h.readable:
		case <-h.readDeadline.wait():
		}
	}
}

func (h *pipeHalf) write(b []byte) (int, error) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	n := 0
	for {
		h.mu.Lock()
		switch {
		case h.eof:
			h.mu.Unlock()
			return n, io.ErrClosedPipe
		case h.gone:
			h.mu.Unlock()
			return n, io.ErrClosedPipe
		case isClosedChan(h.writeDeadline.wait()):
			h.mu.Unlock()
			return n, os.ErrDeadlineExceeded
		}
		room := pipeBuffer - (len(h.buf) - h.off)
		if room > 0 {
			m := min(room, len(b)-n)
			if h.off > 0 && len(h.buf)+m > cap(h.buf) {
				// Move what is unread to the front rather than grow
				// the buffer: a reader that never quite catches up
				// would otherwise keep every byte ever written.
				h.buf, h.off = h.buf[:copy(h.buf, h.buf[h.off:])], 0
			}
			h.buf = append(h.buf, b[n:n+m]...)
			n += m
		}
		h.mu.Unlock()
		if room > 0 {
			notify(h.readable)
		}
		if n == len(b) {
			return n, nil
		}
		select {
		case <-h.writable:
		case <-h.writeDeadline.wait():
		}
	}
}

// closeWrite ends the half's writing: the reader reads what is left, then
// io.EOF. closeRead ends its reading: writes fail.
func (h *pipeHalf) closeWrite() {
	h.mu.Lock()
	h.eof = true
	h.mu.Unlock()
	notify(h.readable)
	notify(h.writable)
}

func (h *pipeHalf) closeRead() {
	h.mu.Lock()
	h.gone = true
	h.buf, h.off = nil, 0
	h.mu.Unlock()
	notify(h.readable)
	notify(h.writable)
}

// pipeEnd is one end of a bufferedPipe: it reads in and writes out.
type pipeEnd struct {
	in, out *pipeHalf
	once    sync.Once
}

func (p *pipeEnd) Read(b []byte) (int, error) {
	// The errors net.Pipe returns, wrapped as it wraps them.
	n, err := p.in.read(b)
	if err != nil && err != io.EOF && err != io.ErrClosedPipe {
		err = &net.OpError{Op: "read", Net: "pipe", Err: err}
	}
	return n, err
}

func (p *pipeEnd) Write(b []byte) (int, error) {
	n, err := p.out.write(b)
	if err != nil && err != io.ErrClosedPipe {
		err = &net.OpError{Op: "write", Net: "pipe", Err: err}
	}
	return n, err
}

// Close closes both directions at this end: the other end reads what was
// written before, then io.EOF, and its writes fail.
func (p *pipeEnd) Close() error {
	p.once.Do(func() {
		p.in.closeRead()
		p.out.closeWrite()
	})
	return nil
}

func (p *pipeEnd) LocalAddr() net.Addr  { return pipeAddr{} }
func (p *pipeEnd) RemoteAddr() net.Addr { return pipeAddr{} }

func (p *pipeEnd) SetDeadline(t time.Time) error {
	p.in.readDeadline.set(t)
	p.out.writeDeadline.set(t)
	return nil
}

func (p *pipeEnd) SetReadDeadline(t time.Time) error {
	p.in.readDeadline.set(t)
	return nil
}

func (p *pipeEnd) SetWriteDeadline(t time.Time) error {
	p.out.writeDeadline.set(t)
	return nil
}

// pipeDeadline is a deadline whose wait channel is closed once it has
// passed, as net.Pipe's is.
type pipeDeadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{} // closed once the deadline has passed
}

func makePipeDeadline() pipeDeadline { return pipeDeadline{cancel: make(chan struct{})} }

// set sets the deadline; the zero time is none.
func (d *pipeDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer's function closed it: wait until it has
	}
	d.timer = nil
	closed := isClosedChan(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

// wait returns a channel closed once the deadline has passed.
func (d *pipeDeadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
