package stats

import (
	"sync/atomic"

	"github.com/goxio/goxio/internal/seqlock"
)

// Ring is the writer's handle on one ring slot: a shared-memory ring pair to
// a peer, or an AF_XDP queue. Methods do nothing on a nil *Ring.
type Ring struct {
	w    *Writer
	idx  int
	slot atomic.Pointer[[ringWords]uint64]
}

// ringSlot returns ring slot i.
func (w *Writer) ringSlot(i int) *[ringWords]uint64 {
	off := w.geo.ringOff + i*ringWords
	return (*[ringWords]uint64)(w.mem[off : off+ringWords])
}

// OpenRing takes a ring slot for a ring of transport t named name (for
// example "shm:1234->5678" or "xdp:eth0/0", truncated to 47 bytes). It
// returns nil when all 16 slots are in use (counted as GlobalRingsExhausted).
func (w *Writer) OpenRing(t Transport, name string) *Ring {
	if w == nil || w.closed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	idx := -1
	for i, used := range w.ringUsed {
		if !used {
			idx = i
			break
		}
	}
	if idx < 0 {
		w.global.Add(GlobalRingsExhausted, 1)
		return nil
	}
	w.ringUsed[idx] = true
	w.nextID++
	p := w.ringSlot(idx)
	seqlock.Begin(&p[rSeq])
	atomic.AddUint64(&p[rGen], 1)
	for i := rFlags; i < ringWords; i++ {
		atomic.StoreUint64(&p[i], 0)
	}
	atomic.StoreUint64(&p[rID], w.nextID)
	storeString(p[rName:rNameEnd], name)
	atomic.StoreUint64(&p[rFlags], flagInUse|uint64(t)<<8)
	seqlock.End(&p[rSeq])
	r := &Ring{w: w, idx: idx}
	r.slot.Store(p)
	return r
}

// CloseRing frees the ring's slot; the handle then counts into scratch
// memory.
func (w *Writer) CloseRing(r *Ring) {
	if w == nil || r == nil || r.w != w {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := r.slot.Load()
	if p == w.ringScratch {
		return
	}
	seqlock.Begin(&p[rSeq])
	atomic.StoreUint64(&p[rFlags], 0)
	seqlock.End(&p[rSeq])
	r.slot.Store(w.ringScratch)
	w.ringUsed[r.idx] = false
}

// Add adds n to ring counter c.
func (r *Ring) Add(c RingCounter, n uint64) {
	if r == nil || c >= numRingCounters {
		return
	}
	atomic.AddUint64(&r.slot.Load()[ringWord(c)], n)
}

// ringWord is the slot word of ring counter c: the first ones from rCounters, the AF_XDP
// kernel statistics from rXDP.
func ringWord(c RingCounter) int {
	if c < RingXDPRxDropped {
		return rCounters + int(c)
	}
	return rXDP + int(c-RingXDPRxDropped)
}

// CountRx counts a packet of the given size taken from the receive ring.
func (r *Ring) CountRx(bytes int) { r.CountRxN(1, bytes) }

// CountRxN counts n packets received at once, bytes in all.
func (r *Ring) CountRxN(n, bytes int) {
	if r == nil {
		return
	}
	p := r.slot.Load()
	atomic.AddUint64(&p[rCounters+int(RingRxPackets)], uint64(n))
	atomic.AddUint64(&p[rCounters+int(RingRxBytes)], uint64(bytes))
}

// CountTx counts a packet of the given size put on the transmit ring.
func (r *Ring) CountTx(bytes int) {
	if r == nil {
		return
	}
	p := r.slot.Load()
	atomic.AddUint64(&p[rCounters+int(RingTxPackets)], 1)
	atomic.AddUint64(&p[rCounters+int(RingTxBytes)], uint64(bytes))
}

// CountRxDrop counts a received packet that was dropped.
func (r *Ring) CountRxDrop() { r.Add(RingRxDrops, 1) }

// CountTxDrop counts a packet that did not fit on the transmit ring.
func (r *Ring) CountTxDrop() { r.Add(RingTxDrops, 1) }

// CountWakeup counts the doorbell: sent=false when a consumer armed it
// before sleeping, sent=true when a producer issued the wake syscall.
func (r *Ring) CountWakeup(sent bool) {
	if sent {
		r.Add(RingWakeSent, 1)
	} else {
		r.Add(RingWakeRequests, 1)
	}
}

// CountRetransmit counts a TCP segment retransmitted through this ring.
func (r *Ring) CountRetransmit() { r.Add(RingRetransmits, 1) }

// SetQueue publishes the packets waiting in the receive and transmit rings.
func (r *Ring) SetQueue(rxPkts, txPkts int) {
	if r == nil {
		return
	}
	p := r.slot.Load()
	atomic.StoreUint64(&p[rRxQueue], nonNeg(rxPkts))
	atomic.StoreUint64(&p[rTxQueue], nonNeg(txPkts))
}

// TxWords returns the slot's tx packets and tx bytes words, for a writer outside Go that adds to
// them atomically (the preload library's own ring sends); nil on a nil *Ring. The words stay
// valid for the process's life (a closed segment is retired to private memory) but count into
// this ring only until CloseRing.
func (r *Ring) TxWords() *[2]uint64 {
	if r == nil {
		return nil
	}
	p := r.slot.Load()
	return (*[2]uint64)(p[rCounters+int(RingTxPackets) : rCounters+int(RingTxPackets)+2])
}

// WakeSentWord is TxWords for the wake-ups sent word.
func (r *Ring) WakeSentWord() *uint64 {
	if r == nil {
		return nil
	}
	return &r.slot.Load()[ringWord(RingWakeSent)]
}
