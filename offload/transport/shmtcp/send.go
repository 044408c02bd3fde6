package shmtcp

import (
	"errors"
	"github.com/goxio/goxio/offload/internal/wait"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/umem"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// Sending: before our switch every send is the program's call on the kernel socket, counted
// into K; after it, the bytes go into the ring, and a sleeping peer reader gets a wake byte.
// Sends are serialized by txmu (the switch needs no kernel send in progress).

// maxWriterSleep bounds one sleep of a writer waiting for ring space: its wake-up is a byte on
// the kernel socket, which may already be readable with a byte meant for our reader (then it
// backs off from 50 us up to this), whose wake byte a reading thread may drain first (both
// share the kernel socket), and which shutdown(SHUT_WR) of another thread does not make
// readable. A writer waiting for space is in the middle of a transfer: a look every 2 ms costs
// little.
const maxWriterSleep = 2e6

// send performs a send call on a connection with a segment.
func (t *TCP) send(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	switch c.Op {
	case transport.OpSendmmsg:
		return t.sendmmsg(c)
	case transport.OpSendfile:
		return t.sendfile(c)
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	t.txmu.Lock()
	defer t.txmu.Unlock()
	conn := t.sendRing(c.FD)
	if conn == nil {
		return t.kernelSend(c)
	}
	var arr [maxBufs][]byte
	d, ok := parseCall(c, arr[:0])
	if !ok {
		if c.Op == transport.OpWritev {
			return -1, unix.EINVAL, false // a negative count or more than UIO_MAXIOV
		}
		return -1, unix.EMSGSIZE, false // more than UIO_MAXIOV iovecs
	}
	if d.flags&unix.MSG_OOB != 0 {
		return -1, unix.EOPNOTSUPP, false
	}
	if t.tx.has(flagShut) {
		return -1, unix.EPIPE, false
	}
	n, errno = t.ringSend(c.FD, conn, &d, t.nonblock() || d.flags&unix.MSG_DONTWAIT != 0)
	return n, errno, false
}

// sendRing is the pairing step of a send: switch our writes when we may, withdraw or follow a
// withdrawal, go back to the kernel when asked. It returns the segment when the send goes into
// the ring, nil when it goes to the kernel. txmu is held.
func (t *TCP) sendRing(fd int) *ring.Conn {
	conn := t.conn.Load()
	if conn != nil && !t.trySwitchWrite(fd, conn) {
		conn = t.settleLocked(conn)
	}
	if conn != nil {
		t.maybeBackWrite(fd, conn)
	}
	if conn == nil || !t.txRing() || t.peerEnded(conn) {
		return nil
	}
	return conn
}

// kernelSend makes a send call on the kernel socket: before our switch (its bytes count in K),
// or once the peer ended (peerEnded). txmu is held.
func (t *TCP) kernelSend(c *transport.Call) (int, syscall.Errno, bool) {
	if t.end.gone() == endGoneEOF {
		var arr [maxBufs][]byte
		if d, ok := parseCall(c, arr[:0]); ok && t.absorbSend() {
			return d.total, 0, true // see kernelEnded
		}
	}
	n, errno := kernel.Do(c)
	if errno == 0 && n > 0 {
		if capture.On() {
			t.tapKernelSend(c, n, t.kTx)
		}
		t.kTx += uint64(n)
		t.kernTx.Add(uint64(n))
	}
	return n, errno, true
}

// peerEnded reports whether the peer closed its end (without a reset) or died: then nobody reads
// the ring any more, and a send is the kernel's, which behaves as a kernel TCP send to a closed
// peer does (the first one is accepted and answered with a reset, the next fail with EPIPE).
func (t *TCP) peerEnded(conn *ring.Conn) bool {
	if g := t.end.gone(); g != 0 {
		return g == endGoneEOF
	}
	ps := conn.PeerState()
	if ps&ring.StateReset != 0 {
		return false
	}
	// A peer that never switched its writes ends with the kernel's EOF; whether it lives on
	// (a half-close) or died, only its process says.
	return ps&ring.StateClosed != 0 || (t.rx.has(flagKernEOF) && conn.PeerDead())
}

// settleLocked is settle for a sender, which holds txmu: side 0 withdraws after the grace, side
// 1 follows a creator that withdrew.
func (t *TCP) settleLocked(conn *ring.Conn) *ring.Conn {
	if t.side == 1 {
		if conn.PeerState()&ring.StateClosed != 0 {
			if _, ok := conn.ReaderSwitch(); !ok {
				t.env.ctr.peerWithdrew.Add(1)
				t.withdraw(conn)
				return nil
			}
		}
		return conn
	}
	if nanotime()-t.born > int64(t.env.p.AttachGrace) && !conn.PeerAttached() {
		t.env.ctr.withdrawnGrace.Add(1)
		t.withdraw(conn)
		return nil
	}
	return conn
}

// ringSend writes the call's bytes into the ring as the kernel's TCP send does: all of them when
// blocking (waiting for space), what fits when not (EAGAIN for none); a partial count when a
// signal or SO_SNDTIMEO ends the wait after some bytes.
func (t *TCP) ringSend(fd int, conn *ring.Conn, call *dataCall, nonblock bool) (int, syscall.Errno) {
	// A local copy advanced in place (see receive).
	dl := *call
	d := &dl
	if d.total == 0 {
		return 0, 0
	}
	sent := 0
	var w wait.Call
	backoff := int64(0)
	// No spinning: a writer that finds the ring full waits for its reader's space wake-up
	// (WaitSpace) or sleeps.
	n, errno := wait.Loop(&w, wait.Policy{Timeout: t.sndTimeo.Load(), Signals: t.env.p.Signals}, wait.Steps{
		Try: func(wait.Look) (int, syscall.Errno, bool) {
			if t.end.gone() != 0 || t.end.closed() || t.tx.has(flagShut) {
				return -1, unix.EPIPE, true
			}
			n, wake, err := conn.Write(d.bufs)
			if wake {
				t.wake(fd)
			}
			if n > 0 {
				sent += n
				if pos := t.ringTx.Add(uint64(n)) - uint64(n); capture.On() {
					t.tapOut(fd, capture.ShmTCP, dl.bufs, n, t.kTx+pos)
				}
				if sent >= d.total {
					return sent, 0, true
				}
				dl.bufs = advance(dl.bufs, n)
				backoff = 0
			}
			switch {
			case err == nil, errors.Is(err, ring.ErrFull):
			case errors.Is(err, ring.ErrReset):
				if !t.reportReset() {
					return -1, unix.EPIPE, true
				}
				return -1, unix.ECONNRESET, true
			case errors.Is(err, ring.ErrCorrupt):
				_, _ = conn.Abort()
				return -1, unix.ECONNRESET, true
			default: // ErrClosed (our shutdown or close), ErrPeerClosed
				return -1, unix.EPIPE, true
			}
			if nonblock {
				return -1, unix.EAGAIN, true
			}
			return 0, 0, false
		},
		Sleep: func() (int, syscall.Errno, bool) {
			txCap, _ := conn.Capacities() // here, not per send: it takes both of the segment's locks
			if conn.WaitSpace(min(d.total-sent, max(txCap/2, 1))) {
				conn.CancelWaitSpace()
				return 0, 0, false
			}
			events := int16(unix.POLLIN | unix.POLLRDHUP)
			limit := int64(maxWriterSleep)
			if backoff > 0 {
				events = unix.POLLRDHUP
				limit = backoff
			}
			rev, e := t.sleep(fd, events, w.Timeout(limit))
			if e != 0 && e != unix.EINTR {
				return -1, e, true
			}
			if rev&unix.POLLIN != 0 && conn.Space() == 0 {
				backoff = 50e3 // readable, but not for us: a wake byte for our reader
			} else if backoff > 0 {
				backoff = min(backoff*2, maxWriterSleep/20)
			}
			return 0, 0, false
		},
	})
	if errno != 0 {
		return partial(sent, errno) // the bytes sent before the error, a signal or SO_SNDTIMEO
	}
	return n, 0
}

// partial is a send's result: the bytes sent, or the error when none were.
func partial(sent int, e syscall.Errno) (int, syscall.Errno) {
	if sent > 0 {
		return sent, 0
	}
	return -1, e
}

// sendmmsg sends each message as sendmsg would, stopping at the first error (reported only
// when no message was sent).
func (t *TCP) sendmmsg(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	vlen, flags := int(uint32(c.A[1])), c.A[2]
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
		sub := transport.Call{Op: transport.OpSendmsg, FD: c.FD, A: [5]uintptr{mp, flags}}
		m, e, os := t.send(&sub)
		if e != 0 {
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
