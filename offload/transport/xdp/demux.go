package xdp

import (
	"net/netip"

	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// maxFanout bounds how many sockets of this process one multicast frame is delivered to.
const maxFanout = 16

// pollRx takes the frames waiting on every RX ring and hands them to the sockets they are for.
// It returns how many frames it took. Every ring's receive side is locked for the whole batch,
// so a thread that polled a ring knows that every frame taken from it before is in a queue.
func (e *Env) pollRx() int {
	total := 0
	for _, x := range *e.xsks.Load() {
		x.rxmu.Lock()
		total += e.pollOneLocked(x)
		x.rxmu.Unlock()
	}
	return total
}

// pollOneLocked receives one batch from x; x.rxmu is held.
func (e *Env) pollOneLocked(x *xsk) int {
	n := x.s.Receive(x.batch)
	if n == 0 {
		return 0
	}
	if x.rs.st != nil {
		bytes := 0
		for _, f := range x.batch[:n] {
			bytes += len(f.Data)
		}
		x.countRx(n, bytes)
	}
	t := e.demux.Load()
	var drop [rxBatch]xdp.Frame
	nd := 0
	for i := range x.batch[:n] {
		f := x.batch[i]
		x.batch[i] = xdp.Frame{}
		if !e.deliverLocked(x, t, f) {
			drop[nd] = f
			nd++
		}
	}
	if nd > 0 {
		x.s.Release(drop[:nd])
	}
	return n
}

// deliverLocked puts frame f in the queue of every socket it is for; false when none took it
// (the caller gives it back to the fill ring). x.rxmu is held.
func (e *Env) deliverLocked(x *xsk, t *demuxTable, f xdp.Frame) bool {
	var h packet.Header
	// Checksums are checked; a sender of this host (veth) may leave the UDP one to offload.
	payload, err := packet.Parse(f.Data, &h, packet.VerifyLocal)
	if err != nil {
		e.rxBad.Add(1)
		return false
	}
	var dst, src netip.AddrPort
	scope := uint32(0)
	if h.IPv6 {
		dst = netip.AddrPortFrom(netip.AddrFrom16(h.Dst6), h.DstPort)
		src = netip.AddrPortFrom(netip.AddrFrom16(h.Src6), h.SrcPort)
		if needsScope(src.Addr()) {
			scope = uint32(x.ifc.index)
		}
	} else {
		dst = netip.AddrPortFrom(netip.AddrFrom4(h.Dst), h.DstPort)
		src = netip.AddrPortFrom(netip.AddrFrom4(h.Src), h.SrcPort)
	}
	var to [maxFanout]*UDP
	k := recipients(t.byPort[h.DstPort], dst, src, to[:0])
	if len(k) == 0 || len(x.free) == 0 {
		e.rxUnmatched.Add(1)
		return false
	}
	b := &x.bufs[x.free[len(x.free)-1]]
	x.free = x.free[:len(x.free)-1]
	b.f, b.payload, b.src, b.scope = f, payload, src, scope
	b.refs.Store(int32(len(k)))
	for _, u := range k {
		if u.q.push(b) {
			continue
		}
		u.rxDrops.Add(1)
		if u.OnRxDrop != nil {
			u.OnRxDrop(len(payload))
		}
		if b.refs.Add(-1) == 0 {
			b.f, b.payload = xdp.Frame{}, nil
			x.free = append(x.free, b.idx)
			return false
		}
	}
	return true
}

// recipients chooses the sockets the kernel would deliver a datagram from src to dst to:
// for unicast the best match (a connected socket before an unconnected one, an exact local
// address before the wildcard; a connected socket only takes datagrams from its peer); for a
// multicast group every member.
func recipients(ms []member, dst, src netip.AddrPort, out []*UDP) []*UDP {
	if dst.Addr().IsMulticast() {
		for _, m := range ms {
			if !accepts(m.b, dst.Addr(), src) {
				continue
			}
			if !m.b.member(dst.Addr(), src.Addr()) {
				continue
			}
			if len(out) < cap(out) {
				out = append(out, m.u)
			}
		}
		return out
	}
	best, score := (*UDP)(nil), -1
	for _, m := range ms {
		if !accepts(m.b, dst.Addr(), src) {
			continue
		}
		// The kernel's order: a connected socket, then a specific local address, then (for an
		// IPv4 datagram) an AF_INET socket before an AF_INET6 one.
		s := 0
		if !m.b.v6 {
			s++
		}
		if m.b.specific() {
			s += 2
		}
		if m.b.peer.IsValid() {
			s += 4
		}
		if s > score {
			best, score = m.u, s
		}
	}
	if best != nil {
		out = append(out, best)
	}
	return out
}

// accepts applies the local address (and family) and the peer of a binding.
func accepts(b *binding, dst netip.Addr, src netip.AddrPort) bool {
	return b.takes(dst) && b.from(src)
}

// needsScope reports whether the kernel gives a source address a scope id (the receiving
// interface) in sockaddr_in6: link-local unicast, and link- or interface-local multicast.
func needsScope(a netip.Addr) bool {
	return a.Is6() && (a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast())
}

// member reports whether the socket receives group's datagrams from source: its own membership
// (and source filter), or any membership on the host with IP_MULTICAST_ALL on (the frame was
// steered, so some socket joined the group).
func (b *binding) member(group, source netip.Addr) bool {
	own := false
	for _, j := range b.joins {
		if j.group != group {
			continue
		}
		own = true
		if !j.source.IsValid() || j.source == source {
			return true
		}
	}
	return !own && b.mcAll
}
