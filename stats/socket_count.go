package stats

import "sync/atomic"

// The data-path methods of Socket: each is a nil check, one pointer load
// and one or two atomic adds into the mapped slot. No lock, no syscall, no
// allocation. "os" selects the kernel-socket twin of a counter.

// counterIndex returns the slot word of c, moved to its kernel twin when os
// is true (only for the first 16 counters, which have twins).
func counterIndex(c Counter, os bool) int {
	i := sCounters + int(c)
	if os {
		i += int(osDelta)
	}
	return i
}

// Add adds n to counter c. Counters from CtrTxDrops on have no kernel twin.
func (s *Socket) Add(c Counter, n uint64) {
	if s == nil || c >= numSocketCounters {
		return
	}
	atomic.AddUint64(&s.slot.Load()[sCounters+int(c)], n)
}

// CountRx counts one receive call that returned data: bytes returned. Count
// each message of recvmmsg separately. os: the kernel socket served it.
func (s *Socket) CountRx(os bool, bytes int) { s.CountRxN(os, 1, bytes) }

// CountRxN counts n datagrams received at once, bytes in all (a box's queue).
func (s *Socket) CountRxN(os bool, n, bytes int) {
	if s == nil {
		return
	}
	p := s.slot.Load()
	i := counterIndex(CtrRxPackets, os)
	atomic.AddUint64(&p[i&(sockWords-1)], uint64(n))
	atomic.AddUint64(&p[(i+1)&(sockWords-1)], uint64(bytes))
}

// CountTx counts one successful send call: bytes accepted. Count each
// message of sendmmsg separately.
func (s *Socket) CountTx(os bool, bytes int) {
	if s == nil {
		return
	}
	p := s.slot.Load()
	i := counterIndex(CtrTxPackets, os)
	atomic.AddUint64(&p[i&(sockWords-1)], 1)
	atomic.AddUint64(&p[(i+1)&(sockWords-1)], uint64(bytes))
}

// CountRxEAGAIN counts a receive call that returned EAGAIN/EWOULDBLOCK.
func (s *Socket) CountRxEAGAIN(os bool) { s.bump(CtrRxEAGAIN, os) }

// CountTxEAGAIN counts a send call that returned EAGAIN/EWOULDBLOCK.
func (s *Socket) CountTxEAGAIN(os bool) { s.bump(CtrTxEAGAIN, os) }

// CountRxError counts a receive call that failed with another errno.
func (s *Socket) CountRxError(os bool) { s.bump(CtrRxErrors, os) }

// CountTxError counts a send call that failed with another errno.
func (s *Socket) CountTxError(os bool) { s.bump(CtrTxErrors, os) }

func (s *Socket) bump(c Counter, os bool) {
	if s == nil {
		return
	}
	atomic.AddUint64(&s.slot.Load()[counterIndex(c, os)&(sockWords-1)], 1)
}

// CountRxDrop counts an incoming datagram of the given size dropped because
// the receive queue was over its limit.
func (s *Socket) CountRxDrop(bytes int) {
	if s == nil {
		return
	}
	p := s.slot.Load()
	atomic.AddUint64(&p[sCounters+int(CtrRxDropPackets)], 1)
	atomic.AddUint64(&p[sCounters+int(CtrRxDropBytes)], uint64(bytes))
}

// CountTxDrop counts an outgoing packet dropped after its send call
// succeeded.
func (s *Socket) CountTxDrop() { s.Add(CtrTxDrops, 1) }

// CountPoll counts a blocking receive that found data while busy-polling
// (hit) or polled in vain and went to sleep (miss).
func (s *Socket) CountPoll(hit bool) {
	if s == nil {
		return
	}
	c := CtrPollMiss
	if hit {
		c = CtrPollHit
	}
	atomic.AddUint64(&s.slot.Load()[sCounters+int(c)], 1)
}

// CountRetransmit counts a retransmitted TCP segment.
func (s *Socket) CountRetransmit() { s.Add(CtrRetransmits, 1) }

// CountZcopy counts a datagram handed over in place (VMA's recvfrom_zcopy) and publishes how
// many records the program holds now, held.
func (s *Socket) CountZcopy(held int) {
	if s == nil {
		return
	}
	p := s.slot.Load()
	atomic.AddUint64(&p[sCounters+int(CtrRxZcopy)], 1)
	atomic.StoreUint64(&p[gRxHeld], nonNeg(held))
}

// SetHeld publishes how many records handed over in place the program holds now.
func (s *Socket) SetHeld(held int) {
	if s == nil {
		return
	}
	atomic.StoreUint64(&s.slot.Load()[gRxHeld], nonNeg(held))
}

// SetRxQueue publishes the current receive queue depth; the maxima follow.
func (s *Socket) SetRxQueue(pkts, bytes int) {
	if s == nil {
		return
	}
	p := s.slot.Load()
	np, nb := nonNeg(pkts), nonNeg(bytes)
	atomic.StoreUint64(&p[gRxQueuePkts], np)
	atomic.StoreUint64(&p[gRxQueueBytes], nb)
	storeMax(&p[gRxQueuePktsMax], np)
	storeMax(&p[gRxQueueBytesMax], nb)
}

// SetTxQueue publishes the bytes sent but not yet taken by the peer
// (netstat's Send-Q).
func (s *Socket) SetTxQueue(bytes int) {
	if s == nil {
		return
	}
	atomic.StoreUint64(&s.slot.Load()[gTxQueueBytes], nonNeg(bytes))
}

// TxKernelWords returns the slot's kernel twins of CtrTxPackets, CtrTxBytes, CtrTxEAGAIN and
// CtrTxErrors, which follow each other: a writer outside Go (the library's sending trampoline,
// which sends some datagrams without the engine) adds to them atomically. The words stay valid
// memory for the process's life (after CloseSocket they belong to the next socket of the slot,
// after Close to private memory); nil for a nil Socket.
func (s *Socket) TxKernelWords() *[4]uint64 {
	if s == nil {
		return nil
	}
	i := counterIndex(CtrTxPackets, true)
	return (*[4]uint64)(s.slot.Load()[i : i+4])
}

// RxKernelWords returns the slot's kernel twins of CtrRxPackets, CtrRxBytes, CtrRxEAGAIN and
// CtrRxErrors, for a writer outside Go (the library's receiving trampoline, which reads some
// datagrams from the kernel socket without the engine). Valid as TxKernelWords' are; nil for a
// nil Socket.
func (s *Socket) RxKernelWords() *[4]uint64 {
	if s == nil {
		return nil
	}
	i := counterIndex(CtrRxPackets, true)
	return (*[4]uint64)(s.slot.Load()[i : i+4])
}

// TxRingWords returns the slot's words that count sends through the socket's transport (not the
// kernel): packets, then bytes, for a writer outside Go that adds to them atomically (the preload
// library's own ring sends); nil on a nil *Socket. Valid as TxKernelWords' are.
func (s *Socket) TxRingWords() *[2]uint64 {
	if s == nil {
		return nil
	}
	i := counterIndex(CtrTxPackets, false)
	return (*[2]uint64)(s.slot.Load()[i : i+2])
}
