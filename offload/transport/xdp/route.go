package xdp

import (
	"errors"
	"net/netip"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// route is how the socket reaches one destination address: through the kernel (why says
// why), or through the TX ring of x with the headers in hdr. It is valid while the Env's
// generation stays gen and until expires.
type route struct {
	dst     netip.Addr
	oif     int        // the output interface asked for (a link-local destination's scope id), 0: any
	src     netip.Addr // the socket's bound address when the route was made
	gen     uint64
	expires int64
	kernel  bool
	why     KernelWhy
	x       *xsk
	hdr     packet.Header // MACs and addresses (ports, TOS, TTL, ID, flow label are set per datagram)
	mtu     int
	mcast   bool
	// hops is the hop limit an IPv6 datagram on this route gets when the socket did not set
	// IPV6_UNICAST_HOPS: the route's metric, else the output interface's hop_limit; allHops is
	// net.ipv6.conf.all.hop_limit (what getsockopt reads for an unset option), both read when the
	// route is made.
	hops, allHops int
}

// Route lifetimes: a route through a ring is asked again after routeTTL (the next hop may have
// moved); a kernel route for an unresolved neighbour after unresolvedTTL.
const routeTTL = 1e9 // ns

// routeTo returns how the socket reaches dst, from the cache when it is still valid. dst and
// the socket's bound address local (its port is set) are of the family the datagram goes out
// in: IPv4 (a v4-mapped address of an AF_INET6 socket unmapped) or IPv6; oif is the interface
// a link-local destination's scope id names (0: any).
func (u *UDP) routeTo(dst netip.Addr, local netip.AddrPort, oif int) *route {
	gen := u.env.gen.Load()
	now := nanotime()
	if r := u.route.Load(); r != nil && r.dst == dst && r.oif == oif && r.src == local.Addr() && r.gen == gen && now < r.expires {
		return r
	}
	r := u.env.lookup(dst, local.Addr(), oif, u.mcLoop.Load(), u.mcIf.Load(), u.txq, now)
	r.gen = gen
	u.route.Store(r)
	return r
}

// lookup asks the kernel for the route to dst and the neighbour cache for its next hop.
func (e *Env) lookup(dst, bound netip.Addr, oif int, mcLoop bool, mcIf uint32, txq int, now int64) *route {
	r := &route{dst: dst, oif: oif, src: bound, kernel: true, expires: now + routeTTL}
	if dst.IsLoopback() {
		r.why = WhyLocal
		return r
	}
	if dst.Is6() && dst.IsMulticast() {
		r.why = WhyIPv6Multicast
		return r
	}
	if dst.IsMulticast() && mcLoop {
		r.why = WhyMulticastLoop
		return r
	}
	var hint netip.Addr
	if !bound.IsUnspecified() {
		hint = bound
	} else if dst.IsMulticast() && mcIf != 0 {
		hint = netip.AddrFrom4([4]byte{byte(mcIf >> 24), byte(mcIf >> 16), byte(mcIf >> 8), byte(mcIf)})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		r.why = WhyNotOffloaded
		return r
	}
	nl, err := e.nlLocked()
	if err != nil {
		r.why, r.expires = WhyRouteError, now+int64(unresolvedTTL)
		return r
	}
	rt, err := nl.RouteGet(dst, hint, oif)
	if err != nil {
		r.why, r.expires = WhyRouteError, now+int64(unresolvedTTL)
		return r
	}
	switch rt.Type {
	case packet.RouteLocal:
		r.why = WhyLocal
		return r
	case packet.RouteBroadcast:
		r.why = WhyBroadcast
		return r
	case packet.RouteUnicast, packet.RouteMulticast:
	default:
		r.why = WhyRouteError
		return r
	}
	ifc := e.ifaceLocked(rt.Ifindex)
	if ifc.err != nil || len(ifc.queues) == 0 || !rt.Link.Ethernet() || !rt.Link.Up() || oif != 0 && rt.Ifindex != oif {
		r.why = WhyNotOffloaded
		return r
	}
	src := bound.WithZone("")
	if bound.IsUnspecified() {
		src = rt.Src
	}
	if !src.IsValid() || src.IsUnspecified() {
		r.why = WhyRouteError
		return r
	}
	var mac packet.MAC
	if rt.Type == packet.RouteMulticast {
		mac = packet.MulticastMAC(dst.As4())
		r.mcast = true
	} else {
		m, res, err := e.neigh.Lookup(nl, rt.Ifindex, rt.NextHop(), now)
		if err != nil && !errors.Is(err, packet.ErrNoNeighbour) || res == packet.Unresolved {
			r.why, r.expires = WhyUnresolved, now+int64(unresolvedTTL)
			return r
		}
		mac = m
	}
	r.kernel = false
	r.x = ifc.queues[txq%len(ifc.queues)]
	r.mtu = rt.MTU
	if dst.Is6() {
		r.hdr = packet.Header{DstMAC: mac, SrcMAC: rt.Link.MAC, IPv6: true, Src6: src.As16(), Dst6: dst.As16()}
		r.hops = rt.HopLimit
		if r.hops <= 0 {
			r.hops = ifc.hopLimit()
		}
		r.allHops = procInt("/proc/sys/net/ipv6/conf/all/hop_limit", defaultHopLimit)
		return r
	}
	r.hdr = packet.Header{DstMAC: mac, SrcMAC: rt.Link.MAC, Src: src.As4(), Dst: dst.As4(), DontFragment: !r.mcast}
	return r
}
