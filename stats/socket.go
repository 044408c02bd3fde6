package stats

import (
	"github.com/goxio/goxio/internal/seqlock"

	"net/netip"
	"sync/atomic"
	"time"
)

// Socket is the writer's handle on one socket slot. Counting methods are one
// or two atomic adds; metadata setters take the Writer's mutex and the
// slot's seqlock. All methods do nothing on a nil *Socket (no slot), and
// after Writer.CloseSocket they count into a private scratch area.
type Socket struct {
	w      *Writer
	idx    int
	fd     int
	slot   atomic.Pointer[[sockWords]uint64]
	groups []int // multicast table entries joined (under w.mu)
}

// SocketInfo is the static description of a socket.
type SocketInfo struct {
	Family   int    // AF_INET, AF_INET6
	Type     int    // SOCK_STREAM, SOCK_DGRAM (without SOCK_NONBLOCK/SOCK_CLOEXEC)
	Protocol int    // IPPROTO_TCP, IPPROTO_UDP, or 0
	Inode    uint64 // kernel inode of the socket (fstat st_ino)
	Blocking bool   // O_NONBLOCK is clear
}

// Open takes a free slot for fd and returns its handle, or nil when every
// slot is in use (counted as GlobalSlotsExhausted) or the writer is closed.
// The slot starts with zero counters, transport os and reason none.
func (w *Writer) Open(fd int) *Socket {
	if w == nil || w.closed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.freeSocks)
	if n == 0 {
		w.global.Add(GlobalSlotsExhausted, 1)
		return nil
	}
	idx := int(w.freeSocks[n-1])
	w.freeSocks = w.freeSocks[:n-1]
	p := w.sockSlot(idx)
	seqlock.Begin(&p[sSeq])
	atomic.AddUint64(&p[sGen], 1)
	for i := sFD; i < sockWords; i++ {
		atomic.StoreUint64(&p[i], 0)
	}
	atomic.StoreUint64(&p[sFD], uint64(int64(fd)))
	atomic.StoreUint64(&p[sOpened], uint64(time.Now().UnixNano()))
	atomic.StoreUint64(&p[sFlags], flagInUse)
	seqlock.End(&p[sSeq])
	if idx+1 > w.sockHigh {
		w.sockHigh = idx + 1
		atomic.StoreUint64(&w.hdr[hSockHigh], uint64(w.sockHigh))
	}
	g := w.global
	g.Add(GlobalSocketsOpened, 1)
	storeMax(&g.p[gSocketsMax], atomic.AddUint64(&g.p[gSocketsCurrent], 1))
	s := &Socket{w: w, idx: idx, fd: fd}
	s.slot.Store(p)
	return s
}

// CloseSocket appends the socket's final counters to the VMA_STATS_FILE
// descriptor (when set), leaves its multicast groups and frees the slot. The
// handle then counts into scratch memory; do not use it for a new socket.
func (w *Writer) CloseSocket(s *Socket) {
	if w == nil || s == nil || s.w != w {
		return
	}
	if s.slot.Load() == w.sockScratch {
		return
	}
	if fd := int(w.finalFD.Load()); fd >= 0 {
		if err := AppendFinal(fd, s.Snapshot()); err != nil {
			w.global.Add(GlobalFinalFileErrors, 1)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := s.slot.Load()
	if p == w.sockScratch {
		return
	}
	seqlock.Begin(&p[sSeq])
	atomic.StoreUint64(&p[sFlags], 0)
	for i := sMcMap; i < sMcMapEnd; i++ {
		atomic.StoreUint64(&p[i], 0)
	}
	seqlock.End(&p[sSeq])
	for _, e := range s.groups {
		w.mcRelease(e)
	}
	s.groups = nil
	s.slot.Store(w.sockScratch)
	w.freeSocks = append(w.freeSocks, int32(s.idx))
	atomic.AddUint64(&w.global.p[gSocketsCurrent], ^uint64(0))
}

// sockSlot returns socket slot i.
func (w *Writer) sockSlot(i int) *[sockWords]uint64 {
	off := w.geo.sockOff + i*sockWords
	return (*[sockWords]uint64)(w.mem[off : off+sockWords])
}

// FD returns the fd the slot was opened for (-1 for nil).
func (s *Socket) FD() int {
	if s == nil {
		return -1
	}
	return s.fd
}

// update runs f on the slot under the Writer's mutex and the slot's seqlock,
// unless the socket is closed.
func (s *Socket) update(f func(p *[sockWords]uint64)) {
	if s == nil {
		return
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	p := s.slot.Load()
	if p == s.w.sockScratch {
		return
	}
	seqlock.Begin(&p[sSeq])
	f(p)
	seqlock.End(&p[sSeq])
}

// SetInfo records family, type, protocol, inode and blocking mode.
func (s *Socket) SetInfo(info SocketInfo) {
	s.update(func(p *[sockWords]uint64) {
		k := atomic.LoadUint64(&p[sKind])
		k = k&^0xffff_ffff_ffff | uint64(uint16(info.Family)) | uint64(uint16(info.Type))<<16 |
			uint64(uint16(info.Protocol))<<32
		atomic.StoreUint64(&p[sKind], k)
		atomic.StoreUint64(&p[sInode], info.Inode)
		setFlag(p, flagBlocking, info.Blocking)
	})
}

// SetBlocking records the blocking mode (fcntl O_NONBLOCK, ioctl FIONBIO).
func (s *Socket) SetBlocking(blocking bool) {
	s.update(func(p *[sockWords]uint64) { setFlag(p, flagBlocking, blocking) })
}

func setFlag(p *[sockWords]uint64, flag uint64, on bool) {
	f := atomic.LoadUint64(&p[sFlags])
	if on {
		f |= flag
	} else {
		f &^= flag
	}
	atomic.StoreUint64(&p[sFlags], f)
}

// SetAddrs records the bound and peer addresses; an invalid (zero)
// AddrPort clears one.
func (s *Socket) SetAddrs(local, peer netip.AddrPort) {
	s.update(func(p *[sockWords]uint64) {
		storeAddrPort(p, local, sLocalHi, flagLocal, flagLocal4, 0)
		storeAddrPort(p, peer, sPeerHi, flagPeer, flagPeer4, 16)
	})
}

// SetLocal records the bound address (after bind, or the implicit bind of
// connect or sendto).
func (s *Socket) SetLocal(local netip.AddrPort) {
	s.update(func(p *[sockWords]uint64) { storeAddrPort(p, local, sLocalHi, flagLocal, flagLocal4, 0) })
}

// SetPeer records the connected peer address.
func (s *Socket) SetPeer(peer netip.AddrPort) {
	s.update(func(p *[sockWords]uint64) { storeAddrPort(p, peer, sPeerHi, flagPeer, flagPeer4, 16) })
}

func storeAddrPort(p *[sockWords]uint64, ap netip.AddrPort, at int, set, is4 uint64, portShift uint) {
	ports := atomic.LoadUint64(&p[sPorts]) &^ (0xffff << portShift)
	if !ap.IsValid() {
		atomic.StoreUint64(&p[at], 0)
		atomic.StoreUint64(&p[at+1], 0)
		atomic.StoreUint64(&p[sPorts], ports)
		setFlag(p, set|is4, false)
		return
	}
	hi, lo := addrWords(ap.Addr())
	atomic.StoreUint64(&p[at], hi)
	atomic.StoreUint64(&p[at+1], lo)
	atomic.StoreUint64(&p[sPorts], ports|uint64(ap.Port())<<portShift)
	setFlag(p, set, true)
	setFlag(p, is4, ap.Addr().Unmap().Is4() && !ap.Addr().Is6())
}

// SetTransport records the transport now carrying the socket and, when it is
// the kernel, why. Changes are counted in GlobalOffloaded/GlobalFallbacks.
func (s *Socket) SetTransport(t Transport, r Reason) {
	changed := false
	s.update(func(p *[sockWords]uint64) {
		k := atomic.LoadUint64(&p[sKind])
		old := Transport(k >> 56)
		oldR := Reason(atomic.LoadUint64(&p[sReason]))
		changed = old != t || oldR != r
		atomic.StoreUint64(&p[sKind], k&^(0xff<<56)|uint64(t)<<56)
		rw := atomic.LoadUint64(&p[sReason])
		atomic.StoreUint64(&p[sReason], rw&^0xff|uint64(r))
	})
	if !changed {
		return
	}
	switch {
	case t.Offloaded():
		s.w.global.Add(GlobalOffloaded, 1)
	case r != ReasonNone:
		s.w.global.Add(GlobalFallbacks, 1)
	}
}

// SetRule records the libvma.conf rule that decided the socket's transport:
// its line number (0 = none) and text (truncated to 63 bytes).
func (s *Socket) SetRule(line int, text string) {
	s.update(func(p *[sockWords]uint64) {
		rw := atomic.LoadUint64(&p[sReason])
		atomic.StoreUint64(&p[sReason], rw&0xffff_ffff|uint64(uint32(line))<<32)
		storeString(p[sRule:sRuleEnd], text)
	})
}

// SetState records the TCP state.
func (s *Socket) SetState(st TCPState) {
	s.update(func(p *[sockWords]uint64) {
		k := atomic.LoadUint64(&p[sKind])
		atomic.StoreUint64(&p[sKind], k&^(0xff<<48)|uint64(st)<<48)
	})
}

// SetRxLimit records the receive queue limit in bytes.
func (s *Socket) SetRxLimit(bytes int) {
	s.update(func(p *[sockWords]uint64) { atomic.StoreUint64(&p[sRxLimit], nonNeg(bytes)) })
}
