package shmtcp

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// The transport contract (transport.Endpoint) for the methods tcp.go, estab.go, back.go and
// ready.go do not already name: how the engine's hooks map onto the connection's life.

var _ transport.Endpoint = (*TCP)(nil)

// Accepted says that the engine made the socket for a connection accept returned (the server's
// end); call it before the socket is shared.
func (t *TCP) Accepted() { t.accepted = true }

// Bound does nothing: the connection learns its addresses at Established.
func (t *TCP) Bound(int) {}

// Connected does nothing (see BeforeData).
func (t *TCP) Connected(int, netip.AddrPort) {}

// OptionValue answers getsockopt(IPPROTO_TCP, TCP_NODELAY or TCP_CORK) with the program's value
// once the transport owns the kernel's (TCPOption).
func (t *TCP) OptionValue(level, name int, val []byte) {
	if level != unix.IPPROTO_TCP || len(val) < 4 {
		return
	}
	if v, ok := t.TCPOption(name); ok {
		binary.NativeEndian.PutUint32(val, uint32(int32(v)))
	}
}

// Join does nothing: no multicast on a stream.
func (t *TCP) Join(int, netip.Addr, netip.Addr) {}

// Leave does nothing.
func (t *TCP) Leave(netip.Addr, netip.Addr) {}

// Ioctl answers FIONREAD (InQueue) and SIOCOUTQ (OutQueue) from the rings once the connection
// uses them.
func (t *TCP) Ioctl(fd int, req uint32) (int, bool) {
	switch req {
	case unix.SIOCINQ:
		return t.InQueue(fd)
	case unix.SIOCOUTQ:
		return t.OutQueue()
	}
	return 0, false
}

// Queues are the ring bytes not yet read, each way, while the connection has a segment.
func (t *TCP) Queues() (rx, tx int, ok bool) {
	st := t.Stats()
	if !st.Paired {
		return 0, 0, false
	}
	return int(min(st.RxFill, 1<<31)), int(min(st.TxFill, 1<<31)), true
}

// GiveUp does nothing: a connection goes back to the kernel only through its own protocol
// (withdrawal, Fork).
func (t *TCP) GiveUp(transport.Reason) {}

// GaveUp is ReasonNone.
func (t *TCP) GaveUp() transport.Reason { return transport.ReasonNone }

// RestoreOptions does nothing.
func (t *TCP) RestoreOptions(int) {}

// Fork: a connection not yet established never pairs (the child shares it and cannot read
// rings: Established will not run); one already established goes back to the kernel connection
// (BeforeFork, back.go). Nothing is spilled: the bytes stay in the segment for the parent.
func (t *TCP) Fork(fd int) ([][2][]byte, bool) {
	t.estmu.Lock()
	if t.est.Load() == estNone {
		// As if Established ran without a segment: every call goes to the kernel as it is.
		t.est.Store(estDone)
		t.estmu.Unlock()
		return nil, false
	}
	t.estmu.Unlock()
	t.BeforeFork(fd)
	return nil, false
}

// SetSpill does nothing: Fork spills nothing.
func (t *TCP) SetSpill([]byte) {}

// Finish ends the connection (Close) once it was established; a connection that never was has
// nothing to end but the kernel's, and its registration in the pairing table.
func (t *TCP) Finish(fd int) {
	t.pair.Drop() // a connection that never paired: its registration goes with it
	if t.est.Load() != estNone {
		t.Close(fd)
	}
}

// Starting is false: before the segment, receives read the kernel socket.
func (t *TCP) Starting() bool { return false }

// Arrivals counts the bytes that arrived for a receive on the connection so far: the bytes
// received (ring and kernel) and the bytes a receive would get now (the ring's, the kernel's data
// before the reader's switch, or the kernel socket fd's queue without a segment). It grows with
// every arrival whatever path the bytes take (new bytes behind unread kernel bytes too), and
// only then.
func (t *TCP) Arrivals(fd int) uint64 {
	st := t.Stats()
	q, ok := t.InQueue(fd)
	if !ok {
		if n, e := ioctlInt(fd, unix.SIOCINQ); e == 0 {
			q = n
		}
	}
	return st.RingRx + st.KernelRx + uint64(max(q, 0))
}

// Spin does nothing: pollers of a connection take a Mark.
func (t *TCP) Spin(bool) {}

// Mark takes a spin mark on the segment (SpinConn): the peer's writer skips its wake bytes while
// it is held. nil when receives do not read the ring.
func (t *TCP) Mark() transport.Mark {
	c := t.SpinConn()
	if c == nil {
		return nil
	}
	c.SpinBegin()
	return c
}

// Marked reports whether a sleeper of ours could miss its wake-up: spin marks are held on the
// segment (by others, once the caller gave its own back) while one of our sleepers is not
// registered on it (it went to sleep before the segment existed); such a sleep is bounded.
func (t *TCP) Marked() bool {
	c := t.conn.Load()
	if c == nil || t.rx.phase() != phaseRing || c.Spinners() == 0 {
		return false
	}
	t.sleepmu.Lock()
	defer t.sleepmu.Unlock()
	return t.rxRegs < t.rxSleepers.Load()
}

// Bell is -1: a connection's wake-ups arrive on its kernel socket (KernelEvents).
func (t *TCP) Bell() int { return -1 }

// Rang does nothing.
func (t *TCP) Rang() {}

// Quiet does nothing.
func (t *TCP) Quiet(bool) {}
