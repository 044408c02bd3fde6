package shm

import "sync/atomic"

// ConnStats are the counters of one end of a stream connection, for the statistics segment.
// Byte counts are ring positions: they count only what went through the rings, not the bytes
// sent through the kernel before the switch (KernelTx, KernelRx).
type ConnStats struct {
	Side       int    // 0: this end created the segment; 1: it attached
	PeerPID    int    // the peer's process (0 while it has not attached)
	TxBytes    uint64 // bytes we wrote into our ring (incremented by every Write)
	RxBytes    uint64 // bytes we read from the peer's ring (incremented by every Read)
	TxFill     uint64 // bytes we wrote that the peer has not read (SIOCOUTQ)
	RxFill     uint64 // bytes the peer wrote that we have not read (FIONREAD)
	TxCap      uint64 // capacity of our writing direction
	RxCap      uint64 // capacity of our reading direction
	KernelTx   uint64 // bytes we sent through the kernel before SwitchWrite
	KernelRx   uint64 // bytes the peer sent through the kernel before its switch (once known)
	DataWakes  uint64 // wake-ups we asked for on behalf of the peer's reader
	SpaceWakes uint64 // wake-ups we asked for on behalf of the peer's writer
	State      StreamState
	PeerState  StreamState
}

// Stats returns the connection's counters (zero after Close). Values the peer writes (its
// positions, its state) are clamped, never trusted for anything but display.
func (c *Conn) Stats() ConnStats {
	c.lockBoth()
	defer c.unlockBoth()
	if c.mem == nil {
		return ConnStats{Side: c.side}
	}
	c.learnPeer()
	t, r := &c.tx, &c.rx
	s := ConnStats{
		Side:       c.side,
		PeerPID:    int(c.peerPID.Load()),
		TxBytes:    t.tail,
		RxBytes:    r.head,
		TxCap:      t.cap,
		RxCap:      r.cap,
		KernelTx:   t.kernel,
		KernelRx:   r.kernel,
		DataWakes:  c.dataWakes.Load(),
		SpaceWakes: c.spaceWakes.Load(),
		State:      StreamState(atomic.LoadUint64(c.myFlags)) & stateMask,
		PeerState:  c.peerState(),
	}
	if h := atomic.LoadUint64(t.headp); h <= t.tail && t.tail-h <= t.cap {
		s.TxFill = t.tail - h
	}
	if tl := atomic.LoadUint64(r.tailp); tl >= r.head && tl-r.head <= r.cap {
		s.RxFill = tl - r.head
	}
	return s
}
