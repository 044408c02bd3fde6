package discovery

import "sync/atomic"

// portsBits is the size of the ports summary, in bits: ports are folded onto it (port mod
// portsBits), so a bit set stands for every port that folds onto it.
const portsBits = 1024

// portsSummary says, for one generation of the table, which ports (folded) UDP entries have:
// bindings and group memberships, live owners or not.
type portsSummary struct {
	gen  uint64
	bits [portsBits / 64]uint64
}

// UDPPortFree reports whether no UDP entry of the table (a binding or a group membership, of a
// live process or not) has port. A true answer holds for every destination with that port while
// Gen stays the value it had before the call: no ring, only the kernel, delivers a datagram to
// such a destination, and a sender skips Lookup (a scan of the table, about 1 us on the 2-CPU test
// machine) for it; a server that answers a new client each time (a socket per request) pays the
// scan once per change of the table instead of once per datagram. False may be wrong (ports that
// fold onto one bit): the caller then looks up. One scan of the table per generation, then one
// atomic load and a bit test.
func (d *Dir) UDPPortFree(port uint16) bool {
	if d == nil || d.closed.Load() {
		return false
	}
	g := d.Gen()
	s := d.ports.Load()
	if s == nil || s.gen != g {
		s = d.summarize(g)
	}
	return s.bits[port%portsBits/64]&(1<<(port%64)) == 0
}

// summarize scans the table for the ports of its UDP entries and keeps the summary as the one of
// generation g, read before the scan: an entry that a scan misses because it is being written
// is followed by a change of the generation (Gen changes after every change is visible), so the
// next call summarizes again.
func (d *Dir) summarize(g uint64) *portsSummary {
	s := &portsSummary{gen: g}
	for i, hi := 0, d.high(); i < hi; i++ {
		w := d.slot(i)
		owner := atomic.LoadUint64(&w[eOwner])
		if uint32(owner) == 0 || owner>>32&fStream != 0 {
			continue
		}
		// A torn read of an entry being rewritten sets a bit of a port not there: a lookup
		// more, never a missed receiver (the rewrite changes the generation).
		p := metaPort(atomic.LoadUint64(&w[eMeta]))
		s.bits[p%portsBits/64] |= 1 << (p % 64)
	}
	d.ports.Store(s)
	return s
}
