package xdp

import "fmt"

// Stats are one socket's counters: its own (since Open) and the kernel's
// (XDP_STATISTICS). A plain struct, to be copied into a statistics segment.
type Stats struct {
	RxPackets uint64 // frames handed to the caller by Receive
	RxBytes   uint64 // their bytes (Ethernet header included)
	RxInvalid uint64 // RX descriptors refused by the bounds checks (never handed out)
	RxWakeups uint64 // recvfrom calls made because the fill ring asked for a wakeup

	TxPackets      uint64 // frames posted on the TX ring by Transmit
	TxBytes        uint64 // their bytes
	TxCompleted    uint64 // frames the kernel reported sent (completion ring)
	CompInvalid    uint64 // completion entries refused by the bounds checks
	TxWakeups      uint64 // sendto calls made to have the kernel send
	TxWakeupErrors uint64 // those that failed (ENOBUFS, ENETDOWN or worse)

	// The kernel's counters (getsockopt XDP_STATISTICS), since the socket was bound.
	KernelRxDropped        uint64 // frames dropped for any other reason than the ones below
	KernelRxInvalidDescs   uint64 // invalid descriptors on the fill ring
	KernelTxInvalidDescs   uint64 // invalid descriptors on the TX ring
	KernelRxRingFull       uint64 // frames dropped because the RX ring was full
	KernelRxFillRingEmpty  uint64 // times the fill ring was empty when a frame arrived
	KernelTxRingEmptyDescs uint64 // times the kernel found the TX ring empty when asked to send
}

// Stats returns the socket's counters; the kernel's part is read with one getsockopt.
// It is safe from any goroutine while the socket is open.
func (s *Socket) Stats() (Stats, error) {
	c := &s.counters
	st := Stats{
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(), RxInvalid: c.rxInvalid.Load(), RxWakeups: c.rxWakeups.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(), TxCompleted: c.txCompleted.Load(),
		CompInvalid: c.compInvalid.Load(), TxWakeups: c.txWakeups.Load(), TxWakeupErrors: c.txWakeupErrors.Load(),
	}
	k, err := kernelStats(s.fd)
	if err != nil {
		return st, fmt.Errorf("xsk stats %d/%d: %w", s.ifindex, s.queue, err)
	}
	st.KernelRxDropped = k.Rx_dropped
	st.KernelRxInvalidDescs = k.Rx_invalid_descs
	st.KernelTxInvalidDescs = k.Tx_invalid_descs
	st.KernelRxRingFull = k.Rx_ring_full
	st.KernelRxFillRingEmpty = k.Rx_fill_ring_empty_descs
	st.KernelTxRingEmptyDescs = k.Tx_ring_empty_descs
	return st, nil
}
