package stats

import (
	"github.com/goxio/goxio/internal/seqlock"

	"net/netip"
	"slices"
	"sync/atomic"
)

// Multicast membership: a process-wide table of the groups joined (one entry
// per group, reference counted) and, in each socket slot, a bitmap of the
// table entries the socket joined. A change bumps the table's seqlock (header
// word hMcSeq) around the socket slot's seqlock, so a reader that saw the
// same even table sequence before and after its scan maps bits to the right
// groups.

// mcEntry returns multicast table entry i.
func (w *Writer) mcEntry(i int) []uint64 {
	off := w.geo.mcOff + i*mcWords
	return w.mem[off : off+mcWords]
}

// JoinGroup records that the socket joined group g. It returns false when
// the process-wide table (512 groups) is full (counted as
// GlobalGroupsExhausted).
func (s *Socket) JoinGroup(g netip.Addr) bool {
	if s == nil || !g.IsValid() {
		return false
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p := s.slot.Load()
	if p == w.sockScratch {
		return false
	}
	key := g.As16()
	e, ok := w.mcIndex[key]
	if ok && slices.Contains(s.groups, e) {
		return true
	}
	if !ok {
		e = -1
		for i := range mcEntries {
			if atomic.LoadUint64(&w.mcEntry(i)[mcFlags])&flagInUse == 0 {
				e = i
				break
			}
		}
		if e < 0 {
			w.global.Add(GlobalGroupsExhausted, 1)
			return false
		}
	}
	seqlock.Begin(&w.hdr[hMcSeq])
	ent := w.mcEntry(e)
	if !ok {
		hi, lo := addrWords(g)
		atomic.StoreUint64(&ent[mcAddrHi], hi)
		atomic.StoreUint64(&ent[mcAddrLo], lo)
		f := uint64(flagInUse)
		if g.Unmap().Is4() && !g.Is6() {
			f |= flagLocal4
		}
		atomic.StoreUint64(&ent[mcFlags], f)
		w.mcIndex[key] = e
	}
	atomic.AddUint64(&ent[mcRefs], 1)
	seqlock.Begin(&p[sSeq])
	atomic.StoreUint64(&p[sMcMap+e/64], atomic.LoadUint64(&p[sMcMap+e/64])|1<<(e%64))
	seqlock.End(&p[sSeq])
	seqlock.End(&w.hdr[hMcSeq])
	s.groups = append(s.groups, e)
	return true
}

// LeaveGroup records that the socket left group g.
func (s *Socket) LeaveGroup(g netip.Addr) {
	if s == nil || !g.IsValid() {
		return
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	p := s.slot.Load()
	e, ok := w.mcIndex[g.As16()]
	if p == w.sockScratch || !ok {
		return
	}
	i := slices.Index(s.groups, e)
	if i < 0 {
		return
	}
	s.groups = slices.Delete(s.groups, i, i+1)
	seqlock.Begin(&w.hdr[hMcSeq])
	seqlock.Begin(&p[sSeq])
	atomic.StoreUint64(&p[sMcMap+e/64], atomic.LoadUint64(&p[sMcMap+e/64])&^(1<<(e%64)))
	seqlock.End(&p[sSeq])
	seqlock.End(&w.hdr[hMcSeq])
	w.mcRelease(e)
}

// mcRelease drops one reference to table entry e and frees it at zero.
// The caller holds w.mu and has cleared the socket's bit.
func (w *Writer) mcRelease(e int) {
	ent := w.mcEntry(e)
	if atomic.AddUint64(&ent[mcRefs], ^uint64(0)) != 0 {
		return
	}
	seqlock.Begin(&w.hdr[hMcSeq])
	delete(w.mcIndex, [16]byte(wordsAddr(atomic.LoadUint64(&ent[mcAddrHi]), atomic.LoadUint64(&ent[mcAddrLo]), false).As16()))
	atomic.StoreUint64(&ent[mcFlags], 0)
	atomic.StoreUint64(&ent[mcAddrHi], 0)
	atomic.StoreUint64(&ent[mcAddrLo], 0)
	seqlock.End(&w.hdr[hMcSeq])
}
