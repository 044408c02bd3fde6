package shmtcp

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// Receiving: before the reader's switch the bytes come from the kernel socket, read without
// blocking and never more than the peer's K once known (bytes beyond K are wake-ups); after it,
// from the ring, with the kernel socket carrying wake-ups and the end of the connection. The
// call's blocking (spin, then ppoll) is the transport's own, never the kernel's: a kernel
// receive that blocks could wait for bytes that went into the ring.

// kernelRecvFlags are the receive flags only the kernel serves.
const kernelRecvFlags = unix.MSG_OOB | unix.MSG_ERRQUEUE

// recv performs a receive call on a connection with a segment.
func (t *TCP) recv(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	if c.Op == transport.OpRecvmmsg {
		return t.recvmmsg(c)
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	var arr [maxBufs][]byte
	d, ok := parseCall(c, arr[:0])
	if !ok || d.flags&kernelRecvFlags != 0 {
		n, errno = kernel.Do(c)
		return n, errno, true
	}
	n, errno, viaOS = t.receive(c.FD, &d)
	if errno == 0 {
		d.finishRecv()
	}
	return n, errno, viaOS
}

// receive waits for bytes as the kernel's TCP receive does: at least one (all with
// MSG_WAITALL), 0 at EOF; EAGAIN without blocking or when SO_RCVTIMEO expires; EINTR after a
// signal handler (SA_RESTART restarts unless a timeout is set); a partial count when interrupted
// after some bytes.
func (t *TCP) receive(fd int, call *dataCall) (int, syscall.Errno, bool) {
	// A local copy advanced in place: a store through the pointer would move the caller's
	// buffer list to the heap (an allocation per call).
	dl := *call
	d := &dl
	if d.total == 0 {
		return 0, 0, false
	}
	p := &t.env.p
	peek := d.flags&unix.MSG_PEEK != 0
	nonblock := t.nonblock() || d.flags&unix.MSG_DONTWAIT != 0
	waitall := d.flags&unix.MSG_WAITALL != 0 && !peek && !nonblock
	want := d.total
	got, viaOS := 0, false
	var w wait.Call
	var spun *ring.Conn
	defer func() {
		if spun != nil {
			spun.SpinEnd()
		}
	}()
	n, errno := wait.Loop(&w, wait.Policy{
		Polls: p.RxPoll, Look: t.waitAvg.Long(), Cold: !t.waitAvg.SpinWorth(), Timeout: t.rcvTimeo.Load(), Signals: p.Signals,
	}, wait.Steps{
		Try: func(l wait.Look) (int, syscall.Errno, bool) {
			for {
				if t.end.closed() {
					return got, 0, true // woken by Close: 0 as after shutdown(SHUT_RD)
				}
				// The kernel socket (wake bytes, a dead peer's EOF or reset) is looked at
				// before a sleep and otherwise at most every kernelEvery: the peer's state is
				// in the segment, and a receive that finds the ring empty must not cost a
				// system call each time.
				checkKernel := l.Last || (!l.Spinning && l.Polls > 0) || t.kernelDue()
				n, errno, kern, done := t.step(fd, d, checkKernel)
				if n > 0 {
					got += n
					viaOS = viaOS || kern
					if !waitall || got >= want {
						t.waitAvg.Waited(&w)
						return got, 0, true
					}
					dl.bufs = advance(dl.bufs, n)
					dl.total -= n
					continue
				}
				if done {
					if got > 0 {
						return got, 0, true
					}
					viaOS = kern
					return n, errno, true
				}
				if nonblock {
					return -1, unix.EAGAIN, true
				}
				return 0, 0, false
			}
		},
		CanSpin: func() bool { return t.rx.phase() == phaseRing },
		Mark: func(on bool) {
			if on {
				// No mark while another thread of ours sleeps on the connection: the peer's
				// wake byte is what wakes it.
				if spun = t.SpinConn(); spun != nil {
					spun.SpinBegin()
				}
			} else if spun != nil {
				spun.SpinEnd()
				spun = nil
			}
		},
		Sleep: func() (int, syscall.Errno, bool) {
			// Sleeping registers on the segment (Sleep): the peer's wake byte comes whatever
			// marks others hold (an epoll set's awake marks, offload/iomux/epoll_awake.go); a
			// sleeper that could not register looks at the ring again every millisecond.
			t.Sleep(true)
			limit := int64(0)
			if t.Marked() {
				limit = 1e6
			}
			var e syscall.Errno
			if t.rx.switched() && t.Readable(fd) {
				e = unix.EINTR // the last look (after marking) found something: go round
			} else {
				_, e = t.sleep(fd, unix.POLLIN|unix.POLLRDHUP, w.Timeout(limit))
			}
			t.Sleep(false)
			if e != 0 && e != unix.EINTR {
				got, viaOS = 0, false // the sleep's error is the call's, bytes or not
				return -1, e, true
			}
			return 0, 0, false
		},
	})
	if errno != 0 && got > 0 {
		return got, 0, viaOS // a signal or the timeout ends the wait after some bytes
	}
	return n, errno, viaOS
}

// kernelEvery is how often a receive on the ring looks at the kernel socket while it does not
// sleep.
const kernelEvery = 1e6 // ns

// kernelDue reports whether the kernel socket is due for a look (and then counts it as done).
func (t *TCP) kernelDue() bool {
	now := nanotime()
	last := t.lastKernel.Load()
	return now-last >= kernelEvery && t.lastKernel.CompareAndSwap(last, now)
}

// step makes one non-blocking attempt: n > 0 bytes, or done with the call's result (0 at EOF, or
// an errno), or nothing for now. kern: the bytes came from the kernel.
func (t *TCP) step(fd int, d *dataCall, checkKernel bool) (n int, errno syscall.Errno, kern, done bool) {
	t.rxmu.Lock()
	defer t.rxmu.Unlock()
	conn := t.conn.Load()
	switch t.rx.phase() {
	case phaseBack:
		return t.stepBack(fd, conn, d)
	case phaseRing:
		n, errno, kern, done = t.stepRing(fd, t.settle(fd, conn, false), d, checkKernel)
	default:
		n, errno, kern, done = t.stepKernel(fd, conn, d)
	}
	if errno == unix.ECONNRESET && !kern && !t.reportReset() {
		// The kernel reports a reset once (to a receive or a send); after it, receives
		// return 0 and sends fail with EPIPE.
		return 0, 0, false, true
	}
	return n, errno, kern, done
}

// learnK looks whether the peer switched and records its K (rxToK); rxmu is held.
func (t *TCP) learnK(conn *ring.Conn) {
	if conn == nil || t.rx.phase() != phaseKernel {
		return
	}
	if k, ok := conn.ReaderSwitch(); ok {
		t.rxToK(k)
	}
}

// kKnown reports whether the peer's K is known (rxK holds it); rxmu is held.
func (t *TCP) kKnown() bool { return t.rx.phase() != phaseKernel }

// stepKernel is a step before the reader's switch (or on a withdrawn connection, conn nil):
// one non-blocking kernel receive, limited to the bytes before K. rxmu is held.
func (t *TCP) stepKernel(fd int, conn *ring.Conn, d *dataCall) (int, syscall.Errno, bool, bool) {
	t.learnK(conn)
	if t.rxSwitch() {
		return t.stepRing(fd, t.settle(fd, conn, false), d, true)
	}
	limit := d.total
	if t.kKnown() {
		limit = min(limit, int(t.rxK-t.kRx))
	}
	peek := d.flags&unix.MSG_PEEK != 0
	flags := d.flags&(unix.MSG_PEEK|unix.MSG_TRUNC) | unix.MSG_DONTWAIT
	var n int
	var e syscall.Errno
	if d.discard {
		n, e = recvNull(fd, limit, flags)
	} else {
		n, e = recvBufs(fd, d.bufs, limit, flags)
	}
	// The peer may have switched during the receive: what lies beyond K is wake-ups.
	t.learnK(conn)
	switch {
	case e == 0 && n > 0:
		if !peek {
			t.kConsumed += uint64(n) // wake bytes beyond K included
		}
		if t.kKnown() {
			data := min(n, int(t.rxK-t.kRx))
			if wakes := n - data; wakes > 0 && !peek {
				// The peer's data wake-ups, taken here rather than by drainWakes: clear the
				// flag as drainWakes does, or the peer, seeing a wake-up still pending, never
				// sends another and a later sleep on the empty ring never ends.
				t.wakesRx.Add(uint64(wakes))
				if conn != nil {
					conn.ClearWake()
				}
			}
			n = data
		}
		if n == 0 {
			t.rxSwitch() // everything received lay beyond K: wake-ups
			return t.stepRing(fd, t.settle(fd, conn, false), d, true)
		}
		if !peek {
			if capture.On() && !d.discard {
				t.tapIn(fd, capture.Kernel, d.bufs, n, t.kRx)
			}
			t.kRx += uint64(n)
			t.rxSwitch()
		}
		t.kernRx.Add(uint64(n))
		conn = t.settle(fd, conn, t.side == 0 && !peek)
		return n + t.acrossK(fd, conn, d, n), 0, true, false
	case e == unix.EAGAIN || e == unix.EINTR:
		if t.rxSwitch() {
			return t.stepRing(fd, t.settle(fd, conn, false), d, true)
		}
		t.settle(fd, conn, false)
		return 0, 0, false, false
	case e == 0:
		// The kernel's EOF: the end of the peer's stream unless it switched (then its ring
		// continues the stream, and its state says how it ends).
		if t.rxSwitch() {
			return t.stepRing(fd, t.settle(fd, conn, false), d, true)
		}
		t.rxKernelEOF()
		return 0, 0, true, true
	default:
		if t.rxSwitch() {
			return t.stepRing(fd, t.settle(fd, conn, false), d, true)
		}
		return -1, e, true, true
	}
}

// acrossK continues a receive that read the last kernel bytes before the peer's K into the
// ring, as the kernel's receive takes every queued byte up to the call's length: n bytes of d
// were taken (or peeked) from the kernel. It returns the ring bytes taken. rxmu is held.
func (t *TCP) acrossK(fd int, conn *ring.Conn, d *dataCall, n int) int {
	peek := d.flags&unix.MSG_PEEK != 0
	end := t.kRx
	if peek {
		end += uint64(n)
	}
	if conn == nil || n >= d.total || !t.kKnown() || end != t.rxK {
		return 0
	}
	rest := dataCall{total: d.total - n, flags: d.flags, discard: d.discard}
	if !d.discard {
		// advance trims the first buffer in place: work on a copy of the list, which the
		// caller advances again by the call's whole count.
		var arr [maxBufs][]byte
		rest.bufs = advance(append(arr[:0], d.bufs...), n)
	}
	m, err := t.ringRead(fd, conn, &rest)
	if err != nil || m < 0 {
		return 0
	}
	return m
}

// stepRing is a step after the reader's switch: the ring, then (when it is empty and
// checkKernel) the kernel socket's wake bytes and end. rxmu is held.
func (t *TCP) stepRing(fd int, conn *ring.Conn, d *dataCall, checkKernel bool) (int, syscall.Errno, bool, bool) {
	if conn == nil {
		return 0, 0, false, true // closed
	}
	n, err := t.ringRead(fd, conn, d)
	if err != nil && t.peerBack(fd, conn) {
		return t.stepBack(fd, conn, d) // the peer went back to the kernel (a fork)
	}
	if conn.BackRequested() && t.txmu.TryLock() {
		t.maybeBackWrite(fd, conn)
		t.txmu.Unlock()
	}
	if !errors.Is(err, ring.ErrEmpty) {
		if err == nil && checkKernel && conn.WakePending() {
			// Woken with data in the ring: take the wake byte too, so that none stays queued
			// in the kernel socket of a reader that reads nothing more (a process killed with
			// unread bytes resets its connection instead of closing it).
			before := t.wakesRx.Load()
			if eof, e := t.drainWakes(fd, conn); eof || e != 0 {
				t.kernelEnded(conn, e)
			} else if t.wakesRx.Load() > before {
				conn.ClearWake() // the byte taken: the writer may wake us again
			}
		}
		return ringResult(n, err)
	}
	if g := t.end.gone(); g != 0 {
		return goneResult(g)
	}
	if !checkKernel {
		return 0, 0, false, false
	}
	eof, e := t.drainWakes(fd, conn)
	conn.ClearWake()
	if eof || e != 0 {
		t.kernelEnded(conn, e) // the kernel connection ended
	}
	n, err = t.ringRead(fd, conn, d)
	if errors.Is(err, ring.ErrEmpty) {
		if g := t.end.gone(); g != 0 {
			return goneResult(g)
		}
		return 0, 0, false, false
	}
	return ringResult(n, err)
}

// ringRead is one read (or peek, or discard with MSG_TRUNC) of the ring.
func (t *TCP) ringRead(fd int, conn *ring.Conn, d *dataCall) (int, error) {
	peek := d.flags&unix.MSG_PEEK != 0
	if d.flags&unix.MSG_TRUNC != 0 {
		if peek {
			if r := conn.Readable(); r > 0 {
				return min(r, d.total), nil
			}
			_, err := conn.Peek(nil, 0)
			if err == nil {
				err = ring.ErrEmpty
			}
			return 0, err
		}
		return t.discard(fd, conn, d.total)
	}
	if peek {
		return conn.Peek(d.bufs, 0)
	}
	n, wake, err := conn.Read(d.bufs)
	if wake {
		t.txOweWake(fd)
	}
	if n > 0 {
		if pos := t.ringRx.Add(uint64(n)) - uint64(n); capture.On() {
			t.tapIn(fd, capture.ShmTCP, d.bufs, n, t.rxK+pos)
		}
	}
	return n, err
}

// discard consumes up to want ring bytes without copying them to the program (MSG_TRUNC on
// TCP: the kernel discards).
func (t *TCP) discard(fd int, conn *ring.Conn, want int) (int, error) {
	var scratch [4096]byte
	done := 0
	for done < want {
		iov := [1][]byte{scratch[:min(want-done, len(scratch))]}
		n, wake, err := conn.Read(iov[:])
		if wake {
			t.txOweWake(fd)
		}
		done += n
		if err != nil || n == 0 {
			if done > 0 {
				break
			}
			return 0, err
		}
	}
	t.ringRx.Add(uint64(done))
	return done, nil
}

// ringResult turns a ring read's outcome into the call's.
func ringResult(n int, err error) (int, syscall.Errno, bool, bool) {
	switch {
	case err == nil:
		return n, 0, false, n == 0
	case err == io.EOF, errors.Is(err, ring.ErrClosed):
		return 0, 0, false, true
	case errors.Is(err, ring.ErrReset), errors.Is(err, ring.ErrCorrupt):
		return -1, unix.ECONNRESET, false, true
	}
	return 0, 0, false, false
}

// goneResult is what a receive returns once a dead peer's ring is drained.
func goneResult(g uint32) (int, syscall.Errno, bool, bool) {
	if g == endGoneReset {
		return -1, unix.ECONNRESET, false, true
	}
	return 0, 0, false, true
}

// recvmmsg receives into each message as recvmsg would; MSG_WAITFORONE makes the ones after
// the first non-blocking. (The timeout argument is the kernel's: checked after each message.)
func (t *TCP) recvmmsg(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	vlen, flags := int(uint32(c.A[1])), int(int32(c.A[2]))
	if vlen > umem.MaxIov {
		vlen = umem.MaxIov
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	count := 0
	for i := 0; i < vlen; i++ {
		mp, lenp := umem.Mmsghdr(c.A[0], i)
		f := flags &^ unix.MSG_WAITFORONE
		if count > 0 && flags&unix.MSG_WAITFORONE != 0 {
			f |= unix.MSG_DONTWAIT
		}
		sub := transport.Call{Op: transport.OpRecvmsg, FD: c.FD, A: [5]uintptr{mp, uintptr(f)}}
		m, e, os := t.recv(&sub)
		if e != 0 || m == 0 {
			if count > 0 {
				break
			}
			return m, e, os
		}
		viaOS = viaOS || os
		*lenp = uint32(m)
		count++
	}
	return count, 0, viaOS
}
