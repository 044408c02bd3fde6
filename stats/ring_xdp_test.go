package stats

import "testing"

// TestRingXDPCounters: the AF_XDP kernel statistics of a ring have their own words, read back
// in the snapshot, in deltas, and zeroed with the other ring counters.
func TestRingXDPCounters(t *testing.T) {
	w := newWriter(t, 4)
	r := w.OpenRing(TransportXDP, "xdp:veth0/1")
	r.CountRx(60)
	r.Add(RingXDPRxDropped, 1)
	r.Add(RingXDPRxInvalidDescs, 2)
	r.Add(RingXDPTxInvalidDescs, 3)
	r.Add(RingXDPRxRingFull, 4)
	r.Add(RingXDPFillRingEmpty, 5)
	r.Add(RingXDPTxRingEmpty, 6)
	r.SetQueue(7, 8)
	seg := openReader(t, w)
	prev := snapshot(t, seg).Rings[0]
	got := prev
	if got.RxPackets != 1 || got.RxBytes != 60 || got.XDPRxDropped != 1 || got.XDPRxInvalidDescs != 2 ||
		got.XDPTxInvalidDescs != 3 || got.XDPRxRingFull != 4 || got.XDPFillRingEmpty != 5 || got.XDPTxRingEmpty != 6 ||
		got.RxQueue != 7 || got.TxQueue != 8 || got.Retransmits != 0 {
		t.Fatalf("ring %+v", got)
	}
	r.Add(RingXDPRxRingFull, 10)
	d := snapshot(t, seg).Rings[0].Delta(prev)
	if d.XDPRxRingFull != 10 || d.XDPRxDropped != 0 || d.RxPackets != 0 {
		t.Fatalf("delta %+v", d)
	}
	if err := seg.Zero(nil); err != nil {
		t.Fatal(err)
	}
	z := snapshot(t, seg).Rings[0]
	if z.XDPRxRingFull != 0 || z.XDPTxRingEmpty != 0 || z.RxPackets != 0 || z.RxQueue != 7 {
		t.Fatalf("after Zero %+v", z)
	}
}
