package shmtcp

import (
	"syscall"

	"golang.org/x/sys/unix"

	ring "github.com/goxio/goxio/offload/shm"
)

// Going back to the kernel at fork. A forked child shares the program's connections and never
// enters the library: it reads and writes the kernel socket. So before a fork every paired
// connection goes back to the kernel connection for good, one direction at a time, without
// losing or reordering a byte (offload/shm stream_back.go has the protocol):
//   - our writes (BeforeFork, or at our next send once the peer asked): the ring gets nothing
//     more; we publish how many kernel bytes we sent (K and every wake byte) and send
//     everything after through the kernel. No wake byte is sent after that (it would be data).
//   - the peer's writes: BeforeFork asks the peer to go back; it does at its next call. Our
//     reader reads the ring to its end, discards the kernel bytes up to the peer's count (wake
//     bytes), then reads the kernel socket only.
//
// Once both directions are back the segment is closed: the connection is the kernel's.
//
// What stays wrong: bytes the peer wrote into the ring after the fork and before it saw the
// request are read by the parent only, never by the child (which reads the kernel socket), and
// wake bytes the peer sent before it saw the request reach a child that reads as data.

// BeforeFork sends the connection back to the kernel before the program forks (see above). fd is
// the kernel socket.
func (t *TCP) BeforeFork(fd int) {
	conn := t.conn.Load()
	if conn == nil {
		return
	}
	if t.txmu.TryLock() {
		t.backWrite(fd, conn)
		t.txmu.Unlock()
	} else {
		// A send in progress (asleep waiting for ring space): it goes back when it returns.
		t.txWantBack()
	}
	conn.RequestBack()
	t.rxmu.Lock()
	if t.rx.switched() && conn.Readable() == 0 {
		t.drainWakes(fd, conn) // queued wake bytes would be data to a child reading the socket
	}
	t.rxmu.Unlock()
}

// backWrite sends our writes back to the kernel for good. A connection whose writes never
// switched simply never switches (side 0 then withdraws after the grace, and side 1 follows).
// txmu is held.
func (t *TCP) backWrite(fd int, conn *ring.Conn) {
	if t.tx.phase() == phaseKernel {
		t.txNever()
		return
	}
	sent, ok := t.txGoBack()
	if !ok {
		return // back already, or never switched
	}
	conn.WriteBack(sent)
	t.env.ctr.back.Add(1)
	t.backDone(conn)
}

// maybeBackWrite goes back when the peer asked for it or a fork wanted it while a send held
// txmu. txmu is held.
func (t *TCP) maybeBackWrite(fd int, conn *ring.Conn) {
	if t.tx.phase() == phaseRing && (t.tx.has(flagBackWanted) || conn.BackRequested()) {
		t.backWrite(fd, conn)
	}
}

// txRing reports whether our sends go into the ring: after our switch and before going back.
func (t *TCP) txRing() bool { return t.tx.phase() == phaseRing }

// peerBack is called by a receive step that found the ring empty (or ended): when the peer's
// writer went back, it discards the kernel bytes up to the peer's count and reports true (the
// receive continues on the kernel socket); false when the peer is still on the ring or its
// last wake bytes are still on their way. rxmu is held.
func (t *TCP) peerBack(fd int, conn *ring.Conn) bool {
	if t.rx.phase() == phaseBack {
		return true
	}
	if t.rxStash != nil {
		t.rxGoBack() // drainWakes found data after the peer's count
		return true
	}
	sent, ok := conn.PeerWriteBack()
	if !ok || conn.Readable() > 0 {
		return false
	}
	for t.kConsumed < sent {
		n, e := recvNull(fd, int(min(sent-t.kConsumed, 1<<20)), unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			return false
		}
		if e != 0 || n == 0 {
			break // the connection ended: the kernel's receive reports it
		}
		t.kConsumed += uint64(n)
		t.wakesRx.Add(uint64(n))
	}
	t.rxGoBack()
	t.backDone(conn)
	return true
}

// backDone closes the segment once both directions are back on the kernel (and no stashed
// byte is left): every call is then the kernel's.
func (t *TCP) backDone(conn *ring.Conn) {
	if t.tx.phase() == phaseBack && t.rx.phase() == phaseBack && t.rxStash == nil &&
		t.conn.CompareAndSwap(conn, nil) {
		_, _ = conn.Close()
	}
}

// stepBack is a receive step after the peer went back: stashed bytes first, then the kernel
// socket without blocking. rxmu is held.
func (t *TCP) stepBack(fd int, conn *ring.Conn, d *dataCall) (int, syscall.Errno, bool, bool) {
	if len(t.rxStash) > 0 {
		n := min(len(t.rxStash), d.total)
		if !d.discard {
			n = copyTo(d.bufs, t.rxStash[:n])
		}
		if d.flags&unix.MSG_PEEK == 0 {
			t.rxStash = t.rxStash[n:]
			if len(t.rxStash) == 0 {
				t.rxStash = nil
				t.backDone(conn)
			}
		}
		t.kernRx.Add(uint64(n))
		return n, 0, true, false
	}
	flags := d.flags&(unix.MSG_PEEK|unix.MSG_TRUNC) | unix.MSG_DONTWAIT
	var n int
	var e syscall.Errno
	if d.discard {
		n, e = recvNull(fd, d.total, flags)
	} else {
		n, e = recvBufs(fd, d.bufs, d.total, flags)
	}
	switch {
	case e == 0 && n > 0:
		if d.flags&unix.MSG_PEEK == 0 {
			t.kConsumed += uint64(n)
		}
		t.kernRx.Add(uint64(n))
		return n, 0, true, false
	case e == unix.EAGAIN || e == unix.EINTR:
		return 0, 0, false, false
	case e == 0:
		return 0, 0, true, true
	}
	return -1, e, true, true
}

// copyTo copies b into the front of bufs; it returns the bytes copied.
func copyTo(bufs [][]byte, b []byte) int {
	n := 0
	for _, dst := range bufs {
		if n == len(b) {
			break
		}
		n += copy(dst, b[n:])
	}
	return n
}
