package stats

import (
	"sync/atomic"

	"github.com/goxio/goxio/internal/seqlock"
)

// Pool is the writer's handle on one buffer pool slot. Methods do nothing on
// a nil *Pool.
type Pool struct {
	w    *Writer
	idx  int
	slot atomic.Pointer[[poolWords]uint64]
}

// poolSlot returns pool slot i.
func (w *Writer) poolSlot(i int) *[poolWords]uint64 {
	off := w.geo.poolOff + i*poolWords
	return (*[poolWords]uint64)(w.mem[off : off+poolWords])
}

// OpenPool takes a slot for a buffer pool named name (for example "rx" or
// "umem:eth0", truncated to 31 bytes). It returns nil when all 16 slots are
// in use (counted as GlobalPoolsExhausted).
func (w *Writer) OpenPool(name string) *Pool {
	if w == nil || w.closed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	idx := -1
	for i, used := range w.poolUsed {
		if !used {
			idx = i
			break
		}
	}
	if idx < 0 {
		w.global.Add(GlobalPoolsExhausted, 1)
		return nil
	}
	w.poolUsed[idx] = true
	w.nextID++
	p := w.poolSlot(idx)
	seqlock.Begin(&p[pSeq])
	atomic.AddUint64(&p[pGen], 1)
	for i := pFlags; i < poolWords; i++ {
		atomic.StoreUint64(&p[i], 0)
	}
	atomic.StoreUint64(&p[pID], w.nextID)
	storeString(p[pName:pNameEnd], name)
	atomic.StoreUint64(&p[pFlags], flagInUse)
	seqlock.End(&p[pSeq])
	pl := &Pool{w: w, idx: idx}
	pl.slot.Store(p)
	return pl
}

// ClosePool frees the pool's slot; the handle then writes into scratch
// memory.
func (w *Writer) ClosePool(pl *Pool) {
	if w == nil || pl == nil || pl.w != w {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := pl.slot.Load()
	if p == w.poolScratch {
		return
	}
	seqlock.Begin(&p[pSeq])
	atomic.StoreUint64(&p[pFlags], 0)
	seqlock.End(&p[pSeq])
	pl.slot.Store(w.poolScratch)
	w.poolUsed[pl.idx] = false
}

// SetSize publishes how many buffers the pool owns and how many are free;
// the lowest free count seen is tracked.
func (pl *Pool) SetSize(total, free int) {
	if pl == nil {
		return
	}
	p := pl.slot.Load()
	nf := nonNeg(free)
	atomic.StoreUint64(&p[pTotal], nonNeg(total))
	atomic.StoreUint64(&p[pFree], nf)
	// pMinFree holds the minimum plus one; 0 means no value yet.
	for {
		old := atomic.LoadUint64(&p[pMinFree])
		if (old != 0 && old <= nf+1) || atomic.CompareAndSwapUint64(&p[pMinFree], old, nf+1) {
			return
		}
	}
}

// CountNoBuffers counts an allocation that failed because the pool was
// empty.
func (pl *Pool) CountNoBuffers() {
	if pl == nil {
		return
	}
	atomic.AddUint64(&pl.slot.Load()[pNoBufs], 1)
}
