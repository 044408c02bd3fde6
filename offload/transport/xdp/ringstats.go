package xdp

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/stats"
)

// RingSlots opens and closes ring slots of the statistics segment (*stats.Writer does; a nil
// writer gives nil rings, which count nothing).
type RingSlots interface {
	OpenRing(t stats.Transport, name string) *stats.Ring
	CloseRing(r *stats.Ring)
}

// ringStats is what one AF_XDP socket publishes in its statistics ring "xdp:IFNAME/QUEUE":
// frames and bytes taken from the RX ring and posted on the TX ring (counted as they go), and,
// refreshed now and then (reading the kernel's part is a system call), the socket's wake-up
// system calls and RX descriptors refused, the kernel's XDP_STATISTICS and the frames held in
// sockets' queues and in the kernel: by a thread that took or sent frames at most every
// publishEvery, by a receiver about to sleep at most every publishSleeping when frames moved,
// and by PublishStats.
type ringStats struct {
	st     *stats.Ring
	mu     sync.Mutex // one refresh at a time (TryLock: a busy refresh is skipped)
	pub    xdp.Stats  // the counters as last published
	at     atomic.Int64
	frames atomic.Uint64 // frames taken or sent, counted as they go
	seen   uint64        // frames when last published
}

// Refresh intervals (ns).
const (
	publishEvery    = 10e6
	publishSleeping = 1e6
)

// openStats gives x its statistics ring.
func (e *Env) openStats(x *xsk) {
	if e.p.Stats == nil {
		return
	}
	x.rs.st = e.p.Stats.OpenRing(stats.TransportXDP, "xdp:"+x.ifc.name+"/"+strconv.Itoa(x.queue))
}

// closeStats frees x's statistics ring.
func (e *Env) closeStats(x *xsk) {
	if e.p.Stats != nil && x.rs.st != nil {
		x.publish(0, true)
		e.p.Stats.CloseRing(x.rs.st)
		x.rs.st = nil
	}
}

// countRx counts n frames of bytes in all taken from the RX ring; countTx one frame posted on
// the TX ring. Both refresh the ring when publishEvery passed.
func (x *xsk) countRx(n, bytes int) {
	if x.rs.st == nil {
		return
	}
	x.rs.st.Add(stats.RingRxPackets, uint64(n))
	x.rs.st.Add(stats.RingRxBytes, uint64(bytes))
	x.rs.frames.Add(uint64(n))
	x.publish(publishEvery, false)
}

func (x *xsk) countTx(bytes int) {
	if x.rs.st == nil {
		return
	}
	x.rs.st.CountTx(bytes)
	x.rs.frames.Add(1)
	x.publish(publishEvery, false)
}

// publish refreshes the statistics ring when at least every ns passed since the last refresh
// (and, unless force, frames moved since).
func (x *xsk) publish(every int64, force bool) {
	r := &x.rs
	if r.st == nil {
		return
	}
	now := nanotime()
	if now-r.at.Load() < every || !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	frames := r.frames.Load()
	if !force && frames == r.seen {
		return
	}
	cur, err := x.s.Stats()
	if err != nil {
		return
	}
	r.at.Store(now)
	r.seen = frames
	p := &r.pub
	for _, c := range []struct {
		c        stats.RingCounter
		now, was uint64
	}{
		{stats.RingRxDrops, cur.RxInvalid, p.RxInvalid},
		{stats.RingWakeSent, cur.RxWakeups + cur.TxWakeups, p.RxWakeups + p.TxWakeups},
		{stats.RingXDPRxDropped, cur.KernelRxDropped, p.KernelRxDropped},
		{stats.RingXDPRxInvalidDescs, cur.KernelRxInvalidDescs, p.KernelRxInvalidDescs},
		{stats.RingXDPTxInvalidDescs, cur.KernelTxInvalidDescs, p.KernelTxInvalidDescs},
		{stats.RingXDPRxRingFull, cur.KernelRxRingFull, p.KernelRxRingFull},
		{stats.RingXDPFillRingEmpty, cur.KernelRxFillRingEmpty, p.KernelRxFillRingEmpty},
		{stats.RingXDPTxRingEmpty, cur.KernelTxRingEmptyDescs, p.KernelTxRingEmptyDescs},
	} {
		if c.now > c.was {
			r.st.Add(c.c, c.now-c.was)
		}
	}
	*p = cur
	a := x.s.Accounting()
	r.st.SetQueue(a.RxHeld, a.TxKernel)
}

// PublishStats refreshes the statistics ring of every AF_XDP socket of the Env now (at exit,
// before the final statistics are written).
func (e *Env) PublishStats() {
	for _, x := range *e.xsks.Load() {
		x.publish(0, true)
	}
}
