package capture

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// word is the capture word (the statistics segment's, once Init ran): 0 while no capture is
	// attached, the segment's generation while one is, with Detach set when the tool asks to end.
	word = new(uint64)
	// pid is the process's pid, in segment names.
	pid int
	// reportError, when set, logs an attach failure (once per generation).
	reportError = func(error) {}
)

// Init points the taps at the process's capture word (nil: captures are not possible, the taps
// cost their load of a private zero) and names the process. Call it once, before traffic flows.
func Init(w *uint64, processID int, onError func(error)) {
	if w != nil {
		word = w
	}
	pid = processID
	if onError != nil {
		reportError = onError
	}
}

// On reports whether a capture may be attached: one relaxed load. Every tap call site is
// guarded by it, so that a process nobody captures pays nothing more.
func On() bool { return atomic.LoadUint64(word) != 0 }

// DumpOS reports whether the attached capture also wants the kernel path of engine sockets
// (goxio capture --dump-os). Call it behind On.
func DumpOS() bool {
	s := current(atomic.LoadUint64(word))
	return s != nil && s.flags&FlagDumpOS != 0
}

// scratch holds a packet's headers and the bytes the programs read before they run.
type scratch [MaxSnapLen]byte

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// UDP taps one datagram of total bytes in bufs from src to dst on socket fd; peer is the pid of
// the process at the other end of a ring (0: unknown), so that the tool shows a packet once when
// it captures both ends.
func UDP(transport, dir uint8, fd, peer int, src, dst netip.AddrPort, bufs [][]byte, total int) {
	hdr, sa, da, ok := family(src.Addr(), dst.Addr(), true)
	if !ok || total < 0 || total > MaxSnapLen-hdr {
		return
	}
	s := begin()
	if s == nil {
		return
	}
	defer s.exit()
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	putUDP(sc[:], hdr, netip.AddrPortFrom(sa, src.Port()), netip.AddrPortFrom(da, dst.Port()), total, ipID(s))
	s.packet(sc, hdr, bufs, 0, total, transport, dir, fd, peer)
}

// TCP taps bytes [0, total) of bufs sent (Out) or received (In) on a connected socket fd from
// src to dst; seq is the sequence number of its first byte and ack the peer's next byte, as the
// direction's writer counts them. Writes larger than a segment become several.
func TCP(transport, dir uint8, fd, peer int, src, dst netip.AddrPort, seq, ack uint32, bufs [][]byte, total int) {
	hdr, sa, da, ok := family(src.Addr(), dst.Addr(), false)
	if !ok || total <= 0 {
		return
	}
	s := begin()
	if s == nil {
		return
	}
	defer s.exit()
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	src, dst = netip.AddrPortFrom(sa, src.Port()), netip.AddrPortFrom(da, dst.Port())
	for from := 0; from < total; from += MaxTCPPayload {
		n := min(total-from, MaxTCPPayload)
		putTCP(sc[:], hdr, src, dst, seq+uint32(from), ack, n, ipID(s))
		s.packet(sc, hdr, bufs, from, n, transport, dir, fd, peer)
	}
}

// Frame taps a whole Ethernet frame (AF_XDP).
func Frame(transport, dir uint8, fd, peer int, frame []byte) {
	if len(frame) > MaxSnapLen {
		return
	}
	s := begin()
	if s == nil {
		return
	}
	defer s.exit()
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	if dir == In {
		fixed := scratches.Get().(*scratch)
		defer scratches.Put(fixed)
		frame = wireSums(frame, fixed[:])
	}
	s.packet(sc, 0, [][]byte{frame}, 0, len(frame), transport, dir, fd, peer)
}

// begin returns the attached session, entered; nil when nothing is to be captured.
func begin() *session {
	s := current(atomic.LoadUint64(word))
	if s == nil || !s.checkAlive() || !s.enter() {
		return nil
	}
	return s
}

var ipIDs atomic.Uint32

// ipID numbers synthesized IPv4 headers.
func ipID(*session) uint16 { return uint16(ipIDs.Add(1)) }

// packet runs the programs on a packet whose first hdr bytes are in sc, followed by bytes
// [from, from+n) of bufs, and records it when it is to be recorded.
func (s *session) packet(sc *scratch, hdr int, bufs [][]byte, from, n int, transport, dir uint8, fd, peer int) {
	state := s.state()
	if state == Stopped {
		return
	}
	s.count(fd, HSeen, SSeen)
	total := hdr + n
	filled := hdr
	if reach := s.reach; hdr == 0 || reach < 0 || reach > hdr {
		want := total
		if hdr > 0 && reach >= 0 {
			want = min(total, reach)
		}
		filled += gather(sc[hdr:want], bufs, from)
	}
	pkt := sc[:total] // bytes beyond filled are never read: no program reaches them
	summed := false
	if hdr > 0 && (s.reach < 0 || s.reach > sumStart(hdr)) { // a program may read the checksum
		l4Checksum(sc[:], hdr, bufs, from, n)
		summed = true
	}
	var flags uint16
	if s.filter.match(pkt) {
		flags |= RecMatch
		s.count(fd, HMatched, SMatched)
	}
	if state == TriggerWaiting && s.trigger.matchSet(pkt) {
		flags |= RecTrigger
	}
	if state != TriggerWaiting || flags&RecTrigger != 0 {
		if s.stop.matchSet(pkt) {
			flags |= RecStop
		}
	}
	record := flags&(RecTrigger|RecStop) != 0
	if flags&RecMatch != 0 {
		record = record || state != TriggerWaiting || s.flags&FlagPreTrigger != 0
	}
	if !record {
		return
	}
	if hdr > 0 && !summed {
		l4Checksum(sc[:], hdr, bufs, from, n)
	}
	caplen := min(total, s.snap)
	if filled < caplen {
		gather(sc[filled:caplen], bufs, from+filled-hdr)
	}
	s.write(sc[:caplen], total, flags, transport, dir, fd, peer, time.Now().UnixNano())
}

// matchSet runs a program that may be absent; an absent one matches nothing.
func (p *program) matchSet(pkt []byte) bool { return p != nil && p.match(pkt) }

// write copies a packet into the trace ring, or counts it dropped when the ring is full.
func (s *session) write(data []byte, origlen int, flags uint16, transport, dir uint8, fd, peer int, now int64) {
	mu.Lock()
	n := uint64(RecordHeader+len(data)+7) &^ 7
	b := s.ring.reserve(n)
	if b != nil {
		putHeader(b, int(n), len(data), origlen, flags, transport, dir, now, fd, peer)
		copy(b[RecordHeader:], data)
		s.ring.publish(n)
	}
	mu.Unlock()
	if b == nil {
		s.count(fd, HDropped, SDropped)
	} else {
		s.count(fd, HCaptured, SCaptured)
	}
	switch {
	case flags&RecStop != 0:
		s.advance(Stopped)
	case flags&RecTrigger != 0:
		s.advance(TriggerFired)
	}
}
