package shm

import (
	"fmt"
	"io"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The byte stream of one connection: two SPSC byte rings (layout in stream_layout.go).
//
// Ownership: in direction d the writer (side d) owns tail and K, the reader (side 1-d) owns
// head. tail and head are monotonically increasing byte counts; the byte at position p lives
// at data[p & (cap-1)]. Each side keeps the authoritative copy of its own index in private
// memory and never reads it back from the segment; it loads the peer's index only when its
// cached copy does not suffice, and validates it (the peer may write anything at any time):
// a head must stay within [cached head, tail], a tail within [cached tail, head+cap]. A value
// outside marks the direction broken: ErrCorrupt from then on.
//
// Publication: the writer copies into free space first and stores tail after the copy, the
// reader copies out first and stores head after the copy. A copy that panics (a fault on the
// program's buffer, which the caller turns into EFAULT) therefore publishes nothing: the ring
// is exactly as before the call, and a process killed mid-copy never published a partial
// write. The peer's reader sees the bytes one Write call copied all at once or not at all.
//
// Switch-over: the writer of a direction sends the first K bytes of its stream through the
// kernel connection, then calls SwitchWrite(K), which stores K (as K+1, 0 meaning "not yet")
// before any ring write can be published. The reader reads from the kernel until ReaderSwitch
// reports K and it has read exactly K bytes there, then from the ring only.

// txDir is our writing direction (guarded by Conn.wmu).
type txDir struct {
	data      []byte
	cap, mask uint64
	tail      uint64 // authoritative; published to *tailp after each copy
	headCache uint64 // last validated head
	kernel    uint64 // K given to SwitchWrite
	switched  bool
	shut      bool // ShutdownWrite or Close
	broken    bool // the peer's head did not validate

	tailp, headp, kernelp *uint64
	spinners, sleepers    *int32
	wakePending           *uint32
	spaceWait             *uint64
}

// rxDir is our reading direction (guarded by Conn.rmu).
type rxDir struct {
	data      []byte
	cap, mask uint64
	head      uint64 // authoritative; published to *headp after each copy
	tailCache uint64 // last validated tail
	kernel    uint64 // the peer's K, once seen
	switched  bool
	shut      bool // ShutdownRead
	broken    bool // the peer's tail did not validate

	tailp, headp, kernelp *uint64
	spinners, sleepers    *int32
	wakePending           *uint32
	spaceWait             *uint64
}

// dirWords returns the shared words of direction d of mem.
func dirWords(mem []byte, d int) (tailp, headp, kernelp *uint64, spinners, sleepers *int32, wakePending *uint32, spaceWait *uint64) {
	o := dirOff(d)
	return word64(mem, o+drTail), word64(mem, o+drHead), word64(mem, o+drKernel),
		int32At(mem, o+drSpinners), int32At(mem, o+drSleepers), word32(mem, o+drWakePend), word64(mem, o+drSpaceWait)
}

// dirData returns the data area of direction d.
func dirData(mem []byte, d int, cap0, cap1 uint64) []byte {
	if d == 0 {
		return mem[connDataOff : connDataOff+cap0 : connDataOff+cap0]
	}
	return mem[connDataOff+cap0 : connDataOff+cap0+cap1 : connDataOff+cap0+cap1]
}

// iovLen returns the total length of iov.
func iovLen(iov [][]byte) uint64 {
	var n uint64
	for _, b := range iov {
		n += uint64(len(b))
	}
	return n
}

// copyIn copies n bytes from the front of iov into the ring data at position pos (wrapping).
// The caller made sure n <= iovLen(iov) and the space is free.
func copyIn(data []byte, mask, pos uint64, iov [][]byte, n uint64) {
	for _, b := range iov {
		for len(b) > 0 && n > 0 {
			off := pos & mask
			m := min(uint64(len(b)), n, uint64(len(data))-off)
			copy(data[off:off+m], b[:m])
			b = b[m:]
			pos += m
			n -= m
		}
		if n == 0 {
			return
		}
	}
}

// copyOut copies n bytes of the ring data from position pos (wrapping) into the front of iov.
func copyOut(iov [][]byte, data []byte, mask, pos uint64, n uint64) {
	for _, b := range iov {
		for len(b) > 0 && n > 0 {
			off := pos & mask
			m := min(uint64(len(b)), n, uint64(len(data))-off)
			copy(b[:m], data[off:off+m])
			b = b[m:]
			pos += m
			n -= m
		}
		if n == 0 {
			return
		}
	}
}

// SwitchWrite records that kernelBytes bytes of our direction went through the kernel
// connection before the switch; it must be called once, before the first Write (which fails
// with ErrNotSwitched until then). The reader learns the value from ReaderSwitch before it can
// see any ring byte. Errors: ErrClosed, unix.EALREADY when called twice.
func (c *Conn) SwitchWrite(kernelBytes uint64) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil {
		return fmt.Errorf("switch write: %w", ErrClosed)
	}
	if c.tx.switched {
		return fmt.Errorf("switch write: already switched after %d kernel bytes: %w", c.tx.kernel, unix.EALREADY)
	}
	if kernelBytes == ^uint64(0) {
		return fmt.Errorf("switch write: %d kernel bytes: %w", kernelBytes, unix.EINVAL)
	}
	c.tx.kernel, c.tx.switched = kernelBytes, true
	atomic.StoreUint64(c.tx.kernelp, kernelBytes+1)
	return nil
}

// ReaderSwitch reports whether the peer switched its writes to the ring, and if so k, the
// number of bytes of this direction it sent through the kernel before: read exactly k bytes
// from the kernel connection (counting from its first byte), then only from the ring. The
// first value seen is kept (a peer rewriting it later changes nothing). The value comes from
// the peer: a k below what was already read from the kernel means a broken peer (reset).
func (c *Conn) ReaderSwitch() (k uint64, ok bool) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0, false
	}
	if !c.rx.switched {
		v := atomic.LoadUint64(c.rx.kernelp)
		if v == 0 {
			return 0, false
		}
		c.rx.kernel, c.rx.switched = v-1, true
	}
	return c.rx.kernel, true
}

// Write copies as much of iov (in order) as fits into our ring and publishes it; n is the
// number of bytes written (a partial write when the ring filled). ErrFull when nothing fit
// (n = 0, EAGAIN for a non-blocking socket: WaitSpace before sleeping), ErrClosed after our
// ShutdownWrite or Close, ErrPeerClosed after the peer's Close, ErrReset after the peer's Abort,
// ErrNotSwitched before SwitchWrite, ErrCorrupt once the peer's head did not validate. An
// empty iov writes nothing and returns nil.
//
// wake reports that the peer's reader needs a wake-up (it does not spin and no wake-up is
// pending): the caller sends one through the kernel. Write does not allocate. Copying from iov
// may panic (a fault on the program's memory): nothing of this call is published then, and the
// mutex is released.
func (c *Conn) Write(iov [][]byte) (n int, wake bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	t := &c.tx
	switch {
	case c.mem == nil || t.shut:
		return 0, false, ErrClosed
	case t.broken:
		return 0, false, ErrCorrupt
	case !t.switched:
		return 0, false, ErrNotSwitched
	}
	if ps := c.peerState(); ps&StateReset != 0 {
		return 0, false, ErrReset
	} else if ps&StateClosed != 0 {
		return 0, false, ErrPeerClosed
	}
	total := iovLen(iov)
	if total == 0 {
		return 0, false, nil
	}
	free := t.cap - (t.tail - t.headCache)
	if total > free {
		h := atomic.LoadUint64(t.headp)
		if h < t.headCache || h > t.tail {
			t.broken = true
			return 0, false, ErrCorrupt
		}
		t.headCache = h
		free = t.cap - (t.tail - h)
		if free == 0 {
			return 0, false, ErrFull
		}
	}
	m := min(total, free)
	copyIn(t.data, t.mask, t.tail, iov, m)
	t.tail += m
	atomic.SwapUint64(t.tailp, t.tail) // a full barrier before wakeReader's loads: stream_wake.go
	return int(m), c.wakeReader(), nil
}

// available returns the validated number of unread bytes of our reading direction, loading
// the peer's tail when the cached one shows fewer than want. ok is false (and the direction
// marked broken) when the tail does not validate.
func (r *rxDir) available(want uint64) (avail uint64, ok bool) {
	avail = r.tailCache - r.head
	if avail >= want {
		return avail, true
	}
	t := atomic.LoadUint64(r.tailp)
	if t < r.tailCache || t-r.head > r.cap {
		r.broken = true
		return 0, false
	}
	r.tailCache = t
	return t - r.head, true
}

// readErr is the error of a read that found no byte: EOF when the peer shut its write side
// (loaded before the tail, so every byte it wrote was seen) or we shut our read side, else
// ErrEmpty.
func (c *Conn) readErr(ps StreamState) error {
	if ps&StateWriteShut != 0 || c.rx.shut {
		return io.EOF
	}
	return ErrEmpty
}

// Read copies up to iovLen(iov) unread bytes into iov (in order) and consumes them; n is the
// number of bytes read (partial when fewer were there). With no byte to read: io.EOF once the
// peer shut its write side (or closed) and everything it wrote was read, or once we shut our
// read side; ErrEmpty otherwise (EAGAIN: SpinEnd, check again, then sleep). ErrReset after the
// peer's Abort (unread data discarded), ErrClosed after our Close, ErrCorrupt once the peer's
// tail did not validate. An empty iov reads nothing and returns nil.
//
// wake reports that the peer's writer waits for the space this read freed (WaitSpace): the
// caller sends it a wake-up through the kernel. Read does not allocate. Copying into iov may
// panic: nothing is consumed then.
func (c *Conn) Read(iov [][]byte) (n int, wake bool, err error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	r := &c.rx
	if c.mem == nil {
		return 0, false, ErrClosed
	}
	if r.broken {
		return 0, false, ErrCorrupt
	}
	ps := c.peerState()
	if ps&StateReset != 0 {
		return 0, false, ErrReset
	}
	total := iovLen(iov)
	if total == 0 {
		return 0, false, nil
	}
	avail, ok := r.available(total)
	if !ok {
		return 0, false, ErrCorrupt
	}
	if avail == 0 {
		return 0, false, c.readErr(ps)
	}
	m := min(total, avail)
	copyOut(iov, r.data, r.mask, r.head, m)
	r.head += m
	atomic.SwapUint64(r.headp, r.head) // a full barrier before wakeWriter's loads: stream_wake.go
	return int(m), c.wakeWriter(false), nil
}

// Peek copies up to iovLen(iov) unread bytes starting off bytes after the oldest unread one
// into iov, without consuming anything (MSG_PEEK, SO_PEEK_OFF). Errors as Read's when no byte
// lies at or after off.
func (c *Conn) Peek(iov [][]byte, off int) (n int, err error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	r := &c.rx
	if c.mem == nil {
		return 0, ErrClosed
	}
	if r.broken {
		return 0, ErrCorrupt
	}
	ps := c.peerState()
	if ps&StateReset != 0 {
		return 0, ErrReset
	}
	total := iovLen(iov)
	if total == 0 {
		return 0, nil
	}
	if off < 0 {
		off = 0
	}
	avail, ok := r.available(uint64(off) + total)
	if !ok {
		return 0, ErrCorrupt
	}
	if avail <= uint64(off) {
		return 0, c.readErr(ps)
	}
	m := min(total, avail-uint64(off))
	copyOut(iov, r.data, r.mask, r.head+uint64(off), m)
	return int(m), nil
}

// Readable returns the number of unread bytes (FIONREAD); 0 after the peer's Abort, after
// Close, or when the peer's tail does not validate.
func (c *Conn) Readable() int {
	avail, _ := c.RxPoll()
	return avail
}

// RxPoll returns what Readable and PeerState return, under one lock: readiness checks of event
// loops with many connections make both for every connection at every look.
func (c *Conn) RxPoll() (avail int, ps StreamState) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0, 0
	}
	ps = c.peerState()
	if c.rx.broken || ps&StateReset != 0 {
		return 0, ps
	}
	a, _ := c.rx.available(^uint64(0))
	return int(a), ps
}

// unread returns how many of our written bytes the peer has not consumed (validated).
func (t *txDir) unread() uint64 {
	h := atomic.LoadUint64(t.headp)
	if h < t.headCache || h > t.tail {
		t.broken = true
		return t.cap
	}
	t.headCache = h
	return t.tail - h
}

// Unread returns the bytes we wrote that the peer has not read yet (SIOCOUTQ); 0 after Close.
func (c *Conn) Unread() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil {
		return 0
	}
	return int(c.tx.unread())
}

// Space returns the bytes Write can take now (0 after Close, shutdown, or a corrupt head).
func (c *Conn) Space() int {
	space, _ := c.TxSpace()
	return space
}

// TxSpace returns what Space returns and the capacity of our writing ring, under one lock.
func (c *Conn) TxSpace() (space, capacity int) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil {
		return 0, 0
	}
	if c.tx.shut || c.tx.broken {
		return 0, int(c.tx.cap)
	}
	return int(c.tx.cap - c.tx.unread()), int(c.tx.cap)
}

// Capacities returns the ring sizes of our writing and our reading direction.
func (c *Conn) Capacities() (tx, rx int) {
	c.lockBoth()
	defer c.unlockBoth()
	return int(c.tx.cap), int(c.rx.cap)
}
