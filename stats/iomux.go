package stats

import (
	"sync/atomic"

	"github.com/goxio/goxio/internal/seqlock"
)

// Iomux is the writer's handle on one iomux block: select, poll, or one
// epoll fd. Methods do nothing on a nil *Iomux.
type Iomux struct {
	w    *Writer
	idx  int
	slot atomic.Pointer[[iomuxWords]uint64]
}

// iomuxSlot returns iomux slot i (0 select, 1 poll, 2.. epoll).
func (w *Writer) iomuxSlot(i int) *[iomuxWords]uint64 {
	off := w.geo.iomuxOff + i*iomuxWords
	return (*[iomuxWords]uint64)(w.mem[off : off+iomuxWords])
}

// initIomux opens iomux slot i for kind (caller serializes).
func (w *Writer) initIomux(i int, kind IomuxKind, epfd int) *Iomux {
	p := w.iomuxSlot(i)
	seqlock.Begin(&p[mSeq])
	atomic.AddUint64(&p[mGen], 1)
	for j := mFlags; j < iomuxWords; j++ {
		atomic.StoreUint64(&p[j], 0)
	}
	atomic.StoreUint64(&p[mEpfd], uint64(int64(epfd)))
	atomic.StoreUint64(&p[mFlags], flagInUse|uint64(kind)<<8)
	seqlock.End(&p[mSeq])
	m := &Iomux{w: w, idx: i}
	m.slot.Store(p)
	return m
}

// Select returns the block counting select and pselect calls.
func (w *Writer) Select() *Iomux {
	if w == nil {
		return nil
	}
	return w.selectMux
}

// Poll returns the block counting poll and ppoll calls.
func (w *Writer) Poll() *Iomux {
	if w == nil {
		return nil
	}
	return w.pollMux
}

// OpenEpoll takes a block for epoll fd epfd. It returns nil when all 64
// epoll slots are in use (counted as GlobalEpollsExhausted).
func (w *Writer) OpenEpoll(epfd int) *Iomux {
	if w == nil || w.closed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, used := range w.epollUsed {
		if !used {
			w.epollUsed[i] = true
			return w.initIomux(2+i, IomuxEpoll, epfd)
		}
	}
	w.global.Add(GlobalEpollsExhausted, 1)
	return nil
}

// CloseEpoll frees an epoll block; the handle then counts into scratch
// memory. The select and poll blocks cannot be closed.
func (w *Writer) CloseEpoll(m *Iomux) {
	if w == nil || m == nil || m.w != w || m.idx < 2 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := m.slot.Load()
	if p == w.iomuxScratch {
		return
	}
	seqlock.Begin(&p[mSeq])
	atomic.StoreUint64(&p[mFlags], 0)
	seqlock.End(&p[mSeq])
	m.slot.Store(w.iomuxScratch)
	w.epollUsed[m.idx-2] = false
}

// Add adds n to iomux counter c.
func (m *Iomux) Add(c IomuxCounter, n uint64) {
	if m == nil || c >= numIomuxCounters {
		return
	}
	atomic.AddUint64(&m.slot.Load()[mCounters+int(c)], n)
}

// CountCall counts one call.
func (m *Iomux) CountCall() { m.Add(IomuxCalls, 1) }

// CountPoll counts a call that found ready fds while busy-polling (hit) or
// polled in vain and went to sleep (miss).
func (m *Iomux) CountPoll(hit bool) {
	if hit {
		m.Add(IomuxPollHit, 1)
	} else {
		m.Add(IomuxPollMiss, 1)
	}
}

// CountTimeout counts a call that returned 0.
func (m *Iomux) CountTimeout() { m.Add(IomuxTimeouts, 1) }

// CountError counts a call that returned -1.
func (m *Iomux) CountError() { m.Add(IomuxErrors, 1) }

// CountReady adds the ready fds one call returned: kernel fds and offloaded
// fds.
func (m *Iomux) CountReady(osFDs, offloadFDs int) {
	if m == nil {
		return
	}
	p := m.slot.Load()
	if osFDs > 0 {
		atomic.AddUint64(&p[mCounters+int(IomuxOSReady)], uint64(osFDs))
	}
	if offloadFDs > 0 {
		atomic.AddUint64(&p[mCounters+int(IomuxOffloadReady)], uint64(offloadFDs))
	}
}

// SetPollingCPU publishes the share (0-100) of recent call time spent
// busy-polling.
func (m *Iomux) SetPollingCPU(percent int) {
	if m == nil {
		return
	}
	atomic.StoreUint64(&m.slot.Load()[mPollingCPU], min(nonNeg(percent), 100))
}
