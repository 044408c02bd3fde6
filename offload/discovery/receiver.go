package discovery

import "net/netip"

// Receiver reports whether a UDP socket of a goxio process of this namespace is bound to dst (its
// address or the wildcard, and its port), whatever its peer and whether its owner still lives.
// A false answer holds for every sender while Gen stays the value read before the call: the
// kernel, and no ring, delivers any datagram to dst (the cache of such destinations the sending
// trampoline keeps, shim/preload/ksend.c, relies on it). Unicast destinations only: a multicast or
// broadcast destination answers true. Memory reads only; no scan for a port no entry has
// (UDPPortFree).
func (d *Dir) Receiver(dst netip.AddrPort) bool {
	daddr := dst.Addr().WithZone("").Unmap()
	if !daddr.IsValid() || daddr.IsMulticast() || daddr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	if d == nil || d.closed.Load() || d.UDPPortFree(dst.Port()) {
		return false
	}
	found := false
	d.scan(filter{port: dst.Port()}, func(_ int, w *[entryWords]uint64) bool {
		r, ok := decode(w)
		if !ok {
			found = true // unreadable now: assume the worst
			return false
		}
		exact, wild := localMatch(&r.Entry, daddr)
		found = exact || wild
		return !found
	})
	return found
}

// GenWord returns the generation counter's word in the mapped segment (see Gen), for a reader
// that watches it without a call (the sending trampoline's cache). It stays valid until Close;
// nil for a closed or nil Dir.
func (d *Dir) GenWord() *uint64 {
	if d == nil || d.closed.Load() {
		return nil
	}
	return &d.mem[hGen]
}
