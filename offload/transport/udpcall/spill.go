package udpcall

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// spillNameLen is the name room of a spilled record (a sockaddr_in or sockaddr_in6).
const spillNameLen = spillRec - 8

// BuildSpill lays records (source sockaddr, payload) out in a new shared anonymous mapping, in
// the layout spill_unsafe.go describes; the mapping is never unmapped (both sides of a fork read
// it while the process lives).
func BuildSpill(recs [][2][]byte) ([]byte, error) {
	hdr := spillHdr + 4*len(recs)
	size := (hdr + 7) &^ 7
	for _, r := range recs {
		size += (spillRec + len(r[1]) + 7) &^ 7
	}
	mem, err := sysc.MapShared(size)
	if err != nil {
		return nil, fmt.Errorf("spill: mmap %d bytes: %w", size, err)
	}
	le := binary.LittleEndian
	le.PutUint32(mem[0:], spillMagic)
	le.PutUint32(mem[4:], uint32(len(recs)))
	le.PutUint32(mem[8:], 0)
	le.PutUint32(mem[12:], uint32(size))
	off := (hdr + 7) &^ 7
	for i, r := range recs {
		le.PutUint32(mem[spillHdr+4*i:], uint32(off))
		name := r[0][:min(len(r[0]), spillNameLen)]
		le.PutUint32(mem[off:], uint32(len(r[1])))
		le.PutUint32(mem[off+4:], uint32(len(name)))
		copy(mem[off+8:off+spillRec], name)
		copy(mem[off+spillRec:], r[1])
		off += (spillRec + len(r[1]) + 7) &^ 7
	}
	return mem, nil
}

// Spill is a datagram socket's side of a fork's hand-over (shared-memory and AF_XDP transports):
// the region its queued datagrams were spilled to, and whether a hand-over is in progress. From
// the moment the datagrams leave the socket's queue (Begin) until the region that holds them is
// set (Set) or the socket went back to the kernel without one (End), a receive that finds the
// queue empty waits for it (Take) instead of going on without them: the datagram a thread sent
// to itself just before another thread forked must not seem absent for a while (a receive with a
// timeout then failed with EINTR on the next signal, where the kernel returns the datagram).
type Spill struct {
	region  atomic.Pointer[[]byte]
	handing atomic.Bool
}

// Begin marks a hand-over started (before the queue is emptied).
func (s *Spill) Begin() { s.handing.Store(true) }

// Set stores the region and ends the hand-over.
func (s *Spill) Set(region []byte) {
	s.region.Store(&region)
	s.handing.Store(false)
}

// End ends a hand-over that made no region (the socket went back to the kernel).
func (s *Spill) End() { s.handing.Store(false) }

// Left reports whether the region still holds a datagram.
func (s *Spill) Left() bool {
	p := s.region.Load()
	return p != nil && SpillLeft(*p)
}

// Take serves the receive rc from the region (FromSpill), once any hand-over in progress is over:
// the forking thread builds the region at once, so the wait is as short as an mmap. false: no
// datagram is left.
func (s *Spill) Take(rc *Rx) (int, bool) {
	for s.handing.Load() {
		runtime.Gosched()
	}
	p := s.region.Load()
	if p == nil {
		return 0, false
	}
	return FromSpill(*p, rc)
}
