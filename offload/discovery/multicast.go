package discovery

import "net/netip"

// Multicast and broadcast delivery follows __udp4_lib_mcast_deliver and
// __udp6_lib_mcast_deliver: every socket whose binding matches (port equal,
// bound to the wildcard or to the group, not connected elsewhere, IPv4 to
// AF_INET6 sockets without V6Only) receives a copy if its own memberships
// allow it (ip_mc_sf_allow, inet6_mc_check): a socket that joined the group
// receives what one of its joins admits (any source, or the one Source of a
// source-specific join); a socket that did not join it receives it when
// IP_MULTICAST_ALL is on (the default) and some socket of the namespace
// joined the group for this source. The limited broadcast 255.255.255.255
// goes to every socket whose binding matches.

// mcSocket gathers the entries of one receiving socket.
type mcSocket struct {
	e       Entry
	member  bool // joined the group
	allowed bool // one of its joins admits the source
	noAll   bool // IP_MULTICAST_ALL off
	hasJoin bool // e is a membership entry for the group
}

func (d *Dir) lookupMulticast(dst, src netip.AddrPort, out []Entry) []Entry {
	daddr, saddr := dst.Addr(), src.Addr()
	bcast := !daddr.IsMulticast()
	hostJoined := false
	var buf [16]mcSocket
	socks := buf[:0]
	c := liveCache{d: d}
	// Entries bound to the port, and memberships of the group on any port
	// (they tell whether the namespace joined it).
	var gw [2]uint64
	gkind := putAddr(gw[:], 0, daddr)
	d.scan(filter{port: dst.Port(), group: true, gkind: gkind, g0: gw[0], g1: gw[1]}, func(slot int, w *[entryWords]uint64) bool {
		r, ok := decode(w)
		if !ok {
			return true
		}
		isJoin := r.Group.IsValid() && r.Group == daddr
		portMatch := r.Local.Port() == dst.Port()
		if !isJoin && !portMatch {
			return true
		}
		if !c.alive(r.PID, r.start) {
			d.removeDead(slot, w)
			return true
		}
		admits := isJoin && (!r.Source.IsValid() || r.Source == saddr)
		if admits {
			hostJoined = true
		}
		if !portMatch {
			return true
		}
		exact, wild := localMatch(&r.Entry, daddr)
		if !exact && !wild || peerScore(&r.Entry, saddr, src.Port(), daddr.Is4()) < 0 {
			return true
		}
		k := -1
		for i := range socks {
			if socks[i].e.PID == r.PID && socks[i].e.Inbox == r.Inbox {
				k = i
				break
			}
		}
		if k < 0 {
			socks = append(socks, mcSocket{e: r.Entry})
			k = len(socks) - 1
		}
		s := &socks[k]
		s.noAll = s.noAll || r.NoMulticastAll
		if !s.hasJoin && !r.Group.IsValid() {
			s.e = r.Entry // a socket without a join of the group: its binding
		}
		if isJoin {
			s.member = true
			if admits {
				s.allowed = true
				if !s.hasJoin {
					s.e, s.hasJoin = r.Entry, true
				}
			}
		}
		return true
	})
	for i := range socks {
		s := &socks[i]
		if bcast || s.member && s.allowed || !s.member && !s.noAll && hostJoined {
			out = append(out, s.e)
		}
	}
	return out
}

// LookupMembers returns the goxio sockets that joined the multicast group
// dst.Addr() (on dst's port, with a join that admits src) and would get a
// datagram from src to dst from the kernel: the subset of Lookup that a
// multicast sender serves through rings. Sockets that would get the datagram
// only through IP_MULTICAST_ALL (bound to the port without a join) are left
// to the kernel's loopback copy. Nothing for a destination that is not
// multicast.
func (d *Dir) LookupMembers(dst, src netip.AddrPort, buf []Entry) []Entry {
	out := buf[:0]
	if d == nil || d.closed.Load() || dst.Port() == 0 {
		return out
	}
	daddr := dst.Addr().WithZone("").Unmap()
	if !daddr.IsMulticast() {
		return out
	}
	dst = netip.AddrPortFrom(daddr, dst.Port())
	src = netip.AddrPortFrom(src.Addr().WithZone("").Unmap(), src.Port())
	all := d.lookupMulticast(dst, src, out)
	n := 0
	for _, e := range all {
		if e.Group == daddr {
			all[n] = e
			n++
		}
	}
	return all[:n]
}

// MulticastSender reports whether a live goxio socket of this directory bound
// to src (its address or the wildcard, and its port) sends multicast through
// rings: a member that receives a multicast datagram from src through the
// kernel got the same datagram through a ring and drops the kernel's copy.
func (d *Dir) MulticastSender(src netip.AddrPort) bool {
	if d == nil || d.closed.Load() || src.Port() == 0 {
		return false
	}
	saddr := src.Addr().WithZone("").Unmap()
	found := false
	c := liveCache{d: d}
	d.scan(filter{port: src.Port()}, func(slot int, w *[entryWords]uint64) bool {
		if (w[eOwner]>>32)&fMulticastSender == 0 {
			return true
		}
		r, ok := decode(w)
		if !ok || r.Group.IsValid() || r.Local.Port() != src.Port() {
			return true
		}
		la := r.Local.Addr().Unmap()
		if !la.IsUnspecified() && la != saddr {
			return true
		}
		if !c.alive(r.PID, r.start) {
			d.removeDead(slot, w)
			return true
		}
		found = true
		return false
	})
	return found
}
