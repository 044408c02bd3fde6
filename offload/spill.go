package offload

import (
	"encoding/binary"
	"fmt"

	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// A fork shares every socket with the child, which never enters Go and so cannot read rings:
// before the fork the engine sends its shared-memory sockets back to the kernel for good, and
// what their rings held goes into a spill region both processes read (shim/spill.c, the layout
// is written there), so a datagram that was waiting when the program forked is received once, by
// whichever process asks first, as from the kernel socket they share.

// SpillTable is the C-side table that learns the spill region of an fd.
type SpillTable interface {
	SetSpill(fd int, region uintptr)
}

// spillMagic is "SPLL" as a little-endian word.
const spillMagic = 0x4c4c5053

// spillNameLen is the name room of a spilled record (a sockaddr_in).
const spillNameLen = 16

// BeforeFork hands every ring socket back to the kernel and spills its ring datagrams
// (called in the parent just before fork or daemon).
func (e *Engine) BeforeFork(t SpillTable) {
	fdsOf := map[*Socket][]int{}
	var order []*Socket
	e.reg.mu.Lock()
	e.reg.each(func(fd int, s *Socket) {
		if _, ok := fdsOf[s]; !ok {
			order = append(order, s)
		}
		fdsOf[s] = append(fdsOf[s], fd)
	})
	e.reg.mu.Unlock()
	for _, s := range order {
		e.sendBack(s, fdsOf[s], t, transport.ReasonForkedChild, "fork: the child shares the socket")
	}
	e.xdpBeforeFork()
}

// sendBack has the ring socket s, whose fds are fds, stop using its rings for good (a connection
// goes back to the kernel connection or never pairs, a datagram socket hands its datagrams over
// and goes back to the kernel with the reason r): what its rings held goes into a spill region
// its fds read first (t learns it).
func (e *Engine) sendBack(s *Socket, fds []int, t SpillTable, r transport.Reason, why string) {
	u := s.rings()
	if u == nil || len(fds) == 0 {
		return
	}
	recs, back := u.Fork(fds[0])
	if !back {
		return
	}
	e.giveUp(s, fds[0], r, why)
	if len(recs) == 0 {
		return
	}
	region, err := buildSpill(recs)
	if err != nil {
		e.log.Warn("datagrams waiting in rings are lost", zap.Int("fd", fds[0]),
			zap.Int("datagrams", len(recs)), zap.Error(err))
		return
	}
	u.SetSpill(region)
	for _, fd := range fds {
		t.SetSpill(fd, regionAddr(region))
	}
	e.log.Debug("ring datagrams spilled", zap.Int("fd", fds[0]), zap.Int("datagrams", len(recs)))
}

// buildSpill lays records (source sockaddr, payload) out in a shared anonymous mapping.
func buildSpill(recs [][2][]byte) ([]byte, error) {
	hdr := 16 + 4*len(recs)
	size := (hdr + 7) &^ 7
	for _, r := range recs {
		size += (24 + len(r[1]) + 7) &^ 7
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
		le.PutUint32(mem[16+4*i:], uint32(off))
		name := r[0][:min(len(r[0]), spillNameLen)]
		le.PutUint32(mem[off:], uint32(len(r[1])))
		le.PutUint32(mem[off+4:], uint32(len(name)))
		copy(mem[off+8:off+24], name)
		copy(mem[off+24:], r[1])
		off += (24 + len(r[1]) + 7) &^ 7
	}
	return mem, nil
}
