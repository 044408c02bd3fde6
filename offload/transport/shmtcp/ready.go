package shmtcp

import (
	"golang.org/x/sys/unix"

	ring "github.com/goxio/goxio/offload/shm"
)

// Readiness for select, poll and epoll. Which source is authoritative depends on the direction's
// state (Mode):
//   - receive side before the reader's switch (or with no segment): the kernel socket's POLLIN
//     is the truth, except that once the peer switched, bytes beyond K are wake-ups: Readable
//     answers for this case too (kernel bytes before K, the kernel's EOF or error).
//   - receive side after the switch: Readable. The kernel socket's POLLIN then only means
//     "something to look at" (a wake byte for data or space, EOF or RST of the peer): a sleeper
//     in poll/epoll on the kernel fd is woken by it and must ask Readable/Writable again.
//   - send side before our switch: the kernel's POLLOUT. After it: Writable (the kernel
//     socket's POLLOUT is then always set: its send buffer is empty). A poller waiting for
//     POLLOUT on a full ring calls WantWritable: the peer's reader then sends a wake byte when
//     space returns, which makes the kernel fd readable.

// Mode reports which direction runs on the ring: rx after the reader's switch, tx after ours.
func (t *TCP) Mode() (rx, tx bool) {
	if t.conn.Load() == nil {
		return false, false
	}
	return t.rx.phase() == phaseRing, t.txRing()
}

// Readable reports whether a receive would not block: ring data, EOF (the peer shut or closed
// and everything was read, our SHUT_RD, a dead peer), a reset, or before the reader's switch
// kernel bytes before K or the kernel's end. fd is any fd of the socket. False with no segment:
// the kernel answers.
func (t *TCP) Readable(fd int) bool {
	conn := t.conn.Load()
	if conn == nil {
		return false
	}
	t.rxmu.Lock()
	defer t.rxmu.Unlock()
	switch t.rx.phase() {
	case phaseBack:
		if len(t.rxStash) > 0 {
			return true
		}
		rev, e := ppoll1(fd, unix.POLLIN|unix.POLLRDHUP, &unix.Timespec{})
		return e == 0 && rev != 0
	case phaseKernel, phaseToK:
		t.learnK(conn)
		if !t.rxSwitch() {
			q, e := ioctlInt(fd, unix.SIOCINQ)
			if e == 0 && q > 0 && (!t.kKnown() || t.kRx < t.rxK) {
				return true
			}
			rev, e := ppoll1(fd, unix.POLLIN|unix.POLLRDHUP, &unix.Timespec{})
			return e == 0 && rev&(unix.POLLRDHUP|unix.POLLERR|unix.POLLHUP) != 0
		}
	}
	return t.ringReadable(conn.RxPoll())
}

// ringReadable is Readable after the reader's switch, with the peer's state ps: ring data, or a
// receive that ends at once (EOF after the peer's shutdown or our SHUT_RD, a reset, a dead peer).
// avail is the ring's unread bytes (ring.Conn.RxPoll gives both).
func (t *TCP) ringReadable(avail int, ps ring.StreamState) bool {
	return avail > 0 || t.ended(ps)
}

// ended reports, with the peer's state ps, that a receive after the switch ends at once with no
// byte: the peer shut its writing side, reset or died, or our reading side was shut.
func (t *TCP) ended(ps ring.StreamState) bool {
	return t.end.gone() != 0 || t.rx.has(flagShut) || ps&(ring.StateWriteShut|ring.StateReset) != 0
}

// ringHup is Hup once both directions are on the ring, with the peer's state ps.
func (t *TCP) ringHup(ps ring.StreamState) bool {
	return t.end.gone() != 0 || ps&ring.StateReset != 0 || (t.tx.has(flagShut) && ps&ring.StateWriteShut != 0)
}

// Writable reports whether a send would not block after our switch: a third of the ring free
// (the kernel's rule for POLLOUT), or a send that fails at once (shut down, peer closed or
// reset, a dead peer). Before our switch, false: the kernel answers.
func (t *TCP) Writable() bool {
	conn := t.conn.Load()
	if conn == nil || !t.txRing() {
		return false
	}
	return t.writableWith(conn, conn.PeerState())
}

// writableWith is Writable after our switch, with the peer's state ps.
func (t *TCP) writableWith(conn *ring.Conn, ps ring.StreamState) bool {
	if t.tx.has(flagShut) || t.end.gone() != 0 || ps&(ring.StateClosed|ring.StateReset) != 0 {
		return true
	}
	space, capacity := conn.TxSpace()
	return space >= max(capacity/3, 1)
}

// WantWritable registers a poller waiting for POLLOUT after our switch: when the ring has a third
// of its capacity free again the peer sends a wake byte (the kernel fd becomes readable). It
// reports whether the space is already there (then nothing was registered).
func (t *TCP) WantWritable() bool {
	conn := t.conn.Load()
	if conn == nil || !t.txRing() {
		return true
	}
	tx, _ := conn.Capacities()
	if conn.WaitSpace(max(tx/3, 1)) {
		conn.CancelWaitSpace()
		return true
	}
	return false
}

// Hup reports POLLHUP after the switch of both directions: both directions of the connection
// are finished (our SHUT_WR and the peer's end of writing), or it was reset or the peer died.
func (t *TCP) Hup() bool {
	conn := t.conn.Load()
	if conn == nil || t.rx.phase() != phaseRing || !t.txRing() {
		return false
	}
	return t.ringHup(conn.PeerState())
}

// InQueue answers FIONREAD (SIOCINQ): the bytes a receive would get now. false: ask the kernel
// (no segment). fd is any fd of the socket.
func (t *TCP) InQueue(fd int) (int, bool) {
	conn := t.conn.Load()
	if conn == nil {
		return 0, false
	}
	t.rxmu.Lock()
	defer t.rxmu.Unlock()
	switch t.rx.phase() {
	case phaseBack:
		q, e := ioctlInt(fd, unix.SIOCINQ)
		if e != 0 {
			return 0, false
		}
		return q + len(t.rxStash), true
	case phaseKernel, phaseToK:
		t.learnK(conn)
		if !t.rxSwitch() {
			q, e := ioctlInt(fd, unix.SIOCINQ)
			if e != 0 {
				return 0, false
			}
			if !t.kKnown() {
				return q, true
			}
			before := int(t.rxK - t.kRx)
			if q <= before {
				return q, true
			}
			return before + conn.Readable(), true
		}
	}
	return conn.Readable(), true
}

// OutQueue answers SIOCOUTQ: bytes sent and not yet read by the peer. Before our switch the
// kernel's count; after it, what the peer did not read from the ring. false: ask the kernel.
func (t *TCP) OutQueue() (int, bool) {
	conn := t.conn.Load()
	if conn == nil || !t.txRing() {
		return 0, false
	}
	return conn.Unread(), true
}

// Poll event bits golang.org/x/sys/unix does not name.
const (
	pollRdNorm = 0x40
	pollWrNorm = 0x100
	pollIn     = unix.POLLIN | pollRdNorm
	pollOut    = unix.POLLOUT | pollWrNorm
)

// Poll is the connection's answer to poll, select or epoll for the kernel socket fd: events are
// the ones asked for (POLLIN, POLLOUT; the others are the kernel's), kernel the revents the
// kernel reported for fd in the same look (0 for a look at the rings only). ok is false when the
// kernel's answer stands (no segment).
//
// Once the peer switched, a kernel POLLIN only means "look again": when the connection has
// nothing for a receive, Poll drains the wake bytes queued on the kernel socket and reports no
// POLLIN (a wake byte whose data a receive already took stays queued otherwise, and makes the
// kernel's select or poll report a readable socket whose blocking read then blocks). After our
// switch the kernel's POLLOUT (always set: its send buffer is empty) becomes Writable; without
// space, the peer's reader is asked for a wake byte when space returns (WantWritable), which
// makes the kernel fd readable: a caller that sleeps on fd asks the kernel for KernelEvents.
func (t *TCP) Poll(fd int, events, kernel int16) (revents int16, ok bool) {
	conn := t.conn.Load()
	if conn == nil {
		return kernel, false
	}
	if kernel == 0 && t.rx.phase() == phaseRing && t.txRing() {
		return t.pollRings(conn, events), true
	}
	revents = kernel &^ (pollIn | pollOut)
	if t.rx.phase() == phaseBack {
		revents |= kernel & pollIn
		if t.stashed() {
			revents |= events & pollIn
		}
	} else if !t.rx.switched() && !t.peerSwitched(conn) {
		revents |= kernel & pollIn // kernel bytes are the peer's data
	} else {
		in := t.Readable(fd)
		if !in && kernel&unix.POLLIN != 0 {
			t.drainIdle(fd, conn)
			in = t.Readable(fd)
		}
		if in {
			revents |= events & pollIn
		}
	}
	if events&pollOut != 0 {
		switch {
		case !t.txRing():
			revents |= kernel & pollOut
		case t.Writable() || t.WantWritable():
			revents |= events & pollOut
		}
	}
	if t.Hup() {
		revents |= unix.POLLHUP
	}
	if t.rx.switched() && t.resetPending(conn.PeerState()) {
		revents |= unix.POLLERR
	}
	return revents, true
}

// pollRings is Poll's answer from the segment alone, for a look at the rings (no kernel events)
// of a connection whose both directions are on the ring: the peer's state is read once for the
// receive side and POLLHUP (an epoll_wait that polls spins over every member with it).
func (t *TCP) pollRings(conn *ring.Conn, events int16) (revents int16) {
	avail, ps := conn.RxPoll()
	if events&pollIn != 0 && t.ringReadable(avail, ps) {
		revents |= events & pollIn
	}
	if events&pollOut != 0 && (t.writableWith(conn, ps) || t.WantWritable()) {
		revents |= events & pollOut
	}
	if t.ringHup(ps) {
		revents |= unix.POLLHUP
	}
	if t.resetPending(ps) {
		revents |= unix.POLLERR
	}
	return revents
}

// resetPending reports, with the peer's state ps, a reset (the peer closed with unread data,
// aborted, or died with a reset) that no receive or send has reported yet: the kernel's pending
// socket error, POLLERR.
func (t *TCP) resetPending(ps ring.StreamState) bool {
	return !t.end.resetSeen() && (ps&ring.StateReset != 0 || t.end.gone() == endGoneReset)
}

// Ended reports ended after the reader's switch (edge-triggered epoll reports it once, as the
// kernel's wake-up for the FIN).
func (t *TCP) Ended() bool {
	conn := t.conn.Load()
	return conn != nil && t.rx.switched() && t.ended(conn.PeerState())
}

// KernelEvents are the events to ask the kernel for on fd while waiting for events on the
// connection: after our switch POLLOUT is the ring's (see Poll) and its wake-up a kernel POLLIN.
func (t *TCP) KernelEvents(events int16) int16 {
	if t.conn.Load() == nil || !t.txRing() || events&pollOut == 0 {
		return events
	}
	return events&^pollOut | unix.POLLIN
}

// stashed reports whether kernel data taken by a wake drain waits for a receive.
func (t *TCP) stashed() bool {
	t.rxmu.Lock()
	defer t.rxmu.Unlock()
	return len(t.rxStash) > 0
}

// peerSwitched reports whether the peer's writes went to the ring (the kernel's bytes beyond its
// K are then wake-ups).
func (t *TCP) peerSwitched(conn *ring.Conn) bool {
	_, ok := conn.ReaderSwitch()
	return ok
}

// drainIdle reads the wake bytes queued on the kernel socket of a connection that has nothing
// for a receive, as a receive on its empty ring does (the kernel's EOF or error is recorded for
// a peer that ended without saying so in its state).
func (t *TCP) drainIdle(fd int, conn *ring.Conn) {
	t.rxmu.Lock()
	defer t.rxmu.Unlock()
	switch t.rx.phase() {
	case phaseBack:
		return
	case phaseKernel, phaseToK:
		t.learnK(conn)
		if !t.rxSwitch() {
			return // kernel bytes before K are data: only a receive takes them
		}
	}
	if conn.Readable() > 0 {
		return
	}
	eof, e := t.drainWakes(fd, conn)
	conn.ClearWake()
	if eof || e != 0 {
		t.kernelEnded(conn, e)
	}
}

// SpinConn is the segment a poller spinning on this connection (select, poll, epoll_wait) marks
// with SpinBegin and SpinEnd, so that the peer's writer skips its wake bytes meanwhile; nil
// when receives do not read the ring. After SpinEnd the poller looks at the connection once more
// before it sleeps.
func (t *TCP) SpinConn() *ring.Conn {
	conn := t.conn.Load()
	if conn == nil || t.rx.phase() != phaseRing || t.rxSleepers.Load() > 0 {
		return nil
	}
	return conn
}

// Sleep marks (on) or unmarks a thread of ours asleep in the kernel waiting for the connection's
// data (a blocking receive, select, poll, epoll_wait); mark before the last look at the ring,
// then ask Marked whether the sleep must be bounded. Marking registers the sleeper on the
// segment (ring.Conn.SleepBegin, a read-modify-write: the barrier before the last look), so the
// peer's writer wakes it whatever spin marks are held. Every Sleep(true) is followed by one
// Sleep(false); registrations are counted, not tied to threads: a sleeper leaving ends one
// registration only when more are held than sleepers remain.
func (t *TCP) Sleep(on bool) {
	t.sleepmu.Lock()
	defer t.sleepmu.Unlock()
	if on {
		t.rxSleepers.Add(1)
		if c := t.conn.Load(); c != nil && (t.sleepConn == nil || t.sleepConn == c) && c.SleepBegin() {
			t.sleepConn = c
			t.rxRegs++
		}
		return
	}
	if n := t.rxSleepers.Add(-1); t.rxRegs > n {
		t.rxRegs--
		t.sleepConn.SleepEnd()
	}
}
