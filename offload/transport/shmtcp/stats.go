package shmtcp

// Stats are one connection's counters for the statistics segment.
type Stats struct {
	Paired     bool   // the connection has a segment now (false: kernel only)
	Withdrew   bool   // it had one and went back to the kernel before any switch
	Side       int    // 0: this end created the segment; 1: it attached
	RxRing     bool   // receives read the ring (the reader switched)
	TxRing     bool   // sends write the ring (we switched)
	RingTx     uint64 // bytes the program sent through the ring
	RingRx     uint64 // bytes the program received from the ring
	KernelTx   uint64 // bytes the program sent through the kernel (before the switch, or unpaired)
	KernelRx   uint64 // bytes the program received from the kernel
	WakesTx    uint64 // wake bytes sent to the peer
	WakesRx    uint64 // wake bytes drained from the kernel socket
	TxFill     uint64 // ring bytes we wrote that the peer has not read
	RxFill     uint64 // ring bytes the peer wrote that we have not read
	TxCap      uint64 // ring capacity of our sending direction
	RxCap      uint64 // ring capacity of our receiving direction
	DataWakes  uint64 // wake-ups the segment asked for on behalf of the peer's reader
	SpaceWakes uint64 // wake-ups the segment asked for on behalf of the peer's writer
}

// Stats returns the connection's counters.
func (t *TCP) Stats() Stats {
	s := Stats{Withdrew: t.withdrew.Load(), Side: t.side,
		RingTx: t.ringTx.Load(), RingRx: t.ringRx.Load(), KernelTx: t.kernTx.Load(), KernelRx: t.kernRx.Load(),
		WakesTx: t.wakesTx.Load(), WakesRx: t.wakesRx.Load()}
	if conn := t.conn.Load(); conn != nil {
		cs := conn.Stats()
		s.Paired = true
		s.RxRing, s.TxRing = t.rx.phase() == phaseRing, t.txRing()
		s.TxFill, s.RxFill, s.TxCap, s.RxCap = cs.TxFill, cs.RxFill, cs.TxCap, cs.RxCap
		s.DataWakes, s.SpaceWakes = cs.DataWakes, cs.SpaceWakes
	}
	return s
}
