package stats

import (
	"testing"
	"time"
)

func TestRates(t *testing.T) {
	w := newWriter(t, 4)
	a := w.Open(3)
	b := w.Open(4)
	r := w.OpenRing(TransportSHM, "r")
	for range 10 {
		a.CountRx(false, 100)
		b.CountRx(false, 1)
	}
	r.CountRx(1)
	seg := openReader(t, w)
	prev := snapshot(t, seg)
	for range 30 {
		a.CountRx(false, 100)
	}
	r.CountRx(1)
	w.CloseSocket(b)
	c := w.Open(5) // reuses b's slot with a new generation
	for range 4 {
		c.CountTx(true, 1)
	}
	cur := snapshot(t, seg)
	cur.Taken = prev.Taken.Add(2 * time.Second)
	d := Rates(cur, prev, 0)
	if got := findFD(t, d, 3).Counters; got.RxPackets != 15 || got.RxBytes != 1500 {
		t.Errorf("fd 3 rates %+v, want 15 pkt/s 1500 B/s", got)
	}
	if got := findFD(t, d, 5).Counters; got.TxOSPackets != 2 || got.RxPackets != 0 {
		t.Errorf("new socket in a reused slot: %+v, want 2 tx os pkt/s", got)
	}
	if d.Rings[0].RxPackets != 1 {
		t.Errorf("ring rate %d", d.Rings[0].RxPackets)
	}
	if findFD(t, cur, 3).Counters.RxPackets != 40 {
		t.Errorf("Rates modified its input")
	}
}
